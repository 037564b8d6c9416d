"""``skillsight bench ingest``: OTLP/HTTP protobuf into a fresh embedded server.

The server runs as its own process, so its CPU time is measured apart from the load generator's:
spans per server CPU-second is the per-core rate. Spans are counted in ClickHouse, not at the
socket: the clock stops when the store holds every span sent.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from rich.console import Console

from benchmarks.traces import export_requests
from skillsight.errors import SkillsightError

_TICK = os.sysconf("SC_CLK_TCK")
_POLL_MIN_S = 0.02
_POLL_MAX_S = 0.5


def _poll_wait(left: int, health: dict[str, Any], elapsed: float) -> float:
    """How long to wait before asking the server again whether every span is in.

    Each poll is an API request that costs the server a few CPU-milliseconds, counted in its
    CPU time like the ingest itself: polling every 20 ms would add ~10% to a run of seconds.
    So wait half the time the rows left should take at the rate so far, within bounds: few
    polls while the writer is busy, frequent ones near the end, where they set the clock.
    """
    written = int(health["written_spans"])
    if written <= 0 or left <= 0:
        return _POLL_MIN_S
    return min(_POLL_MAX_S, max(_POLL_MIN_S, left / (written / elapsed) / 2))


def _stat(path: Path) -> tuple[str, list[str]]:
    """A /proc stat file: the command name and the fields after it."""
    text = path.read_text()
    head, tail = text.rsplit(")", 1)
    return head.split("(", 1)[1], tail.split()


def _cpu_seconds(pid: int) -> float:
    fields = _stat(Path(f"/proc/{pid}/stat"))[1]
    return (int(fields[11]) + int(fields[12])) / _TICK


def _usage(pid: int) -> dict[str, float]:
    """User and system CPU-seconds and minor page faults of the process so far."""
    fields = _stat(Path(f"/proc/{pid}/stat"))[1]
    return {
        "user_s": int(fields[11]) / _TICK,
        "sys_s": int(fields[12]) / _TICK,
        "minor_faults": float(fields[7]),
    }


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU-seconds of the process's live threads, summed by thread name.

    ClickHouse names its threads after their pools; Python's threads all carry the
    interpreter's name. A thread that ended took its time out of this view (not out of the
    process's total), so the difference between two views is a profile, not an account.
    """
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name, fields = _stat(task / "stat")
        except OSError:
            continue  # the thread ended meanwhile
        name = name.strip() or "(unnamed)"
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / _TICK
    return out


def _profile(before: dict[str, float], after: dict[str, float], spans: int) -> str:
    """CPU-seconds per 100,000 spans by thread name, largest first."""
    per = {k: (v - before.get(k, 0.0)) * 100_000 / spans for k, v in after.items()}
    shown = sorted(((v, k) for k, v in per.items() if v >= 0.005), reverse=True)
    return ", ".join(f"{k} {v:.2f}" for v, k in shown)


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


