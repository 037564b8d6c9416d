"""A scaled-out skillsight on one machine, for the scale-out benchmark and test: real
``skillsight serve --role ...`` child processes over one ClickHouse store, small generated
sessions sent over OTLP/HTTP, and each process's ``/metrics`` read back.

Nothing here sleeps to synchronize: :meth:`Fleet.wait` polls the processes' counters until a
condition holds or a deadline passes.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from skillsight import semconv as sc

# The cheap deterministic evaluators: skill_selection loads an embedding model per process, a
# cost that measures model loading, not scale-out.
EVALUATORS = "allowed_tools,script_execution,tool_errors,integration_heuristic,security"
SPANS_PER_SESSION = 3


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def session_spans(index: int, start_ns: int) -> list[Span]:
    """One small session: the agent span, a skill activation under it, one tool call under
    that. Ids derive from ``index``, so a session sent twice is the same rows."""
    digest = hashlib.blake2b(f"session-{index}".encode(), digest_size=40).digest()
    trace_id, ids = digest[:16], [digest[16:24], digest[24:32], digest[32:40]]
    conv = f"scale-{index:07d}"
    skill = ("csv-summary", "pdf-report", "git-release")[index % 3]
    spans = []
    for number, (name, parent, attrs) in enumerate(
        (
            (
                "invoke_agent scale-agent",
                b"",
                {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "scale"},
            ),
            (
                f"activate_skill {skill}",
                ids[0],
                {
                    sc.SKILLSIGHT_SPAN_KIND: sc.SPAN_KIND_SKILL_ACTIVATION,
                    sc.GEN_AI_SKILL_NAME: skill,
                    sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS: '["Bash(python3:*)", "Read"]',
                    sc.SKILLSIGHT_ACTIVATION_TRIGGER: "skill_tool",
                },
            ),
            (
                "execute_tool Bash",
                ids[1],
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                    sc.GEN_AI_TOOL_NAME: "Bash",
                    sc.GEN_AI_TOOL_CALL_ID: f"toolu_{index:07d}",
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"command": "python3 scripts/run.py"}',
                    sc.GEN_AI_TOOL_CALL_RESULT: "rows=12 mean=3.5",
                },
            ),
        )
    ):
        span = Span(
            trace_id=trace_id,
            span_id=ids[number],
            parent_span_id=parent,
            name=name,
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start_ns + number * 1000,
            end_time_unix_nano=start_ns + 900_000 - number * 1000,
        )
        span.attributes.extend(
            _kv(k, v) for k, v in {**attrs, sc.GEN_AI_CONVERSATION_ID: conv}.items()
        )
        spans.append(span)
    return spans


def export_bodies(sessions: Iterable[int], per_request: int) -> list[bytes]:
    """OTLP/protobuf trace requests holding whole sessions, ``per_request`` sessions each."""
    start = time.time_ns() - 60_000_000_000
    bodies: list[bytes] = []
    batch: list[Span] = []
    chosen = list(sessions)
    for position, index in enumerate(chosen, start=1):
        batch += session_spans(index, start + index * 1_000_000)
        if position % per_request == 0 or position == len(chosen):
            request = ExportTraceServiceRequest()
            resource = request.resource_spans.add()
            resource.resource.attributes.append(_kv("service.name", "scale-out"))
            resource.scope_spans.add().spans.extend(batch)
            bodies.append(request.SerializeToString())
            batch = []
    return bodies


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {name{labels}: value}; comments skipped."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


@dataclass
class Process:
    """One ``skillsight serve --role ...`` child."""

    name: str
    role: str
    proc: subprocess.Popen[str]
    api: str = ""
    otlp_http: str = ""
    output: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def metrics(self) -> dict[str, float]:
        response = httpx.get(self.api + "/metrics", timeout=30)
        response.raise_for_status()
        return parse_metrics(response.text)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.api + path, timeout=30)


class Fleet:
    """Child processes over one store; leaving stops them with SIGTERM (a graceful drain)."""

    def __init__(
        self, clickhouse_url: str, workdir: Path, env: Mapping[str, str] | None = None
    ) -> None:
        """``workdir`` holds each process's own folder (data, spool)."""
        self.url = clickhouse_url
        self.workdir = workdir
        self.env = {
            **os.environ,
            "SKILLSIGHT_EVAL_EVALUATORS": EVALUATORS,
            "SKILLSIGHT_EVAL_WARM_UP": "false",
            # failure clustering has its own benchmark; here it would only add model loading
            "SKILLSIGHT_CLUSTER_ENABLED": "false",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.processes: list[Process] = []

    def __enter__(self) -> Fleet:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(list(self.processes))

    def migrate(self) -> None:
        """``skillsight migrate`` once, before the roles start, as deploy/ does."""
        subprocess.run(
            [sys.executable, "-m", "skillsight.cli", "migrate", "--clickhouse", self.url],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )

    def start(self, *specs: tuple[str, str], timeout: float = 120.0) -> list[Process]:
        """Start ``(role, shard or "")`` processes together; return them once all are ready."""
        started = []
        for number, (role, shard) in enumerate(specs):
            command = [sys.executable, "-m", "skillsight.cli", "serve", "--role", role]
            command += ["--clickhouse", self.url, "--port", "0"]
            command += ["--otlp-http-port", "0", "--otlp-grpc-port", "0"]
            command += ["--shard", shard] if shard else []
            name = f"{role}-{len(self.processes) + number}"
            own = self.workdir / name
            env = {
                **self.env,
                "SKILLSIGHT_DATA_DIR": str(own / "data"),
                "SKILLSIGHT_SPOOL_DIR": str(own / "spool"),
            }
            proc = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
            )
            started.append(Process(name, role, proc))
        self.processes += started
        for process in started:
            self._await_ready(process, time.monotonic() + timeout)
        return started

    def _await_ready(self, process: Process, deadline: float) -> None:
        assert process.proc.stdout is not None
        ready = threading.Event()

        def read() -> None:
            assert process.proc.stdout is not None
            for line in process.proc.stdout:
                process.output.append(line)
                if line.startswith("SKILLSIGHT_READY "):
                    endpoints = json.loads(line.split(" ", 1)[1])
                    process.api, process.otlp_http = endpoints["api"], endpoints["otlp_http"]
                    ready.set()

        process.reader = threading.Thread(target=read, daemon=True)
        process.reader.start()
        if not ready.wait(max(0.0, deadline - time.monotonic())):
            raise RuntimeError(f"{process.name} did not start:\n" + "".join(process.output))

    def stop(self, processes: list[Process], timeout: float = 120.0) -> None:
        for process in processes:
            if process.proc.poll() is None:
                process.proc.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                process.proc.kill()
                process.proc.wait()
        for process in processes:
            if process.reader is not None:
                process.reader.join(10)
            if process.proc.stdout is not None:
                process.proc.stdout.close()
            if process in self.processes:
                self.processes.remove(process)

    def of(self, role: str) -> list[Process]:
        return [p for p in self.processes if p.role == role]

    def total(self, role: str, metric: str) -> float:
        return sum(p.metrics().get(metric, 0.0) for p in self.of(role))

    def scored(self, sessions: int) -> bool:
        """Whether the workers have scored ``sessions`` sessions; raises at the first session
        whose scores could not be written (waiting on would only run into the deadline)."""
        failed = self.total("worker", "skillsight_evaluation_store_failures_total")
        if failed:
            errors = [
                p.get("/healthz").json()["evaluation"]["last_error"] for p in self.of("worker")
            ]
            raise AssertionError(f"{failed:.0f} sessions could not be scored: {errors}")
        done = self.total("worker", "skillsight_evaluation_sessions_total") >= sessions
        return done and self.total("worker", "skillsight_evaluation_queued_sessions") == 0

    def wait(
        self,
        condition: Callable[[], bool],
        what: str,
        timeout: float,
        *,
        every: float = 0.5,
        on_poll: Callable[[], None] | None = None,
    ) -> float:
        """Poll ``condition`` until it holds; return the seconds it took."""
        started = time.monotonic()
        stop = threading.Event()
        while not condition():
            if on_poll is not None:
                on_poll()
            if time.monotonic() - started > timeout:
                raise AssertionError(f"{what} not within {timeout}s")
            stop.wait(every)
        return time.monotonic() - started


def send(collectors: list[Process], bodies: list[bytes], *, timeout: float = 600.0) -> int:
    """Post every body to a collector (each request, whole sessions, to one of them in turn, as
    the OTel Collector's traceID routing spreads traces); retry 429/503 after Retry-After.
    Returns the refusals retried."""
    retried = 0
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    with httpx.Client(timeout=60) as client:
        for number, body in enumerate(bodies):
            target = collectors[number % len(collectors)]
            while True:
                response = client.post(
                    target.otlp_http + "/v1/traces",
                    content=body,
                    headers={"content-type": "application/x-protobuf"},
                )
                if response.status_code == 200:
                    break
                if response.status_code not in (429, 503) or time.monotonic() > deadline:
                    response.raise_for_status()
                    raise RuntimeError(f"export refused: {response.status_code}")
                retried += 1
                pause.wait(float(response.headers.get("retry-after", "1")))
    return retried
