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
from skillsight.rebuild.session import rebuild_session
from skillsight.runtime import Services, build_services

CLAUDE_CODE = Path(__file__).parent / "fixtures" / "captures" / "scenarios" / "two_skills"
DEADLINE_S = 240.0


def _requests() -> list[tuple[str, bytes]]:
    folder = CLAUDE_CODE / "claude_code"
    return [
        (otlp.TRACES, (folder / "traces.json").read_bytes()),
        (otlp.LOGS, (folder / "logs.json").read_bytes()),
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
