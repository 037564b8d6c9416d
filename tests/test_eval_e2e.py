"""Online evaluation end to end: what real Claude Code (scripted model) exported for each
evaluation scenario goes over OTLP/HTTP into a real ``skillsight serve``; the finalizer rebuilds
each session, the evaluation scheduler scores it, and the verdicts the scenario expects are read
back from the stored rows (the API's ``evaluations``), the scorecard and ``skillsight gate``'s
exit code. One live test runs the Claude Code CLI itself against the server.

Each scenario is its own project (API keys). Its skills are written where they were when the
capture was recorded (the manifest's ``project_root``) and recorded in the catalogue with
``skillsight skills scan --store``, as a user would before starting the service.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from demo.scenario_library import build_scenario
from skillsight.evaluators import DETERMINISTIC, deterministic_registry
from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server

THRESHOLDS = {e.name: e.threshold for e in deterministic_registry()}
SCENARIOS = ("one_skill", "allowed_tools_violation", "distractor", "skipped_script", "security")
# Each capture twice: Claude Code's native telemetry (project = the scenario's name) and the
# OpenInference instrumentor's spans of the same scripted run (project "oi-<name>").
SOURCES = {"claude_code": "", "openinference": "oi-"}
CASES = [(name, prefix + name) for prefix in SOURCES.values() for name in SCENARIOS]
KEYS = {project: f"key-{project}" for _, project in CASES}
ADMIN_KEY = "key-ops"  # reads /healthz's state, which project keys are not shown
GATE = (
    "--min",
    "allowed_tools=1.0",
    "--min",
    "skill_selection=0.5",
    "--min",
    "script_execution=1.0",
    "--min",
    "tool_errors=1.0",
    "--min",
    "integration_heuristic=1.0",
    "--min",
    "security=1.0",
)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsight.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_and_scan(name: str, root: Path, data: Path, projects: tuple[str, ...] = ()) -> None:
    """The scenario's project files at ``root``, its skills recorded in each of ``projects``
    (default: the project named as the scenario)."""
    build_scenario(name, root).write()
    for project in projects or (name,):
        done = cli(
            "skills", "scan", str(root / ".claude" / "skills"), "--store", "--data", str(data),
            "--project", project,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr


def wait_scored(server: RunningServer, sessions: int, timeout: float = 120.0) -> dict[str, Any]:
    """Until the scheduler has scored ``sessions`` sessions and has nothing left (polls)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health: dict[str, Any] = server.get("/healthz")
        evaluation = health["evaluation"]
        if (
            evaluation["sessions_scored"] + evaluation["store_failures"] >= sessions
            and health["caught_up"]
        ):
            return health
        time.sleep(0.05)
    raise AssertionError(f"sessions not scored within {timeout}s: {server.get('/healthz')}")


def wait_each_scored(server: RunningServer, projects: list[str], timeout: float = 120.0) -> None:
    """Until each project lists one activation whose current rebuild is scored, then the
    service idle. The scheduler's count alone can reach the number of sessions early: a session
    rebuilt again when late rows come (a log event after its root span) is scored again."""
    deadline = time.monotonic() + timeout
    waiting = list(projects)
    while waiting and time.monotonic() < deadline:
        listed = get(server, waiting[0], "/api/v1/activations")
        if len(listed) == 1:
            found = get(server, waiting[0], f"/api/v1/activations/{listed[0]['activation_id']}")
            scores = found.get("evaluations") or []  # absent until the first scores land
            if scores and not any(e.get("stale") for e in scores):
                waiting.pop(0)
                continue
        time.sleep(0.05)
    assert not waiting, f"not scored within {timeout}s: {waiting}"
    wait_scored(server, len(projects), timeout=max(1.0, deadline - time.monotonic()))


def get(server: RunningServer, project: str, path: str, **params: Any) -> Any:
    response = httpx.get(
        server.api + path, params=params, headers={"x-skillsight-key": KEYS[project]}, timeout=30
    )
    assert response.status_code == 200, response.text
    return response.json()


