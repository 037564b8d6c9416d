"""Trace completion: recorded Claude Code sessions replayed over OTLP/HTTP into a real
``skillsight serve`` get their trajectory and activations rebuilt with no manual step — once the
session is quiet and its root span is in — and rebuilt again when late rows arrive.

Every scenario runs in its own project (API keys), so one server serves the module."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from skillsight.cli.views import print_activation
from skillsight.config import Settings
from skillsight.errors import ConfigError
from skillsight.ingest import otlp
from skillsight.rebuild.finalizer import ActivationsReady, Finalizer, is_complete
from skillsight.rebuild.session import Rebuilt, rebuild_session
from skillsight.runtime import Services, parse_shard
from skillsight.store import EmbeddedStore, ServerStore, SessionRebuild
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA
from tests.support.serve import RunningServer, running_server

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
TWO_SKILLS = CAPTURES / "scenarios" / "two_skills" / "claude_code"
QUIET_S = 1.0
PROJECTS = ("clean", "shuffled", "late", "late-logs", "rootless", "quiet", "empty")
KEYS = {project: f"key-{project}" for project in PROJECTS}
ADMIN_KEY = "key-ops"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = ",".join(f"{key}:{project}" for project, key in KEYS.items())
    env = {
        # /healthz shows the services' state to admin keys only
        "SKILLSIGHT_API_KEYS": f"{keys},{ADMIN_KEY}:ops:admin",
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": str(QUIET_S),
        "SKILLSIGHT_REBUILD_MAX_WAIT_S": "600",
    }
    with running_server(tmp_path_factory.mktemp("finalizer") / "data", env=env) as running:
        yield dataclasses.replace(running, headers={"x-skillsight-key": ADMIN_KEY})


# -- the recorded session, cut into export requests -------------------------------------------


def _load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((TWO_SKILLS / name).read_text())
    return document


def _items(document: dict[str, Any]) -> list[dict[str, Any]]:
    """One export request per span / log record, with its resource and scope."""
    traces = "resourceSpans" in document
    outer, middle, inner = (
        ("resourceSpans", "scopeSpans", "spans")
        if traces
        else ("resourceLogs", "scopeLogs", "logRecords")
    )
    requests = []
    for resource in document[outer]:
        for scope in resource[middle]:
            for item in scope[inner]:
                requests.append(
                    {
                        outer: [
                            {
                                **{k: v for k, v in resource.items() if k != middle},
                                middle: [
                                    {
                                        **{k: v for k, v in scope.items() if k != inner},
                                        inner: [item],
                                    }
                                ],
                            }
                        ]
                    }
                )
    return requests


def _send(server: RunningServer, project: str, requests: list[dict[str, Any]]) -> None:
    for request in requests:
        signal = "traces" if "resourceSpans" in request else "logs"
        response = httpx.post(
            f"{server.otlp_http}/v1/{signal}",
            content=json.dumps(request),
            headers={"content-type": "application/json", "x-skillsight-key": KEYS[project]},
            timeout=30,
        )
        assert response.status_code == 200, response.text


def _span_name(request: dict[str, Any]) -> str:
    return str(request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"])


def _session_id() -> str:
    for request in _items(_load("traces.json")):
        span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        for attribute in span["attributes"]:
            if attribute["key"] == "session.id":
                return str(attribute["value"]["stringValue"])
    raise AssertionError("the capture has no session.id")


SESSION = _session_id()


# -- reading what the service rebuilt ----------------------------------------------------------


def _get(server: RunningServer, project: str, path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        server.api + path, params=params, headers={"x-skillsight-key": KEYS[project]}, timeout=30
    )


def _rebuild_state(server: RunningServer) -> dict[str, Any]:
    state: dict[str, Any] = server.get("/healthz")["rebuild"]
    return state


def _wait_idle(server: RunningServer, rebuilt_before: int, timeout: float = 30.0) -> None:
    """Until every committed row has been seen and every session it touched rebuilt."""
    server.wait_written(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _rebuild_state(server)
        if state["idle"] and state["sessions_rebuilt"] > rebuilt_before:
            return
        time.sleep(0.05)
    raise AssertionError(f"the finalizer did not settle: {_rebuild_state(server)}")


def _activations(server: RunningServer, project: str) -> list[dict[str, Any]]:
    response = _get(server, project, "/api/v1/activations", session_id=SESSION)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    for activation in found:
        assert activation["project_id"] == project
    return found


def _comparable(activations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in a.items() if k not in ("project_id", "rebuilt_at")} for a in activations
    ]


def _trajectory(server: RunningServer, project: str) -> dict[str, Any]:
    response = _get(server, project, f"/api/v1/trajectories/{SESSION}")
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def _all_requests() -> list[dict[str, Any]]:
    return _items(_load("traces.json")) + _items(_load("logs.json"))


@pytest.fixture(scope="module")
def clean(server: RunningServer) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The session delivered once, in order: what every other delivery must end up as."""
    before = _rebuild_state(server)["sessions_rebuilt"]
    _send(server, "clean", _all_requests())
    _wait_idle(server, before)
    return _activations(server, "clean"), _trajectory(server, "clean")


