"""Evaluation latency: from a session's trace completing to its scores being stored.

A real ``skillsight serve`` (embedded store, a fresh folder) receives one generated agent session
at a time over OTLP/HTTP (the whole trace in one request, root span included). The clock starts
when that request is acknowledged, i.e. when the trace is complete at the collector, and stops
when ``GET /api/v1/activations?session_id=…`` first shows the session's activation with its
evaluations, polled every 10 ms. Between them: the write queue's flush, the finalizer's quiet
period (``--quiet``), the rebuild, the evaluation scheduler and the write of the scores.
One session is sent and timed first, untimed, so process warm-up is not counted.
"""

from __future__ import annotations

import http.client
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rich.console import Console

from benchmarks.ingest import _Server
from benchmarks.traces import _kv, agent_trace
from skillsight.errors import SkillsightError

TARGET_S = 2.0
_POLL_S = 0.01


def _session_request(rng: random.Random, session: int) -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend([_kv("service.name", "bench-agent")])
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "skillsight.instrumentation"
    spans = agent_trace(rng, session, time.time_ns())
    scope_spans.spans.extend(spans[1:] + spans[:1])  # the root span ends, and is sent, last
    return request.SerializeToString()


class _Client:
    """One connection per call: an idle keep-alive connection may be closed by the server."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"content-type": "application/x-protobuf"} if body is not None else {}
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def _scored(api: _Client, session_id: str) -> bool:
    status, body = api.call("GET", f"/api/v1/activations?session_id={quote(session_id)}")
    if status != 200:
        raise SkillsightError(f"the service answered {status}: {body[:200]!r}")
    found: list[dict[str, Any]] = json.loads(body)
    return bool(found) and all(a.get("evaluations") for a in found)  # absent until scored


def _time_session(
    otlp: _Client, api: _Client, rng: random.Random, session: int, timeout_s: float
) -> float:
    body = _session_request(rng, session)
    status, text = otlp.call("POST", "/v1/traces", body)
    if status != 200:
        raise SkillsightError(f"the collector refused the session: {status} {text[:200]!r}")
    started = time.perf_counter()
    deadline = started + timeout_s
    while time.perf_counter() < deadline:
        if _scored(api, f"session-{session:08d}"):
            return time.perf_counter() - started
        time.sleep(_POLL_S)
    raise SkillsightError(f"session {session} was not scored within {timeout_s} s")


def _caught_up(server: _Server, timeout_s: float) -> dict[str, Any]:
    """/healthz once the service has nothing on its way: the last session's scores can be
    visible through the API a moment before the counters that report them are updated."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        health: dict[str, Any] = server.get("/healthz")
        if health.get("caught_up"):
            return health
        time.sleep(_POLL_S)
    raise SkillsightError(f"the service did not catch up within {timeout_s} s")


def run_eval_latency_bench(
    *, sessions: int = 20, quiet_s: float = 1.0, console: Console | None = None
) -> dict[str, Any]:
    """Time ``sessions`` sessions one after another; p50/p95/max in seconds."""
    if sessions < 1:
        raise SkillsightError("--sessions must be at least 1")
    console = console or Console()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-eval-") as tmp:
        server = _Server(
            Path(tmp) / "data",
            {
                "SKILLSIGHT_REBUILD_QUIET_S": str(quiet_s),
                "SKILLSIGHT_EVAL_ENABLED": "true",
                "SKILLSIGHT_API_KEYS": "",
            },
        )
        otlp = _Client(server.endpoints["otlp_http"])
        api = _Client(server.endpoints["api"])
        try:
            _time_session(otlp, api, rng, 0, timeout_s=120)
            latencies = [
                _time_session(otlp, api, rng, i, timeout_s=60) for i in range(1, sessions + 1)
            ]
            health = _caught_up(server, timeout_s=60)
        finally:
            server.stop()
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    report = {
        "sessions": sessions,
        "quiet_s": quiet_s,
        "p50_s": round(statistics.median(latencies), 3),
        "p95_s": round(p95, 3),
        "max_s": round(latencies[-1], 3),
        "target_s": TARGET_S,
        "evaluations_written": health["evaluation"]["evaluations_written"],
        "last_rebuild_pass_ms": health["rebuild"]["last_pass_ms"],
        "last_scoring_ms": health["evaluation"]["last_batch_ms"],
        "last_rebuild_to_scores_ms": health["evaluation"]["last_latency_ms"],
    }
    verdict = "[green]meets[/]" if report["p95_s"] <= TARGET_S else "[red]misses[/]"
    console.print(
        f"evaluation latency (trace complete -> scores stored), {sessions} sessions, "
        f"quiet period {quiet_s} s: p50 {report['p50_s']} s, p95 {report['p95_s']} s, "
        f"max {report['max_s']} s; {verdict} the {TARGET_S} s target",
        highlight=False,
    )
    return report