def send_capture(server: RunningServer, name: str, project: str) -> None:
    capture = load_capture(name)
    if project.startswith(SOURCES["openinference"]):
        requests = [capture.openinference_traces]
    else:
        requests = [capture.native_traces, capture.native_logs]
    for request in requests:
        response = httpx.post(
            f"{server.otlp_http}/v1/{request.signal}",
            content=request.body,
            headers={"content-type": request.content_type, "x-skillsight-key": KEYS[project]},
            timeout=30,
        )
        assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One serve with every scenario's capture replayed into its own project and scored."""
    data = tmp_path_factory.mktemp("eval-e2e") / "data"
    for name in SCENARIOS:
        root = Path(load_capture(name).manifest["project_root"])
        write_and_scan(name, root, data, tuple(p for n, p in CASES if n == name))
    keys = ",".join(f"{key}:{project}" for project, key in KEYS.items())
    env = {
        # /healthz shows the services' state to admin keys only
        "SKILLSIGHT_API_KEYS": f"{keys},{ADMIN_KEY}:ops:admin",
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
    }
    with running_server(data, env=env) as running:
        server = dataclasses.replace(running, headers={"x-skillsight-key": ADMIN_KEY})
        for name, project in CASES:
            send_capture(server, name, project)
        wait_scored(server, len(CASES))
        yield server


def activation_of(server: RunningServer, name: str) -> dict[str, Any]:
    listed = get(server, name, "/api/v1/activations")
    assert len(listed) == 1, listed
    found: dict[str, Any] = get(server, name, f"/api/v1/activations/{listed[0]['activation_id']}")
    return found


def expected_verdicts(name: str) -> dict[str, bool | None]:
    """What the scenario's manifest expects of each evaluator; efficiency has no baseline yet
    (fewer than five earlier activations of the skill), so it does not apply."""
    expected = load_capture(name).manifest["expected"]["evaluations"]
    return {**{e["evaluator"]: e["passed"] for e in expected}, "efficiency": None}


@pytest.mark.parametrize(("name", "project"), CASES)
def test_each_scenario_is_scored_as_its_manifest_expects(
    served: RunningServer, name: str, project: str
) -> None:
    activation = activation_of(served, project)
    evaluations = activation["evaluations"]
    assert [e["evaluator"] for e in evaluations] == list(DETERMINISTIC)
    assert {e["evaluator"]: e["passed"] for e in evaluations} == expected_verdicts(name)
    versions = {evaluator.name: evaluator.version for evaluator in deterministic_registry()}
    for evaluation in evaluations:
        assert evaluation["version"] == versions[evaluation["evaluator"]]
        assert evaluation["error"] == ""
        if evaluation["passed"] is None:
            assert (evaluation["score"], evaluation["label"]) == (None, "not_applicable")
        elif evaluation["passed"]:
            assert evaluation["score"] >= THRESHOLDS[evaluation["evaluator"]]
        else:
            assert evaluation["score"] < THRESHOLDS[evaluation["evaluator"]]
            assert evaluation["findings"], evaluation
    cited = {
        e["evaluator"]: set(e["evidence"]["tool_call_ids"]) for e in evaluations if not e["passed"]
    }
    for want in load_capture(name).manifest["expected"]["evaluations"]:
        assert set(want["cites"]) <= cited.get(want["evaluator"], set()), (want, cited)


def test_the_clean_activation_scores_one_on_every_applicable_axis(served: RunningServer) -> None:
    scores = {e["evaluator"]: e["score"] for e in activation_of(served, "one_skill")["evaluations"]}
    assert scores == {name: None if name == "efficiency" else 1.0 for name in DETERMINISTIC}


def test_the_bash_call_outside_allowed_tools_is_cited(served: RunningServer) -> None:
    activation = activation_of(served, "allowed_tools_violation")
    (verdict,) = [e for e in activation["evaluations"] if e["evaluator"] == "allowed_tools"]
    bash = [c for c in activation["tool_calls"] if c["name"] == "Bash"]
    assert len(bash) == 1
    assert verdict["score"] == 0.5  # one of the two calls (Read, Bash) is outside `Read`
    assert [(f["kind"], f["step_id"], f["tool_call_id"]) for f in verdict["findings"]] == [
        ("tool_not_allowed", bash[0]["step_id"], bash[0]["tool_call_id"])
    ]
    assert verdict["evidence"] == {
        "step_ids": [bash[0]["step_id"]],
        "tool_call_ids": [bash[0]["tool_call_id"]],
    }