def test_a_replayed_session_gets_its_activations_without_a_manual_step(
    clean: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    activations, trajectory = clean
    assert [
        (
            a["skill_name"],
            a["trigger"],
            a["session_id"],
            [(c["name"], c["arguments"]["command"], c["is_error"]) for c in a["tool_calls"]],
        )
        for a in activations
    ] == [
        (
            "unit-price",
            "skill_tool",
            SESSION,
            [
                (
                    "Bash",
                    "python3 .claude/skills/unit-price/scripts/unit_prices.py data/sales.csv",
                    False,
                )
            ],
        ),
        (
            "csv-summary",
            "skill_tool",
            SESSION,
            [
                (
                    "Bash",
                    "python3 .claude/skills/csv-summary/scripts/summarize_csv.py data/sales.csv",
                    False,
                )
            ],
        ),
    ]
    assert trajectory["schema_version"] == "ATIF-v1.7"
    assert trajectory["session_id"] == SESSION
    called = [c["function_name"] for s in trajectory["steps"] for c in s.get("tool_calls", [])]
    assert called == ["Skill", "Bash", "Skill", "Bash"]


def test_shuffled_and_duplicated_delivery_ends_as_clean_delivery(
    server: RunningServer, clean: tuple[list[dict[str, Any]], dict[str, Any]]
) -> None:
    requests = _all_requests() * 2
    random.Random(7).shuffle(requests)
    before = _rebuild_state(server)["sessions_rebuilt"]
    _send(server, "shuffled", requests)
    _wait_idle(server, before)
    assert _comparable(_activations(server, "shuffled")) == _comparable(clean[0])
    assert _trajectory(server, "shuffled") == clean[1]


def test_a_late_part_is_rebuilt_in_and_leaves_nothing_stale(
    server: RunningServer, clean: tuple[list[dict[str, Any]], dict[str, Any]]
) -> None:
    """Everything after the first skill's script arrives late: the first rebuild sees one
    activation, the rebuild after the late part sees both, exactly as clean delivery."""
    requests = _all_requests()
    cut = min(
        _start_ns(r)
        for r in requests
        if "resourceSpans" in r
        and _span_name(r) == "claude_code.tool"
        and "unit-price" in json.dumps(r)
    )
    # a model request made before the cut is logged with it (the finalizer waits for the
    # events of every request it has a span of)
    made = {_request_id(r) for r in requests if _start_ns(r) < cut and "resourceSpans" in r}
    early = [
        r
        for r in requests
        if _start_ns(r) < cut or (_request_id(r) in made - {""} and _is_response(r))
    ]
    late = [r for r in requests if r not in early]
    before = _rebuild_state(server)["sessions_rebuilt"]
    _send(server, "late", early)
    _wait_idle(server, before)
    assert [a["skill_name"] for a in _activations(server, "late")] == ["csv-summary"]
    before = _rebuild_state(server)["sessions_rebuilt"]
    _send(server, "late", late)
    _wait_idle(server, before)
    assert _comparable(_activations(server, "late")) == _comparable(clean[0])
    assert _trajectory(server, "late") == clean[1]


def _request_id(request: dict[str, Any]) -> str:
    if "resourceSpans" in request:
        item = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    else:
        item = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    for attribute in item["attributes"]:
        if attribute["key"] == "request_id":
            return str(attribute["value"]["stringValue"])
    return ""


def _is_response(request: dict[str, Any]) -> bool:
    """A log record of a model request's response (not of a tool call it asked for)."""
    if "resourceLogs" not in request:
        return False
    body = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["body"]
    return body.get("stringValue") in ("claude_code.api_request", "claude_code.assistant_response")


def _start_ns(request: dict[str, Any]) -> int:
    if "resourceSpans" in request:
        return int(request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"])
    return int(request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["timeUnixNano"])


def _send_held_back(server: RunningServer, project: str, requests: list[dict[str, Any]]) -> None:
    """Send a session that is not complete yet; wait until the finalizer holds it back.

    Sent as two requests, its log events before its spans: sent one item at a time, a pause of
    a quiet period between two items on a loaded machine could let the part sent so far (all the
    spans, no events yet: a session that exports no logs) be rebuilt as it stood."""
    logs = [r for r in requests if "resourceLogs" in r]
    spans = [r for r in requests if "resourceSpans" in r]
    _send(server, project, [_merged(logs, "resourceLogs"), _merged(spans, "resourceSpans")])
    server.wait_written()
    deadline = time.monotonic() + 30
    while _rebuild_state(server)["incomplete_sessions"] == 0:
        assert time.monotonic() < deadline, _rebuild_state(server)
        time.sleep(0.05)
    assert _get(server, project, f"/api/v1/trajectories/{SESSION}").status_code == 404


def _merged(requests: list[dict[str, Any]], outer: str) -> dict[str, Any]:
    """One export request holding the resources of all ``requests``."""
    return {outer: [resource for request in requests for resource in request[outer]]}


def test_a_session_waits_for_its_root_span(
    server: RunningServer, clean: tuple[list[dict[str, Any]], dict[str, Any]]
) -> None:
    """Spans whose parent has not arrived keep the session pending past the quiet period."""
    requests = _all_requests()
    root = [
        r for r in requests if "resourceSpans" in r and _span_name(r) == "claude_code.interaction"
    ]
    assert len(root) == 1
    _send_held_back(server, "rootless", [r for r in requests if r not in root])
    assert _get(server, "rootless", "/api/v1/activations").json() == []
    before = _rebuild_state(server)["sessions_rebuilt"]
    _send(server, "rootless", root)
    _wait_idle(server, before)
    assert _comparable(_activations(server, "rootless")) == _comparable(clean[0])
    assert _trajectory(server, "rootless") == clean[1]


def test_a_session_waits_for_the_log_events_of_its_model_requests(
    server: RunningServer, clean: tuple[list[dict[str, Any]], dict[str, Any]]
) -> None:
    """Claude Code exports logs apart from traces: with every span in (the root too) but the
    final answer's events late, the session is held, not rebuilt with an answer of no text."""
    requests = _all_requests()
    spans = [r for r in requests if "resourceSpans" in r]
    last = max((r for r in spans if _span_name(r) == "claude_code.llm_request"), key=_start_ns)
    held = [r for r in requests if _is_response(r) and _request_id(r) == _request_id(last)]
    assert held  # its api_request and assistant_response
    _send_held_back(server, "late-logs", [r for r in requests if r not in held])
    before = _rebuild_state(server)["sessions_rebuilt"]
    _send(server, "late-logs", held)
    _wait_idle(server, before)
    assert _comparable(_activations(server, "late-logs")) == _comparable(clean[0])
    assert _trajectory(server, "late-logs") == clean[1]


def test_a_session_is_rebuilt_a_quiet_period_after_its_last_row(
    server: RunningServer, clean: tuple[list[dict[str, Any]], dict[str, Any]]
) -> None:
    # the whole session in two requests: sent one span at a time on a busy machine, an early
    # part could fall quiet (and be rebuilt) before the rest is in
    _send(server, "quiet", [_load("traces.json"), _load("logs.json")])
    # every row is committed after its request's 200, so no quiet period ends before this
    sent = time.monotonic()
    while _get(server, "quiet", f"/api/v1/trajectories/{SESSION}").status_code == 404:
        assert time.monotonic() - sent < QUIET_S + 30, _rebuild_state(server)
        time.sleep(0.02)
    elapsed = time.monotonic() - sent
    assert elapsed >= QUIET_S - 0.25, elapsed  # less the second request's round trip
    # the design target is 2 s from completion to scored; other test runs share these cores,
    # so only a gross miss fails here (the benchmark and the demo report the real figure)
    assert elapsed <= QUIET_S + 5, elapsed
    assert _comparable(_activations(server, "quiet")) == _comparable(clean[0])


def test_unknown_ids_are_404_and_projects_are_isolated(
    server: RunningServer, clean: tuple[list[dict[str, Any]], dict[str, Any]]
) -> None:
    activation_id = clean[0][0]["activation_id"]
    assert _get(server, "clean", f"/api/v1/activations/{activation_id}").json() == clean[0][0]
    for path in (f"/api/v1/activations/{'0' * 32}", "/api/v1/trajectories/no-such-session"):
        response = _get(server, "clean", path)
        assert response.status_code == 404
        assert "in this project" in response.json()["detail"]
    # a project that was sent nothing sees nothing, even by id
    assert _get(server, "empty", f"/api/v1/activations/{activation_id}").status_code == 404
    assert _get(server, "empty", f"/api/v1/trajectories/{SESSION}").status_code == 404
    assert _get(server, "empty", "/api/v1/activations").json() == []
    other = httpx.get(
        f"{server.api}/api/v1/activations/{activation_id}",
        headers={"x-skillsight-key": "no-such-key"},
        timeout=30,
    )
    assert other.status_code == 401


# -- the finalizer in process, on the embedded store -------------------------------------------
#
# The same class ``skillsight serve`` runs, entered here without a batch writer (as a separate
# worker process would run it: it polls the store). Rows go in through the store's insert.


def _ingest_capture_pair(store: EmbeddedStore, project: str) -> tuple[str, str]:
    """Both recorded sessions (JSON and protobuf captures); returns their session ids."""
    limits = otlp.Limits()
    sessions = []
    for traces, logs, encoding in (
        ("traces.json", "logs.json", otlp.JSON),
        ("traces.pb", "logs.pb", otlp.PROTOBUF),
    ):
        folder = CAPTURES / "claude_code"
        spans = otlp.decode(otlp.TRACES, (folder / traces).read_bytes(), encoding, project, limits)
        events = otlp.decode(otlp.LOGS, (folder / logs).read_bytes(), encoding, project, limits)
        store.spans.insert(spans.columns.to_arrow(SPAN_SCHEMA))
        store.events.insert(events.columns.to_arrow(EVENT_SCHEMA))
        sessions.append(_first_session(store, project, sessions))
    return sessions[0], sessions[1]


def _first_session(store: EmbeddedStore, project: str, known: list[str]) -> str:
    keys = [key for p, key, _ in store.sessions.touched(0) if p == project and key not in known]
    assert len(keys) == 1, keys
    return keys[0]


async def _until_idle(finalizer: Finalizer) -> None:
    async with asyncio.timeout(30):
        while not (finalizer.idle and finalizer.stats.sessions_rebuilt + finalizer.stats.errors):
            await asyncio.sleep(0.02)


def test_a_failing_session_is_counted_and_the_others_are_rebuilt_and_announced(
    embedded_store: EmbeddedStore,
) -> None:
    good, bad = _ingest_capture_pair(embedded_store, "p")

    def rebuild(
        spans: Any, events: Any, *, project_id: str, catalogue: Any, session_id: str
    ) -> Rebuilt:
        if session_id == bad:
            raise ValueError("this session's rows cannot be read")
        return rebuild_session(
            spans, events, project_id=project_id, catalogue=catalogue, session_id=session_id
        )

    announced: list[ActivationsReady] = []

    async def collect(item: ActivationsReady) -> None:
        announced.append(item)

    async def refuse(item: ActivationsReady) -> None:
        raise RuntimeError("the evaluation queue is full")

    async def run() -> dict[str, object]:
        finalizer = Finalizer(embedded_store, quiet_s=0.1, poll_s=0.02, rebuild=rebuild)
        finalizer.subscribe(collect)
        finalizer.subscribe(refuse)
        async with finalizer:
            await _until_idle(finalizer)
            return finalizer.health()

    health = asyncio.run(run())
    assert health["sessions_rebuilt"] == 1
    assert health["errors"] == 2  # the bad session, and the subscriber that raised
    stored = embedded_store.activations.find("p")
    assert [(a.session_id, a.skill_name) for a in stored] == [(good, "csv-summary")]
    assert [(i.project_id, i.session_id, i.activations) for i in announced] == [
        ("p", good, tuple(stored))
    ]
    assert embedded_store.trajectories.get("p", bad) is None


def test_a_pass_frees_its_trajectories_before_the_collector_runs_again(
    embedded_store: EmbeddedStore,
) -> None:
    """The cyclic collector, paused through a pass, first runs again once the pass's outcomes
    are handled and dropped: it never walks the models of the trajectories it rebuilt."""
    built: list[weakref.ref[Any]] = []

    def rebuild(
        spans: Any, events: Any, *, project_id: str, catalogue: Any, session_id: str
    ) -> Rebuilt:
        rebuilt = rebuild_session(
            spans, events, project_id=project_id, catalogue=catalogue, session_id=session_id
        )
        built.append(weakref.ref(rebuilt.trajectory))
        return rebuilt

    alive_when_collecting: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and built:
            alive_when_collecting.append(sum(ref() is not None for ref in built))

    announced: list[ActivationsReady] = []

    async def collect(item: ActivationsReady) -> None:
        announced.append(item)

    async def run() -> None:
        finalizer = Finalizer(embedded_store, quiet_s=0.1, poll_s=0.02, rebuild=rebuild)
        finalizer.subscribe(collect)
        async with finalizer:
            _ingest_capture_pair(embedded_store, "p")
            async with asyncio.timeout(30):
                while len(announced) < 2:
                    await asyncio.sleep(0.02)
            gc.collect()  # a collection after the passes, whatever allocated since

    gc.callbacks.append(watch)
    try:
        asyncio.run(run())
    finally:
        gc.callbacks.remove(watch)
    assert len(built) == 2 and all(ref() is None for ref in built)
    assert alive_when_collecting and max(alive_when_collecting) == 0, alive_when_collecting


def test_leaving_rebuilds_what_is_still_pending(embedded_store: EmbeddedStore) -> None:
    """A graceful stop does not wait out the quiet period: pending sessions are rebuilt."""

    async def run() -> int:
        async with Finalizer(embedded_store, quiet_s=3600, poll_s=0.02) as finalizer:
            _ingest_capture_pair(embedded_store, "p")
            async with asyncio.timeout(30):
                while finalizer.pending < 2:
                    await asyncio.sleep(0.02)
        return finalizer.stats.sessions_rebuilt

    assert asyncio.run(run()) == 2
    assert sorted(a.skill_name for a in embedded_store.activations.find("p")) == [
        "csv-summary",
        "csv-summary",
    ]


def _announced_on_restart(store: EmbeddedStore) -> list[str]:
    """The sessions a finalizer starting on ``store`` hands to scoring before it is idle."""

    async def run() -> list[str]:
        rebuilt: list[str] = []

        async def note(item: ActivationsReady) -> None:
            rebuilt.append(item.session_id)

        finalizer = Finalizer(store, quiet_s=0.0, poll_s=0.02)
        finalizer.subscribe(note)
        async with finalizer:
            await _until_idle(finalizer)
        return rebuilt

    return asyncio.run(run())


def test_a_restarted_finalizer_catches_up_on_what_was_not_rebuilt(
    embedded_store: EmbeddedStore,
) -> None:
    first, second = _ingest_capture_pair(embedded_store, "p")
    spans, events = embedded_store.sessions.rows("p", first)
    embedded_store.rebuilds.write_one(
        "p",
        rebuild_session(spans, events, project_id="p", session_id=first),
        ingested_through_us=max(t for _, k, t in embedded_store.sessions.touched(0) if k == first),
    )

    assert _announced_on_restart(embedded_store) == [second]


def test_a_restarted_finalizer_settles_what_a_crash_left_provisional(
    embedded_store: EmbeddedStore,
) -> None:
    """A service killed without its final pass leaves a provisional (unsettled) rebuild that
    no evaluator saw; the next start owes it, a settled one it does not."""
    first, second = _ingest_capture_pair(embedded_store, "p")
    through = {k: t for _, k, t in embedded_store.sessions.touched(0)}
    embedded_store.rebuilds.write(
        [
            SessionRebuild(
                "p",
                rebuild_session(*embedded_store.sessions.rows("p", key), session_id=key),
                through[key],
                settled=key == second,
            )
            for key in (first, second)
        ]
    )
    assert [key for _, key, _ in embedded_store.rebuilds.since(0)] == [second]

    assert _announced_on_restart(embedded_store) == [first]
    assert {key for _, key, _ in embedded_store.rebuilds.since(0)} == {first, second}


# -- skillsight worker: the finalizer as its own process, on the ClickHouse server transport ----


def test_a_worker_process_rebuilds_what_collectors_wrote(server_store: ServerStore) -> None:
    url = server_store.address.redacted()  # the test endpoint's user has no password
    worker = subprocess.Popen(
        [sys.executable, "-m", "skillsight.cli", "worker", "--clickhouse", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={
            **os.environ,
            "SKILLSIGHT_REBUILD_QUIET_S": "0.2",
            "SKILLSIGHT_REBUILD_POLL_S": "0.05",
        },
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "SKILLSIGHT_WORKER_READY"
        limits = otlp.Limits()
        folder = CAPTURES / "claude_code"
        spans = otlp.decode(
            otlp.TRACES, (folder / "traces.pb").read_bytes(), "protobuf", "w", limits
        )
        events = otlp.decode(otlp.LOGS, (folder / "logs.pb").read_bytes(), "protobuf", "w", limits)
        server_store.spans.insert(spans.columns.to_arrow(SPAN_SCHEMA))
        server_store.events.insert(events.columns.to_arrow(EVENT_SCHEMA))
        deadline = time.monotonic() + 60
        while not (found := server_store.activations.find("w")):
            assert time.monotonic() < deadline, "the worker rebuilt nothing"
            time.sleep(0.05)
        assert [(a.skill_name, [c.name for c in a.tool_calls]) for a in found] == [
            ("csv-summary", ["Bash"])
        ]
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0, output
    # once, or twice when the worker's quiet period passed between the two inserts (a loaded
    # machine): a rebuild after the spans, then one with the log events
    assert re.search(r"rebuilt [12] sessions \(0 errors\)", output), output


@pytest.mark.parametrize("text", ["2", "2/2", "-1/2", "a/b", "1/0"])
def test_a_bad_shard_is_refused_clearly(text: str) -> None:
    with pytest.raises(ConfigError, match="expected INDEX/COUNT with 0 <= INDEX < COUNT"):
        parse_shard(text)
    assert parse_shard("1/2") == (1, 2)


def test_the_documented_evaluator_hook_hears_of_every_rebuilt_session(
    embedded_store: EmbeddedStore,
) -> None:
    """docs/trace-completion.md's example, run against the services ``skillsight serve``
    builds (batch writer and finalizer, from the composition root)."""
    doc = (Path(__file__).parents[1] / "docs" / "trace-completion.md").read_text()
    example = doc.split("```python\n", 1)[1].split("```", 1)[0]

    async def run() -> list[ActivationsReady]:
        settings = Settings.load(
            {"rebuild_quiet_s": 0.05, "rebuild_poll_s": 0.02, "eval_enabled": False}, env={}
        )
        queue: asyncio.Queue[ActivationsReady] = asyncio.Queue()

        async def serve_until_stopped(services: Services) -> None:
            assert services.collector is not None and services.finalizer is not None
            for signal_name, name in ((otlp.TRACES, "traces.pb"), (otlp.LOGS, "logs.pb")):
                body = (CAPTURES / "claude_code" / name).read_bytes()
                services.collector.ingest(signal_name, body, encoding=otlp.PROTOBUF, project_id="p")
            await _until_idle(services.finalizer)

        code = "async def main():\n" + textwrap.indent(example, "    ")
        namespace = {
            "settings": settings,
            "store": embedded_store,
            "queue": queue,
            "serve_until_stopped": serve_until_stopped,
        }
        exec(code, namespace)
        await namespace["main"]()
        return [queue.get_nowait() for _ in range(queue.qsize())]

    heard = asyncio.run(run())
    # the traces and the log events are committed in separate batches, so with a quiet period
    # this short the session may be rebuilt (and announced) once before the events are in
    assert {(i.project_id, i.session_id) for i in heard} == {
        ("p", "093ac2ae-a7ab-4b25-b958-3919a7e38a98")
    }
    assert heard[-1].activations == tuple(embedded_store.activations.find("p"))
    assert [a.skill_name for a in heard[-1].activations] == ["csv-summary"]
    assert heard[-1].activations[0].integration_message


# -- sessions whose root span is late: shown after max_wait_s, scored once complete or settled ----


def _split_root(project: str) -> tuple[Any, Any, Any]:
    """The recorded session as decoded columns: spans without the root, the root, events."""
    document = json.loads((CAPTURES / "claude_code" / "traces.json").read_text())
    root = json.loads(json.dumps(document))
    for kept, wanted in ((document, False), (root, True)):
        for resource in kept["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                scope["spans"] = [
                    s for s in scope["spans"] if (s["name"] == "claude_code.interaction") is wanted
                ]
    limits = otlp.Limits()
    logs = (CAPTURES / "claude_code" / "logs.json").read_bytes()
    return tuple(  # type: ignore[return-value]
        otlp.decode(signal, body, otlp.JSON, project, limits).columns.to_arrow(schema)
        for signal, body, schema in (
            (otlp.TRACES, json.dumps(document).encode(), SPAN_SCHEMA),
            (otlp.TRACES, json.dumps(root).encode(), SPAN_SCHEMA),
            (otlp.LOGS, logs, EVENT_SCHEMA),
        )
    )


def _announced_after_provisional(
    store: EmbeddedStore, *, settle_s: float, then: Any = None
) -> tuple[list[ActivationsReady], dict[str, object], dict[str, object]]:
    """Run a finalizer over the rootless session until it has been rebuilt provisionally, check
    what shows, call ``then`` and run on until something is announced."""
    spans, root, events = _split_root("p")
    store.spans.insert(spans)
    store.events.insert(events)
    announced: list[ActivationsReady] = []

    async def note(item: ActivationsReady) -> None:
        announced.append(item)

    async def run() -> tuple[dict[str, object], dict[str, object]]:
        finalizer = Finalizer(store, quiet_s=0.05, max_wait_s=0.0, settle_s=settle_s, poll_s=0.02)
        finalizer.subscribe(note)
        async with finalizer:
            async with asyncio.timeout(30):
                while finalizer.stats.provisional_rebuilds == 0:
                    await asyncio.sleep(0.02)
            shown = finalizer.health()
            assert announced == []  # nothing handed to scoring yet
            assert [(a.skill_name, a.settled) for a in store.activations.find("p")] == [
                ("csv-summary", False)  # shown, marked as such
            ]
            console = Console(record=True, width=200)
            print_activation(console, store.activations.find("p")[0])
            assert "provisional: the session is still incomplete" in console.export_text()
            assert store.rebuilds.since(0) == []  # nor to evaluation workers
            if then is not None:
                then(root)
            async with asyncio.timeout(30):
                while not announced:
                    await asyncio.sleep(0.02)
            return shown, finalizer.health()

    shown, done = asyncio.run(run())
    return announced, shown, done


def test_a_session_past_max_wait_is_shown_but_scored_only_once_settled(
    embedded_store: EmbeddedStore,
) -> None:
    """The root never comes: after max_wait_s the session is rebuilt for the display, and
    settle_s later (no new row) handed to scoring as it is."""
    announced, shown, done = _announced_after_provisional(embedded_store, settle_s=1.0)
    assert {k: shown[k] for k in ("idle", "unsettled_sessions", "pending_sessions")} == {
        "idle": True,  # it waits on the agent, not on the finalizer
        "unsettled_sessions": 1,
        "pending_sessions": 0,
    }
    [item] = announced
    assert [a.skill_name for a in item.activations] == ["csv-summary"]
    assert [a.settled for a in embedded_store.activations.find("p")] == [True]
    assert {k: done[k] for k in ("unsettled_sessions", "settled_incomplete")} == {
        "unsettled_sessions": 0,
        "settled_incomplete": 1,
    }
    assert [key for _, key, _ in embedded_store.rebuilds.since(0)] == [item.session_id]


def test_a_late_root_settles_the_session_at_once(embedded_store: EmbeddedStore) -> None:
    announced, _, done = _announced_after_provisional(
        embedded_store, settle_s=3600, then=embedded_store.spans.insert
    )
    [item] = announced  # complete now, so scored without waiting out settle_s
    assert [a.skill_name for a in item.activations] == ["csv-summary"]
    assert (done["settled_incomplete"], done["unsettled_sessions"]) == (0, 0)


def test_request_events_that_name_no_request_hold_nothing_back() -> None:
    """Completeness waits only for the events of requests it can match: events without a
    request_id (another CLI version) must not keep a finished session waiting."""
    root = {"trace_id": "t", "span_id": "r", "parent_span_id": "", "name": "x", "attributes": {}}
    request = {
        "trace_id": "t",
        "span_id": "q",
        "parent_span_id": "r",
        "name": "claude_code.llm_request",
        "attributes": {"request_id": "req_1"},
    }
    unnamed = {"event_name": "claude_code.api_request", "attributes": {}, "record_id": "e0"}
    named = {
        "event_name": "claude_code.api_request",
        "attributes": {"request_id": "req_1"},
        "record_id": "e1",
    }
    other = {
        "event_name": "claude_code.api_request",
        "attributes": {"request_id": "req_2"},
        "record_id": "e2",
    }
    later = {**request, "span_id": "q3", "attributes": {"request_id": "req_3"}}
    assert is_complete([root, request], [unnamed])
    assert is_complete([root, request], [unnamed, named])
    # ids that match elsewhere are trusted: req_3's event is missing, whatever else arrived
    assert not is_complete([root, request, later], [unnamed, named, other])
    assert not is_complete([request], [named])  # the root is missing
