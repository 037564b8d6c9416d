"""Acknowledged means durable: ``kill -9`` twice mid-ingest, and every acknowledged span is
stored exactly once (issue 15).

Four exporters — the OpenTelemetry SDK's own OTLP/HTTP exporter, which retries connection errors,
429 and 503 with backoff, driven by a caller that exports a batch again until it succeeds, as a
careful processor does — send 50,000 unique spans in requests of 500 to a real ``skillsight
serve`` (fast path, ``SKILLSIGHT_ACK=spool``). The server is killed with SIGKILL twice while it
holds acknowledged rows not yet committed (a 2 s flush interval makes sure of that), and started
again on the same data folder and ports. A batch whose export succeeded is never sent again; so
if the spool lost one, the store would lack its spans. Loopback only; about a minute on two
loaded cores.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytestmark = pytest.mark.slow

SPANS, PER_REQUEST, EXPORTERS = 50_000, 500, 4
DEADLINE_S = 240.0


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


@contextmanager
def quiet_sdk_logs() -> Iterator[None]:
    """The exporter logs every retry while the server is down; the test expects them."""
    import logging

    logger = logging.getLogger("opentelemetry.exporter.otlp")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


class Server:
    """``skillsight serve`` on fixed ports, restartable on the same folder."""

    def __init__(self, data: Path, ports: list[int]) -> None:
        self.data, self.ports = data, ports
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self.api = f"http://127.0.0.1:{ports[0]}"
        self.otlp_http = f"http://127.0.0.1:{ports[1]}"

    def start(self) -> None:
        env = {
            **os.environ,
            "SKILLSIGHT_ACK": "spool",
            "SKILLSIGHT_FAST_PATH": "1",
            "SKILLSIGHT_FLUSH_INTERVAL_S": "2",
            "SKILLSIGHT_REBUILD_ENABLED": "0",
            "SKILLSIGHT_EVAL_ENABLED": "0",
        }
        command = [sys.executable, "-m", "skillsight.cli", "serve", "--data", str(self.data)]
        for flag, port in zip(
            ("--port", "--otlp-http-port", "--otlp-grpc-port"), self.ports, strict=True
        ):
            command += [flag, str(port)]
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            if line.startswith("SKILLSIGHT_READY "):
                break
        else:
            raise AssertionError("serve did not start:\n" + "".join(self.output[-40:]))
        self._reader = threading.Thread(target=self._drain, args=(self.proc,), daemon=True)
        self._reader.start()

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)

    def _reap(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        self._reader.join(10)
        self.proc.stdout.close()

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = httpx.get(self.api + "/healthz", timeout=30).json()
        return result

    def kill(self) -> int:
        assert self.proc is not None
        pid = self.proc.pid
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._reap()
        return pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._reap()


def sdk_batches() -> list[list[ReadableSpan]]:
    collected = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "crash-test"}))
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("crash")
    for i in range(SPANS // PER_REQUEST):
        with tracer.start_as_current_span(f"root-{i}"):
            for j in range(PER_REQUEST - 1):
                tracer.start_span(f"child-{i}-{j}").end()
    provider.shutdown()
    spans = list(collected.get_finished_spans())
    assert len(spans) == SPANS
    return [spans[i : i + PER_REQUEST] for i in range(0, SPANS, PER_REQUEST)]


def test_kill_9_twice_loses_no_acknowledged_span(tmp_path: Path) -> None:
    batches = sdk_batches()
    server = Server(tmp_path / "data", free_ports(3))
    acked: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + DEADLINE_S

    def exporter(indexes: list[int]) -> None:
        sdk = OTLPSpanExporter(endpoint=server.otlp_http + "/v1/traces", timeout=10)
        try:
            for index in indexes:
                while sdk.export(batches[index]) != SpanExportResult.SUCCESS:
                    if time.monotonic() > deadline:
                        raise AssertionError(f"batch {index} never acknowledged")
                with lock:
                    acked.append(index)
        except BaseException as exc:
            failures.append(repr(exc))
        finally:
            sdk.shutdown()

    def wait_acked(count: int) -> None:
        while len(acked) < count and not failures:
            assert time.monotonic() < deadline, f"only {len(acked)} batches acknowledged"
            time.sleep(0.01)

    server.start()
    killed: list[int] = []
    try:
        with quiet_sdk_logs():
            threads = [
                threading.Thread(target=exporter, args=(list(range(e, len(batches), EXPORTERS)),))
                for e in range(EXPORTERS)
            ]
            for thread in threads:
                thread.start()
            for share in (len(batches) // 3, 2 * len(batches) // 3):
                wait_acked(share)
                held = server.health()["spool"]["records"]
                killed.append(server.kill())
                acked_at_kill = len(acked)
                server.start()  # on the same folder and ports; the spool is replayed first
                assert held > 0 or acked_at_kill == len(batches)
            for thread in threads:
                thread.join(max(1.0, deadline - time.monotonic()))
        assert not failures, failures
        assert sorted(acked) == list(range(len(batches)))
        written = server.health()
        deadline_written = time.monotonic() + 60
        while written["queue_rows"] or written["spool"]["records"]:
            assert time.monotonic() < deadline_written, written
            time.sleep(0.1)
            written = server.health()
        stats = httpx.get(server.api + "/api/v1/stats", timeout=30).json()["spans"]
        sample = httpx.get(
            server.api + "/api/v1/spans",
            params={"trace_id": format(batches[17][0].context.trace_id, "032x"), "limit": 5000},
            timeout=30,
        ).json()
    finally:
        server.stop()
    assert stats["spans"] == SPANS  # every acknowledged span, none missing, none extra
    replays = [line for line in server.output if "replaying" in line and "spooled requests" in line]
    assert len(replays) == 2, "".join(server.output[-60:])  # both restarts found work to redo
    assert stats["rows"] >= SPANS  # replays of requests committed just before a kill: merged away
    assert len(sample) == PER_REQUEST == len({s["span_id"] for s in sample})  # read once each
    # the fast path's and the inserts' scratch folders (skillsight-<kind>-<pid>-…), on tmpfs
    # or in the temporary folder: the restarted server swept the killed ones'
    leftover = [
        path
        for parent in (Path("/dev/shm"), Path(tempfile.gettempdir()))
        for kind in ("fastpath", "insert")
        for path in parent.glob(f"skillsight-{kind}-*")
        if path.name.split("-")[2] in {str(pid) for pid in killed}
    ]
    assert not leftover, f"scratch folders of killed servers left behind: {leftover}"
