"""``skillsight bench rebuild --long``: a long turn whose rows arrive in batches.

One synthetic Claude Code turn of ``steps`` steps (:mod:`benchmarks.sessions`) reaches the store
in ``batches`` batches, its root span (sent when the turn ends) last. After each batch the
session is due, as in the finalizer past ``max_wait_s``: it is rebuilt provisionally for the
display under the finalizer's policy — again only once its spans have grown
``provisional_growth`` times (the finalizer also waits ``provisional_every_s`` between two; this
replays the worst case, every batch due at once), and below that mark, while the turn waits for
its root span, it is held without a look at its span ids, as the finalizer does. The root makes
it complete and it is rebuilt settled. The total CPU of that rebuild work (store reads, looks,
rebuilds, writes; not the inserts nor the discovery queries) is compared with one rebuild of the
whole session.
``per_batch`` also replays the policy before (a provisional rebuild after every batch),
quadratic in the turn's length.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.rebuild import raw_tables
from benchmarks.sessions import synthetic_session
from skillsight.rebuild.finalizer import (
    RebuildFn,
    SessionRowCache,
    SpanTally,
    default_rebuild,
    rebuild_sessions,
)
from skillsight.store import EmbeddedStore, Store

PROJECT = "long"


def _batches(steps: int, batches: int, key: str) -> tuple[list[Any], Any]:
    """The turn's rows in arrival order, cut into batches, and its root span's rows."""
    spans, events = synthetic_session(steps, skill_every=10, seed=11, session_id=key)
    root = [s for s in spans if not s["parent_span_id"]]
    rows = sorted(
        [("span", s, int(s["start_time_unix_nano"])) for s in spans if s["parent_span_id"]]
        + [("event", e, int(e["time_unix_nano"])) for e in events],
        key=lambda r: r[2],
    )
    size = -(-len(rows) // batches)
    out = []
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        out.append(
            raw_tables(
                PROJECT,
                [r[1] for r in chunk if r[0] == "span"],
                [r[1] for r in chunk if r[0] == "event"],
            )
        )
    return out, raw_tables(PROJECT, root, [])


def _insert(store: Store, tables: Any) -> None:
    spans, events = tables
    if spans.num_rows:
        store.spans.insert(spans)
    if events.num_rows:
        store.events.insert(events)


def _replay(
    batches: list[Any], root: Any, *, growth: float | None, cached: bool = True
) -> dict[str, Any]:
    """CPU seconds of the rebuild work; ``growth`` None: a provisional rebuild per batch.

        The bounded policy is the finalizer's: below the mark of a turn still waiting for its root
        span, no look at its span ids, on the counts of new span rows and root spans that the
        discovery query returns (:class:`SpanTally`). That query runs after every commit
        whatever the policy, so it is not counted (the two counts cost nothing measurable: 24.2
        against 22.6 ms median, alternated, at 1-100 batches of this turn). ``cached``: the rebuilds
    share a row cache, as the finalizer's do (:class:`SessionRowCache`; no overlap re-read: one
    writer), and skillsight's own rebuild (``rebuild=None``), which keeps what a rebuild of the
    next prompt would extend, as the finalizer's does."""
    rebuild = default_rebuild()
    key = "00000000-0000-4000-8000-00000000long"
    ident = (PROJECT, key)
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-long-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            cpu, provisional, looks, watermark, shown, through = 0.0, 0, 0, 0, 0, 0
            tally: SpanTally | None = None
            cache = SessionRowCache(overlap_us=0) if cached else None
            for tables in batches:
                _insert(store, tables)
                for arrival in store.sessions.arrivals(watermark):
                    watermark = max(watermark, arrival.last_ingested_us)
                    if arrival.session_key == key:
                        through = arrival.last_ingested_us
                    if tally is not None and arrival.session_key == key:
                        tally.arrived(arrival.span_rows, arrival.root_spans)
                hold = {ident: math.ceil(shown * growth)} if growth and shown else {}
                started = time.process_time()
                outcomes, _ = rebuild_sessions(
                    store,
                    [(PROJECT, key, through)],
                    provisional={ident},
                    hold_below=hold,
                    held={ident} if tally and hold and tally.held(hold[ident]) else set(),
                    cache=cache,
                )
                cpu += time.process_time() - started
                outcome = outcomes[0]
                looks += outcome.looked
                if outcome.looked or outcome.spans:
                    tally = SpanTally(outcome.spans, outcome.waits_for_root)
                if outcome.rebuilt is not None:
                    provisional, shown = provisional + 1, outcome.spans
            _insert(store, root)
            through = max(a.last_ingested_us for a in store.sessions.arrivals(watermark))
            started = time.process_time()
            outcomes, _ = rebuild_sessions(
                store,
                [(PROJECT, key, through)],
                require_complete={ident},
                cache=cache,
            )
            cpu += time.process_time() - started
            assert outcomes[0].complete and outcomes[0].rebuilt is not None
            one = whole_rebuild_cpu_s(store, PROJECT, key, rebuild)
        finally:
            store.close()
    return {
        "provisional_rebuilds": provisional,
        "span_id_looks": looks,
        "total_cpu_s": round(cpu, 2),
        "one_rebuild_cpu_s": round(one, 2),
        "ratio": round(cpu / one, 2),
    }


def whole_rebuild_cpu_s(store: Store, project_id: str, key: str, rebuild: RebuildFn) -> float:
    """CPU seconds of one rebuild of the whole session, all its rows in, by a pass without a
    row cache (the median of three)."""
    runs = []
    for _ in range(3):
        started = time.process_time()
        rebuild_sessions(store, [(project_id, key, 0)], rebuild=rebuild)
        runs.append(time.process_time() - started)
    return sorted(runs)[1]


def run_long_session_bench(
    *, steps: int = 10_000, batches: int = 100, per_batch: bool = False, growth: float = 2.0
) -> dict[str, Any]:
    """The bounded policy (and, ``per_batch``, the one before) over the same arrival."""
    parts, root = _batches(steps, batches, "00000000-0000-4000-8000-00000000long")
    report: dict[str, Any] = {
        "steps": steps,
        "batches": len(parts),
        "bounded": _replay(parts, root, growth=growth),
    }
    if per_batch:
        report["per_batch"] = _replay(parts, root, growth=None)
    return report
