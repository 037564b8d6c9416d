"""``skillsight bench rebuild --history``: the rebuild pass in a project that has history.

``run_rebuild_bench`` rebuilds sessions in projects of their own, so what a read costs in a
project that has stored months of sessions does not show there. This loads ``history`` sessions
into one project (inserts of 1,000 sessions, as the ingest writer batches rows, then merged
into one part, as an old project's rows end up), then times passes over fresh sessions of that
project as :func:`run_rebuild_bench` does, and one session's read on its own.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.rebuild import insert_sessions
from skillsight.rebuild.finalizer import default_rebuild, rebuild_sessions
from skillsight.store import EmbeddedStore

PROJECT = "history"
_INSERT = 1_000  # sessions per insert while loading the history


def run_history_bench(
    *, history: int = 20_000, sessions: int = 200, session_steps: int = 20, repeat: int = 5
) -> dict[str, Any]:
    """Activations per CPU-second of a pass over ``sessions`` fresh sessions in a project
    holding ``history`` sessions (median of ``repeat`` passes), and the CPU of one fresh
    session's read (``Sessions.rows_of``, median over the passes) beside the same read before
    the history was loaded."""
    rebuild = default_rebuild()
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-history-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            alone = _read_cpu(store, insert_sessions(store, PROJECT, session_steps, 5, [1])[0])
            for start in range(0, history, _INSERT):
                batch = list(range(10**6 + start, 10**6 + min(history, start + _INSERT)))
                insert_sessions(store, PROJECT, session_steps, 5, batch)
            for table in ("spans", "events"):
                store.execute(f"OPTIMIZE TABLE {table} FINAL")
            rates: list[float] = []
            reads: list[float] = []
            for run in range(repeat):
                seeds = [2 * 10**6 + run * sessions + i for i in range(sessions)]
                keys = [
                    (PROJECT, key, 0)
                    for key in insert_sessions(store, PROJECT, session_steps, 5, seeds)
                ]
                cpu = time.process_time()
                outcomes, _ = rebuild_sessions(store, keys, rebuild=rebuild)
                pass_cpu = time.process_time() - cpu
                built = sum(len(o.rebuilt.activations) for o in outcomes if o.rebuilt)
                rates.append(built / pass_cpu)
                del outcomes
                reads.append(_read_cpu(store, keys[0][1]))
        finally:
            store.close()
    return {
        "history_sessions": history,
        "sessions": sessions,
        "activations_per_cpu_s_pass": round(statistics.median(rates)),
        "one_session_read_ms": round(statistics.median(reads) * 1000, 1),
        "one_session_read_ms_without_history": round(alone * 1000, 1),
    }


def _read_cpu(store: EmbeddedStore, key: str) -> float:
    """CPU seconds of one read of this session (the median of three)."""
    runs = []
    for _ in range(3):
        cpu = time.process_time()
        store.sessions.rows_of(PROJECT, [key])
        runs.append(time.process_time() - cpu)
    return sorted(runs)[1]
