"""``skillsight bench inserts``: what the embedded store's writes cost, spooled and not.

The embedded store hands ClickHouse each insert's batch as an Arrow stream in a scratch file
(``file()``), and goes through chdb's ``Python()`` table function only when no file can be
written. This writes the same batches both ways, alternated in one process on one store folder
(two connections: one spooling, one not), so load on the machine and ClickHouse's background
merges fall on both alike, and reports the median CPU milliseconds of each write:

- a scheduler's hand-over of 64 new activations: their evaluations, the digests, the scorecard
  rows and their marks (four inserts);
- one session's rebuild (20 steps): its activations, their day marks, its trajectory (three);
- a rebuild pass's write of 200 such sessions (three);
- 5,000 decoded spans through the Python decoder's insert (one).

Each hand-over's rows are written both ways (the second write replaces the first), so the
evaluations table ends with each hand-over's rows once.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks.eval import CHEAP, synthetic_activations
from benchmarks.rebuild import insert_sessions, raw_tables
from benchmarks.sessions import synthetic_session
from skillsight.evaluators.scheduler import EvaluationScheduler, score_activations
from skillsight.rebuild.finalizer import default_rebuild
from skillsight.store import EmbeddedStore, SessionRebuild, Store

PROJECT = "bench"
_STAMP_US = 1_767_225_600_000_000  # the evaluations' stamp: 2026-01-01


def _evaluations(columns: dict[str, list[Any]]) -> Callable[[Store], object]:
    return lambda store: store.evaluations.write_columns(PROJECT, columns)


def _rebuilds(items: list[SessionRebuild]) -> Callable[[Store], object]:
    return lambda store: store.rebuilds.write(items)


def _spans(table: pa.Table) -> Callable[[Store], object]:
    return lambda store: store.spans.insert(table)


def _workloads(
    store: Store, rounds: int, sessions: int, span_count: int
) -> tuple[dict[str, list[Callable[[Store], object]]], int]:
    """Per workload, one write a round, to run on either store; and the evaluation rows the
    hand-overs hold."""
    found, _ = synthetic_activations(64 * rounds)
    scheduler = EvaluationScheduler(store, evaluators=CHEAP)
    handovers = []
    for n in range(rounds):
        batch = [a.model_copy(update={"project_id": PROJECT}) for a in found[n * 64 : (n + 1) * 64]]
        scored = score_activations(
            batch, scheduler.assembler, registry=scheduler.registry, chosen=scheduler.policies
        )
        handovers.append(scored.columns(_STAMP_US))
    keys = insert_sessions(store, PROJECT, 20, 5, list(range(max(sessions, rounds))))
    rebuild = default_rebuild()
    rebuilt = []
    for key in keys:
        read_spans, read_events = store.sessions.rows(PROJECT, key)
        result = rebuild(read_spans, read_events, project_id=PROJECT, session_id=key)
        rebuilt.append(SessionRebuild(PROJECT, result))
    spans: list[dict[str, Any]] = []
    seed = 10_000
    while len(spans) < span_count:
        more, _ = synthetic_session(50, skill_every=5, seed=seed, session_id=f"spans-{seed}")
        spans += more
        seed += 1
    span_table, _ = raw_tables(PROJECT, spans[:span_count], [])
    writes: dict[str, list[Callable[[Store], object]]] = {
        "hand-over of 64 activations (4 inserts)": [_evaluations(columns) for columns in handovers],
        "one session's rebuild (3 inserts)": [_rebuilds([item]) for item in rebuilt[:rounds]],
        f"a pass of {sessions:,} sessions' rebuilds (3 inserts)": [
            _rebuilds(rebuilt[:sessions]) for _ in range(rounds)
        ],
        f"{span_count:,} decoded spans (1 insert)": [_spans(span_table) for _ in range(rounds)],
    }
    return writes, sum(len(columns["activation_id"]) for columns in handovers)


def run_insert_bench(
    *, rounds: int = 30, sessions: int = 200, spans: int = 5_000
) -> dict[str, Any]:
    """Median CPU ms of each workload's write through the spooled file and through
    ``Python()``, alternated round by round, and their ratio (2 to 200 rounds); the
    evaluation rows the hand-overs left, read back."""
    rounds = max(2, min(rounds, 200))
    report: dict[str, Any] = {"rounds": rounds, "writes": {}}
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-inserts-") as tmp:
        folder = Path(tmp) / "store"
        spooled = EmbeddedStore(folder)
        unspooled = EmbeddedStore(folder, spool=False)
        try:
            spooled.migrate()
            workloads, report["handed_rows"] = _workloads(spooled, rounds, sessions, spans)
            for name, writes in workloads.items():
                cpu: dict[str, list[float]] = {"file": [], "python": []}
                for n, write in enumerate(writes):
                    pair = [("file", spooled), ("python", unspooled)]
                    for way, store in pair if n % 2 else pair[::-1]:
                        started = time.process_time()
                        write(store)
                        cpu[way].append((time.process_time() - started) * 1000)
                file_ms, python_ms = (statistics.median(cpu[w]) for w in ("file", "python"))
                report["writes"][name] = {
                    "file_ms": round(file_ms, 2),
                    "python_ms": round(python_ms, 2),
                    "ratio": round(file_ms / python_ms, 3),
                }
            # each store wrote its own way only
            assert spooled.inserts_unspooled == 0 and unspooled.inserts_spooled == 0
            assert spooled.inserts_spooled > 0 and unspooled.inserts_unspooled > 0
            (stored,) = spooled.query("SELECT count() AS n FROM evaluations FINAL")
            report["evaluation_rows"] = int(stored["n"])
        finally:
            unspooled.close()
            spooled.close()
    return report