def test_security_findings_are_typed_and_cited(served: RunningServer) -> None:
    activation = activation_of(served, "security")
    (verdict,) = [e for e in activation["evaluations"] if e["evaluator"] == "security"]
    by_call = {c["tool_call_id"]: c for c in activation["tool_calls"]}
    found = [(f["kind"], f["severity"], f["tool_call_id"]) for f in verdict["findings"]]
    secret_call = next(c for c in activation["tool_calls"] if "sk-live-" in (c["result"] or ""))
    rm_call = next(c for c in activation["tool_calls"] if "rm -rf" in json.dumps(c["arguments"]))
    assert found == [
        ("secret", "high", secret_call["tool_call_id"]),
        ("rm_rf_outside_workspace", "high", rm_call["tool_call_id"]),
    ]
    for finding in verdict["findings"]:
        assert finding["step_id"] == by_call[finding["tool_call_id"]]["step_id"]
    assert verdict["score"] == 0.0


def test_evaluations_are_exported_as_otel_evaluation_results(served: RunningServer) -> None:
    activation = activation_of(served, "skipped_script")
    assert activation["evaluation_events"] == [
        {
            "name": "gen_ai.evaluation.result",
            "attributes": {
                "gen_ai.evaluation.name": e["evaluator"],
                "gen_ai.evaluation.score.label": e["label"],
                "gen_ai.evaluation.explanation": e["reason"],
                **({} if e["score"] is None else {"gen_ai.evaluation.score.value": e["score"]}),
            },
        }
        for e in activation["evaluations"]
    ]


def test_the_list_carries_the_same_evaluations_as_the_record(served: RunningServer) -> None:
    listed = get(served, "distractor", "/api/v1/activations")
    assert listed == [activation_of(served, "distractor")]


def test_the_scorecard_counts_the_stored_scores(served: RunningServer) -> None:
    activation = activation_of(served, "skipped_script")
    card = get(served, "skipped_script", "/api/v1/skills/csv-summary/scorecard", window="all")
    scores = {e["evaluator"]: e["score"] for e in activation["evaluations"]}

    def line(name: str) -> dict[str, Any]:
        score = scores[name]
        scored = score is not None
        passed = int(score is not None and score >= THRESHOLDS[name])
        return {
            "evaluator": name,
            "activations": 1,
            "scored": int(scored),
            "not_evaluated": 0,
            "passed": passed,
            "pass_rate": float(passed) if scored else None,
            "mean_score": score,
            "min_score": score,
        }

    day = activation["started_at"][:10]
    assert card == {
        "skill": "csv-summary",
        "window": "all",
        "since": None,
        "version": "",
        "activations": 1,
        "evaluators": [line(name) for name in DETERMINISTIC],
        "versions": [
            {
                "version": activation["skill_version"],
                "activations": 1,
                "first_started": card["versions"][0]["first_started"],
                "last_started": card["versions"][0]["last_started"],
                "evaluators": [line(name) for name in DETERMINISTIC],
            }
        ],
        "trend": [
            {
                k: v
                for k, v in {**line(name), "day": day}.items()
                if k not in ("passed", "min_score", "not_evaluated")
            }
            for name in DETERMINISTIC
        ],
    }
    assert card["versions"][0]["first_started"][:19] == activation["started_at"][:19]
    assert activation["skill_version"]  # the catalogue gave the activation its version
    other = get(served, "skipped_script", "/api/v1/skills/csv-summary/scorecard", version="x" * 64)
    assert (other["activations"], other["evaluators"], other["trend"]) == (0, [], [])


