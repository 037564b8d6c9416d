"""``python -m benchmarks scale-out``: activations evaluated per second with 1, 2 and 3 workers
on the same store, and spans per collector CPU-second on the way in.

For each worker count: a fresh database; generated sessions (agent span, one skill activation,
one tool call) sent over OTLP/HTTP to one collector (``serve --role collector``) and written;
the collector stopped; then the workers (``serve --role worker --shard i/N``) started together,
each rebuilding its share of the sessions and scoring what it rebuilt with the cheap
deterministic evaluators. Timed from the last worker being ready (their counters then are
subtracted) to every session scored. CPU seconds are read from /proc for the workers and for
the store's process, so the report says where the time went: when the store's CPU grows
to a core while the workers' does not, the store is the limit.

The store is the chdb-backed ClickHouse HTTP endpoint of the test suite (one process that runs
one statement at a time), or ``--clickhouse URL`` for a real server.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.eval import _machine
from benchmarks.scale_out_fleet import (
    EVALUATORS,
    SPANS_PER_SESSION,
    Fleet,
    export_bodies,
    send,
)

_SCORED = "skillsight_evaluation_sessions_total"
_ACTIVATIONS = "skillsight_evaluation_activations_total"
_WRITTEN = 'skillsight_rows_written_total{signal="traces"}'
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc); 0 where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def run_scale_out_bench(
    *,
    sessions: int,
    worker_counts: tuple[int, ...],
    clickhouse: str | None,
    console: Console,
) -> dict[str, Any]:
    machine = _machine()
    console.print(
        f"machine: {machine['cpus']} CPUs, load average {machine['load_average_1m']} at the "
        f"start; {sessions} sessions ({SPANS_PER_SESSION} spans, 1 activation each), "
        f"evaluators: {EVALUATORS}"
    )
    report: dict[str, Any] = {"machine": machine, "sessions": sessions, "runs": []}
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scale-out-")))
        store_pid = 0
        if clickhouse is None:
            from tests.support.chdb_http import ChdbHttpServer

            server = stack.enter_context(ChdbHttpServer(work / "clickhouse"))
            store_pid = getattr(getattr(server, "_process", None), "pid", 0)
        for workers in worker_counts:
            database = f"scale_out_{workers}_{int(time.time())}"
            url = clickhouse or server.url(database)
            if clickhouse:
                url = clickhouse.rsplit("/", 1)[0] + "/" + database
            run = _one_run(url, work / database, sessions, workers, store_pid, console)
            report["runs"].append(run)
    base = report["runs"][0]["activations_per_s"] if report["runs"] else 0.0
    table = Table(box=None, header_style="bold")
    for column in (
        "workers",
        "seconds",
        "activations/s",
        "speed-up",
        "worker CPU-s",
        "store CPU-s",
        "activations per worker CPU-s",
    ):
        table.add_column(column, justify="right")
    for run in report["runs"]:
        run["speed_up"] = round(run["activations_per_s"] / base, 2) if base else 0.0
        table.add_row(
            str(run["workers"]),
            f"{run['seconds']:.1f}",
            f"{run['activations_per_s']:.0f}",
            f"{run['speed_up']:.2f}x",
            f"{run['worker_cpu_s']:.1f}",
            f"{run['store_cpu_s']:.1f}" if store_pid else "-",
            f"{run['activations_per_worker_cpu_s']:.0f}",
        )
    console.print(table)
    ingest = report["runs"][0]["ingest"] if report["runs"] else {}
    if ingest:
        console.print(
            f"ingest through one collector (server transport): {ingest['spans_per_s']:.0f} spans/s "
            f"wall, {ingest['spans_per_collector_cpu_s']:.0f} spans per collector CPU-s "
            f"(store CPU-s {ingest['store_cpu_s']:.1f})"
        )
    report["machine"]["load_average_1m_end"] = round(os.getloadavg()[0], 2)
    console.print(f"load average at the end: {report['machine']['load_average_1m_end']}")
    return report


def _one_run(
    url: str, folder: Path, sessions: int, workers: int, store_pid: int, console: Console
) -> dict[str, Any]:
    bodies = export_bodies(range(sessions), per_request=100)
    with Fleet(url, folder) as fleet:
        fleet.migrate()
        [collector] = fleet.start(("collector", ""))
        store_before, collector_before = cpu_seconds(store_pid), cpu_seconds(collector.proc.pid)
        started = time.monotonic()
        send([collector], bodies)
        fleet.wait(
            lambda: fleet.total("collector", _WRITTEN) >= sessions * SPANS_PER_SESSION,
            "spans written",
            timeout=600,
            every=0.1,
        )
        ingest_s = time.monotonic() - started
        ingest = {
            "seconds": round(ingest_s, 2),
            "spans_per_s": sessions * SPANS_PER_SESSION / ingest_s,
            "spans_per_collector_cpu_s": sessions
            * SPANS_PER_SESSION
            / max(cpu_seconds(collector.proc.pid) - collector_before, 1e-9),
            "store_cpu_s": cpu_seconds(store_pid) - store_before,
        }
        fleet.stop([collector])
        crew = fleet.start(*[("worker", f"{i}/{workers}") for i in range(workers)])
        done_before = fleet.total("worker", _SCORED)
        activations_before = fleet.total("worker", _ACTIVATIONS)
        cpu_before = sum(cpu_seconds(p.proc.pid) for p in crew)
        store_before = cpu_seconds(store_pid)
        started = time.monotonic()
        fleet.wait(
            lambda: fleet.scored(sessions),
            "every session scored",
            timeout=1800,
            every=0.2,
        )
        seconds = time.monotonic() - started
        activations = fleet.total("worker", _ACTIVATIONS) - activations_before
        worker_cpu = sum(cpu_seconds(p.proc.pid) for p in crew) - cpu_before
        run = {
            "workers": workers,
            "seconds": round(seconds, 2),
            "sessions_scored_before_timing": done_before,
            "activations": activations,
            "activations_per_s": round(activations / seconds, 1),
            "worker_cpu_s": round(worker_cpu, 2),
            "store_cpu_s": round(cpu_seconds(store_pid) - store_before, 2),
            "activations_per_worker_cpu_s": round(activations / max(worker_cpu, 1e-9), 1),
            "ingest": ingest,
        }
        console.print(
            f"{workers} worker(s): {activations:.0f} activations in {seconds:.1f} s",
            highlight=False,
        )
        return run