class _Server:
    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skillsight.cli",
                "serve",
                "--data",
                str(data_dir),
                "--port",
                "0",
                "--otlp-http-port",
                "0",
                "--otlp-grpc-port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **env},
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 120
        self.endpoints: dict[str, str] = {}
        for line in self.proc.stdout:
            if line.startswith("SKILLSIGHT_READY "):
                self.endpoints = json.loads(line.split(" ", 1)[1])
                break
            if time.monotonic() > deadline:
                break
        if not self.endpoints:
            self.stop()
            raise SkillsightError("the benchmark server did not start")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for _ in self.proc.stdout:
            pass

    def get(self, path: str) -> Any:
        url = urlparse(self.endpoints["api"])
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
        conn.request("GET", path)
        body = conn.getresponse().read()
        conn.close()
        return json.loads(body)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _send_all(
    endpoint: str,
    bodies: list[bytes],
    stats: dict[str, int],
    lock: threading.Lock,
    latencies: list[float],
) -> None:
    url = urlparse(endpoint)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
    headers = {"Content-Type": "application/x-protobuf"}
    for body in bodies:
        while True:
            sent = time.perf_counter()
            conn.request("POST", "/v1/traces", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                latencies.append(time.perf_counter() - sent)
                break
            if response.status in (429, 503):
                with lock:
                    stats["retries"] += 1
                time.sleep(float(response.getheader("Retry-After", "1")) / 10)
                continue
            with lock:
                stats["failed_requests"] += 1
            break
    conn.close()


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def run_ingest_bench(
    *,
    spans_total: int,
    senders: int,
    batch: int,
    console: Console,
    fast_path: bool = True,
    ack: str = "spool",
) -> dict[str, Any]:
    """Run the benchmark and print its report; returns the figures.

    ``ack`` is the server's ``SKILLSIGHT_ACK``: ``spool`` (answered once fsync'd to the spool),
    ``commit`` (once committed: group commit), ``memory`` (once queued: the rate before
    durable acknowledgements). Session rebuilds are off in the server: they are measured by
    ``skillsight bench rebuild`` and would otherwise land in this benchmark's CPU time.
    """
    path = "fast path" if fast_path else "Python decoder"
    console.print(f"generating {spans_total} spans in requests of {batch} ({path}, ack={ack})…")
    bodies = list(export_requests(spans_total, batch))
    payload_mb = sum(len(b) for b in bodies) / 1e6
    env = {
        "SKILLSIGHT_FAST_PATH": "1" if fast_path else "0",
        "SKILLSIGHT_REBUILD_ENABLED": "0",
        "SKILLSIGHT_ACK": ack,
    }
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-") as tmp:
        server = _Server(Path(tmp) / "data", env)
        try:
            pid = server.proc.pid
            cpu0 = _cpu_seconds(pid)
            usage0, threads0 = _usage(pid), _thread_cpu(pid)
            stats = {"retries": 0, "failed_requests": 0}
            lock = threading.Lock()
            latencies: list[float] = []
            shares = [bodies[i::senders] for i in range(senders)]
            started = time.perf_counter()
            threads = [
                threading.Thread(
                    target=_send_all,
                    args=(server.endpoints["otlp_http"], s, stats, lock, latencies),
                )
                for s in shares
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            acked = time.perf_counter() - started
            while True:
                health = server.get("/healthz")
                if health["queue_rows"] == 0 and health["written_spans"] >= spans_total:
                    break
                elapsed = time.perf_counter() - started
                if elapsed > 600:
                    break
                time.sleep(_poll_wait(spans_total - health["written_spans"], health, elapsed))
            committed_s = time.perf_counter() - started
            server_cpu = _cpu_seconds(pid) - cpu0
            usage1, threads1 = _usage(pid), _thread_cpu(pid)
            counts = server.get("/api/v1/stats")
            peak_rss = _peak_rss_mb(pid)
        finally:
            server.stop()
    stored = int(counts["spans"]["spans"])
    report = {
        "path": path,
        "ack": ack,
        "spans_sent": spans_total,
        "spans_stored": stored,
        "spans_lost": spans_total - stored,
        "duplicate_rows": int(counts["spans"]["rows"]) - stored,
        "requests": len(bodies),
        "payload_mb": round(payload_mb, 1),
        "seconds_to_acknowledge": round(acked, 3),
        "seconds_to_commit": round(committed_s, 3),
        "committed_spans_per_s": round(stored / committed_s),
        "server_cpu_s": round(server_cpu, 2),
        "committed_spans_per_cpu_s": round(stored / server_cpu) if server_cpu else None,
        "server_user_s": round(usage1["user_s"] - usage0["user_s"], 2),
        "server_sys_s": round(usage1["sys_s"] - usage0["sys_s"], 2),
        "server_minor_faults": int(usage1["minor_faults"] - usage0["minor_faults"]),
        "cpu_s_per_100k_by_thread": _profile(threads0, threads1, stored or 1),
        "answer_p50_ms": round(_percentile(latencies, 0.5) * 1000, 1),
        "answer_p99_ms": round(_percentile(latencies, 0.99) * 1000, 1),
        "retries_429_503": stats["retries"],
        "failed_requests": stats["failed_requests"],
        "server_peak_rss_mb": round(peak_rss),
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
    }
    for key, value in report.items():
        console.print(f"  {key:28s} {value}", highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"[bold]{report['committed_spans_per_cpu_s']} committed spans/s per core[/] "
        f"({report['committed_spans_per_s']} spans/s wall), {report['spans_lost']} lost",
        highlight=False,
    )
    return report