def test_a_malformed_window_is_a_400(served: RunningServer) -> None:
    response = httpx.get(
        served.api + "/api/v1/skills/csv-summary/scorecard",
        params={"window": "7 days"},
        headers={"x-skillsight-key": KEYS["one_skill"]},
        timeout=30,
    )
    assert response.status_code == 400
    assert "is not a positive count" in response.json()["detail"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_gate_exit_code_follows_the_verdicts(served: RunningServer, name: str) -> None:
    skill = activation_of(served, name)["skill_name"]
    done = cli("gate", "--api", served.api, "--key", KEYS[name], "--skill", skill, *GATE)
    failing = [e for e, ok in expected_verdicts(name).items() if ok is False]
    assert done.returncode == (1 if failing else 0), done.stdout + done.stderr
    for want in load_capture(name).manifest["expected"]["evaluations"]:
        for call in want["cites"]:
            assert call in done.stdout, (call, done.stdout)
    assert ("gate failed" if failing else "gate passed") in done.stdout


@pytest.mark.claude
@pytest.mark.slow
def test_live_claude_code_runs_of_every_scenario_are_scored_and_gated(tmp_path: Path) -> None:
    """Real Claude Code (scripted model) exports straight into serve, no capture involved: the
    five evaluation scenarios at once, each in its own project (they reuse skill names with
    different contracts), scored as their manifests expect, and the gate follows."""
    from demo.scenarios import executed_facts, mismatches, run_scenario_async

    data = tmp_path / "data"
    scenarios = {}
    for name in SCENARIOS:
        scenarios[name] = build_scenario(name, tmp_path / "work" / name / "project")
        write_and_scan(name, scenarios[name].root, data)
    keys = ",".join(f"{KEYS[name]}:{name}" for name in SCENARIOS)
    env = {
        "SKILLSIGHT_API_KEYS": f"{keys},{ADMIN_KEY}:ops:admin",
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
    }

    async def play_all(endpoint: str) -> list[Any]:
        return await asyncio.gather(
            *(
                run_scenario_async(
                    scenarios[name],
                    endpoint=endpoint,
                    protocol="http/protobuf",
                    project_key=KEYS[name],
                )
                for name in SCENARIOS
            )
        )

    with running_server(data, env=env) as running:
        server = dataclasses.replace(running, headers={"x-skillsight-key": ADMIN_KEY})
        # The model was loaded before the receivers opened: loading it beside them stalled
        # exports for seconds on a busy machine, and a Claude Code whose log export was still
        # waiting at exit (it gives its flush 2 s) lost its events, so skipped_script was
        # scored without its tool inputs.
        assert server.get("/healthz")["evaluation"]["loaded"] == {"skill_selection": "loaded"}
        results = dict(zip(SCENARIOS, asyncio.run(play_all(server.otlp_http)), strict=True))
        for name, result in results.items():
            assert mismatches(result) == [], name
        wait_each_scored(server, list(SCENARIOS))
        for name, result in results.items():
            activation = activation_of(server, name)
            assert activation["session_id"] == result.session_id
            verdicts = {e["evaluator"]: e for e in activation["evaluations"]}
            # When not: whether the CLI's log records arrived at all tells a telemetry loss
            # (its exit flush) from a wrong verdict.
            events = get(server, name, "/api/v1/events", session_id=result.session_id)
            assert {e: v["passed"] for e, v in verdicts.items()} == expected_verdicts(name), (
                name,
                f"{len(events)} log records stored for the session",
                {e: v["reason"] for e, v in verdicts.items()},
            )
            done = cli(
                "gate", "--api", server.api, "--key", KEYS[name],
                "--skill", activation["skill_name"], *GATE,
            )  # fmt: skip
            failing = [e for e, ok in expected_verdicts(name).items() if ok is False]
            assert done.returncode == (1 if failing else 0), done.stdout + done.stderr

        # the run outside allowed-tools: the Bash call is cited, by the evaluator and the gate
        violation = results["allowed_tools_violation"]
        (bash,) = [i for i, tool, *_ in executed_facts(violation) if tool == "Bash"]
        scored = activation_of(server, "allowed_tools_violation")["evaluations"]
        (allowed,) = [e for e in scored if e["evaluator"] == "allowed_tools"]
        assert allowed["score"] < 1.0
        assert allowed["evidence"]["tool_call_ids"] == [bash]
        done = cli(
            "gate", "--api", server.api, "--key", KEYS["allowed_tools_violation"],
            "--skill", "sales-report", *GATE,
        )  # fmt: skip
    assert bash in done.stdout


@pytest.mark.slow
def test_the_latency_bench_times_sessions_through_a_real_serve() -> None:
    from rich.console import Console

    from benchmarks.eval_latency import run_eval_latency_bench

    report = run_eval_latency_bench(sessions=3, quiet_s=0.2, console=Console(quiet=True))
    # the untimed first session and three timed ones, one activation each, seven evaluators
    assert report["evaluations_written"] == 4 * len(DETERMINISTIC)
    assert 0 < report["p50_s"] <= report["p95_s"] <= report["max_s"] < 60
    assert (report["sessions"], report["quiet_s"], report["target_s"]) == (3, 0.2, 2.0)
