"""``/healthz``'s ``caught_up``: true only once nothing a process accepted is still on its way.

``rebuild.idle`` looks at committed rows only, so while acknowledged rows wait in the write queue
it reads true and a caller waiting on it alone reads too early. The service here holds a recorded
Claude Code session's spans in its queue (a batch gathers until it is full), so the moment is
not a race: the finalizer is idle and the service is not caught up. When the logs fill the batch,
it is caught up only once the session's activations are rebuilt from every row and scored.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from skillsight.config import Settings
from skillsight.ingest import otlp
from skillsight.rebuild.finalizer import ActivationsReady, Finalizer
from skillsight.rebuild.session import rebuild_session
from skillsight.runtime import Services, build_services
from skillsight.store import EmbeddedStore
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
TWO_SKILLS = CAPTURES / "scenarios" / "two_skills" / "claude_code"
DEADLINE_S = 240.0


def _requests() -> list[tuple[str, bytes]]:
    return [
        (otlp.TRACES, (TWO_SKILLS / "traces.json").read_bytes()),
        (otlp.LOGS, (TWO_SKILLS / "logs.json").read_bytes()),
    ]


async def _send(services: Services, signal: str, body: bytes) -> int:
    assert services.collector is not None
    receipt = services.collector.ingest(signal, body, encoding=otlp.JSON, project_id="p")
    await services.collector.acknowledge(receipt)
    return services.collector.queue.held_rows


async def _until_caught_up(services: Services) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        health = services.health()
        if health["caught_up"]:
            return health
        assert time.monotonic() < deadline, health
        await asyncio.sleep(0.05)


def test_caught_up_waits_for_acknowledged_rows_their_rebuild_and_their_scores(
    tmp_path: Path,
) -> None:
    (traces, span_body), (logs, log_body) = _requests()
    spans = sum(
        len(scope["spans"])
        for resource in json.loads(span_body)["resourceSpans"]
        for scope in resource["scopeSpans"]
    )
    settings = Settings.load(
        {
            "data_dir": tmp_path / "store",
            "ack": "memory",  # acknowledged once queued: the rows wait uncommitted
            # a batch gathers until it holds more rows than the spans: the logs complete it
            "batch_max_rows": spans + 1,
            "flush_interval_s": 3600.0,
            "rebuild_quiet_s": 0.2,
            "eval_warm_up": False,
            "cluster_enabled": False,
        },
        env={},
    )

    async def run() -> tuple[dict[str, Any], dict[str, Any], list[Any], dict[str, Any]]:
        async with build_services(settings) as services:
            assert services.finalizer is not None and services.scheduler is not None
            deadline = time.monotonic() + DEADLINE_S
            while not services.finalizer.idle:  # past its catch-up at start
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            held = await _send(services, traces, span_body)
            assert held == spans
            waiting = services.health()
            await _send(services, logs, log_body)
            done = await _until_caught_up(services)
            store = services.store
            found = store.activations.find("p")
            scores = store.evaluations.of("p", [a.activation_id for a in found])
            fresh = []
            for session_id in {a.session_id for a in found}:
                stored = store.sessions.rows("p", session_id)
                fresh += rebuild_session(*stored, project_id="p", session_id=session_id).activations
            return waiting, done, found, {"scores": scores, "fresh": fresh}

    waiting, done, found, after = asyncio.run(run())
    # spans acknowledged, none committed: the finalizer has nothing to look at, yet rows are
    # on their way
    assert waiting["queue_rows"] > 0
    assert waiting["rebuild"]["idle"] is True
    assert waiting["caught_up"] is False
    # caught up: every row committed, the session rebuilt from all of them, and scored
    assert done["queue_rows"] == 0
    assert done["rebuild"]["idle"] and done["evaluation"]["idle"]
    assert [a.skill_name for a in found] and len(found) == len(after["fresh"])
    assert {a.activation_id for a in found} == {a.activation_id for a in after["fresh"]}
    assert all(after["scores"].get(a.activation_id) for a in found), after["scores"]


def test_the_finalizer_is_not_idle_until_its_rebuild_is_taken(
    embedded_store: EmbeddedStore,
) -> None:
    """A rebuilt session leaves the finalizer's pending sessions before a subscriber takes it;
    while the subscriber waits (a full scoring queue), the finalizer is not idle."""
    folder = CAPTURES / "claude_code"
    limits = otlp.Limits()
    spans = otlp.decode(otlp.TRACES, (folder / "traces.pb").read_bytes(), "protobuf", "p", limits)
    events = otlp.decode(otlp.LOGS, (folder / "logs.pb").read_bytes(), "protobuf", "p", limits)
    embedded_store.spans.insert(spans.columns.to_arrow(SPAN_SCHEMA))
    embedded_store.events.insert(events.columns.to_arrow(EVENT_SCHEMA))

    async def run() -> tuple[bool, int, bool, list[ActivationsReady]]:
        entered, release = asyncio.Event(), asyncio.Event()
        taken: list[ActivationsReady] = []

        async def full_queue(item: ActivationsReady) -> None:
            entered.set()
            await release.wait()
            taken.append(item)

        finalizer = Finalizer(embedded_store, quiet_s=0.05, poll_s=0.02, max_wait_s=0.0)
        finalizer.subscribe(full_queue)
        async with finalizer:
            async with asyncio.timeout(DEADLINE_S):
                await entered.wait()
            waiting_idle, pending = finalizer.idle, finalizer.pending
            release.set()
            async with asyncio.timeout(DEADLINE_S):
                while not finalizer.idle:
                    await asyncio.sleep(0.02)
            return waiting_idle, pending, finalizer.idle, taken

    waiting_idle, pending, idle, taken = asyncio.run(run())
    assert pending == 0  # the session is rebuilt: nothing pending keeps the finalizer busy
    assert waiting_idle is False  # yet its rebuild is not handed over
    assert idle is True
    assert [item.session_id for item in taken] and taken[0].activations
