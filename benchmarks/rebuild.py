"""``skillsight bench rebuild``: how fast a completed session becomes trajectory + activations.

On a fresh embedded store (chdb in this process, so process CPU time counts ClickHouse's work
too) it measures, for one long session (default 1,000 steps):

- the algorithm alone (``rebuild_session`` on rows already read), and
- the finalizer's whole pass: read the session's rows from the store, rebuild, write the
  trajectory and activation rows;

then the throughput of the finalizer's pass over many short sessions, as activations rebuilt per
CPU-second (per core): the median of ``repeat`` passes, each over sessions of its own, with the
range (one pass moves by ±10% on an idle machine). Sessions are synthetic rows shaped like
Claude Code's native telemetry (:mod:`benchmarks.sessions`), inserted through the store's
normal raw-row insert so that normalization runs as for real ingest.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from benchmarks.sessions import synthetic_session
from skillsight.rebuild.finalizer import (
    RebuildFn,
    SessionRowCache,
    default_rebuild,
    gc_paused,
    rebuild_sessions,
)
from skillsight.store import EmbeddedStore, RebuildResult, SessionRows, Store
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA, event_columns, span_columns

_SPAN_SCALARS = ("trace_id", "span_id", "parent_span_id", "name", "kind", "status_code")


def raw_tables(
    project_id: str, spans: list[dict[str, Any]], events: list[dict[str, Any]]
) -> tuple[pa.Table, pa.Table]:
    """Normalized-looking rows back into the raw columns the decoders produce."""
    span_cols = span_columns()
    for span in spans:
        data = span_cols.data
        data["project_id"].append(project_id)
        for name in _SPAN_SCALARS:
            data[name].append(span[name])
        data["start_ns"].append(int(span["start_time_unix_nano"]))
        data["end_ns"].append(int(span["end_time_unix_nano"]))
        data["status_message"].append(span["status_message"])
        data["scope_name"].append(span["scope_name"])
        data["scope_version"].append("")
        data["span_events"].append(span["span_events"])
        data["links"].append(span["links"])
        _attributes(span_cols, span["attributes"], span["resource_attributes"])
    event_cols = event_columns()
    for event in events:
        data = event_cols.data
        data["project_id"].append(project_id)
        data["record_id"].append(event["record_id"])
        data["time_ns"].append(int(event["time_unix_nano"]))
        data["observed_ns"].append(int(event["time_unix_nano"]))
        data["trace_id"].append(event["trace_id"])
        data["span_id"].append(event["span_id"])
        data["severity_number"].append(int(event["severity_number"]))
        data["severity_text"].append(event["severity_text"])
        data["event_name"].append(event["event_name"])
        data["body"].append(event["body"])
        data["scope_name"].append(event["scope_name"])
        attributes = {"event.name": event["event_name"].removeprefix("claude_code.")}
        _attributes(event_cols, {**attributes, **event["attributes"]}, event["resource_attributes"])
    return span_cols.to_arrow(SPAN_SCHEMA), event_cols.to_arrow(EVENT_SCHEMA)


def _attributes(columns: Any, attributes: dict[str, str], resource: dict[str, str]) -> None:
    columns.add_list("attr_keys", list(attributes))
    columns.add_list("attr_values", [str(v) for v in attributes.values()])
    columns.add_list("res_keys", list(resource))
    columns.add_list("res_values", [str(v) for v in resource.values()])


def _insert_session(store: Store, project_id: str, steps: int, skill_every: int, seed: int) -> str:
    return insert_sessions(store, project_id, steps, skill_every, [seed])[0]


def insert_sessions(
    store: Store, project_id: str, steps: int, skill_every: int, seeds: list[int]
) -> list[str]:
    """Sessions of these seeds in one insert per table (as the ingest writer batches rows)."""
    keys, spans, events = [], [], []
    for seed in seeds:
        keys.append(f"00000000-0000-4000-8000-{seed:012d}")
        more_spans, more_events = synthetic_session(
            steps, skill_every=skill_every, seed=seed, session_id=keys[-1]
        )
        spans += more_spans
        events += more_events
    span_table, event_table = raw_tables(project_id, spans, events)
    store.spans.insert(span_table)
    store.events.insert(event_table)
    return keys


def _collector_paused(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run as a rebuild pass runs the algorithm: with the cyclic garbage collector
    paused (``rebuild_sessions`` pauses it). Measured without, the algorithm alone paid for
    collections the pass never makes (0.93-1.67 CPU-s for the same 200 sessions, against
    0.75-1.0 paused) and came out slower than the pass around it."""

    def paused() -> object:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn()
        finally:
            if was_enabled:
                gc.enable()

    return paused


def _rebuild_all(
    rebuild: RebuildFn, project: str, rows: list[SessionRows], keys: list[str]
) -> list[RebuildResult]:
    return [
        rebuild(spans, events, project_id=project, session_id=key)
        for (spans, events), key in zip(rows, keys, strict=True)
    ]


def _service_pass_cpu(store: Store, project: str, steps: int, seeds: list[int]) -> float:
    """CPU of a pass over fresh copies of the same sessions (in one insert) as the finalizer
    runs one: its row cache (the sessions read whole and kept, their completeness tallied) and
    skillsight's own rebuild, the collector paused until its results are dropped, and the
    collection after it counted (the pass's own figure leaves the release of its results out
    of its clock)."""
    inserted = insert_sessions(store, project, steps, 5, seeds)
    found = {a.session_key: a.last_ingested_us for a in store.sessions.arrivals(0)}
    keys = [(project, key, found.get(key, 0)) for key in inserted]  # discovery: not counted
    cache = SessionRowCache()
    cpu = time.process_time()
    with gc_paused():
        outcomes, _ = rebuild_sessions(store, keys, cache=cache)
        del outcomes
    gc.collect(0)
    return time.process_time() - cpu


def _timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def run_rebuild_bench(
    *,
    steps: int = 1000,
    skill_every: int = 10,
    repeat: int = 5,
    sessions: int = 200,
    session_steps: int = 20,
    batched: bool = True,
    console: Console | None = None,
) -> dict[str, Any]:
    """Measure and print; returns the numbers (for ``--json`` and tests).

    ``batched``: the many short sessions arrive in one insert per table, as the ingest writer
    batches rows; otherwise two inserts per session, whose background merges in ClickHouse
    then run during the timed pass and count in its CPU time.
    """
    console = console or Console()
    rebuild = default_rebuild()
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-rebuild-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            long_session = _insert_session(store, "bench", steps, skill_every, seed=1)
            spans, events = store.sessions.rows("bench", long_session)
            result = rebuild(spans, events, project_id="bench", session_id=long_session)
            activations = len(result.activations)
            algorithm_s, _ = _timed(
                _collector_paused(
                    lambda: rebuild(spans, events, project_id="bench", session_id=long_session)
                ),
                repeat,
            )
            key = [("bench", long_session, 0)]
            full_s, _ = _timed(lambda: rebuild_sessions(store, key, rebuild=rebuild), repeat)

            # Each timed pass rebuilds sessions of its own, fresh as the finalizer finds them;
            # the figures are the medians over ``repeat`` passes.
            algorithm_rates: list[float] = []
            pass_rates: list[float] = []
            service_rates: list[float] = []
            for run in range(repeat):
                project = f"many-{run}"
                seeds = [100 + run * sessions + i for i in range(sessions)]
                inserted = (
                    insert_sessions(store, project, session_steps, 5, seeds)
                    if batched
                    else [_insert_session(store, project, session_steps, 5, s) for s in seeds]
                )
                keys = [(project, key, 0) for key in inserted]
                rows = [store.sessions.rows(project, key) for _, key, _ in keys]
                cpu = time.process_time()
                built: Any = _collector_paused(
                    partial(_rebuild_all, rebuild, project, rows, [k for _, k, _ in keys])
                )()
                algorithm_cpu = time.process_time() - cpu
                del rows
                cpu = time.process_time()
                outcomes, _ = rebuild_sessions(store, keys, rebuild=rebuild)
                pass_cpu = time.process_time() - cpu
                many_activations = sum(len(b.activations) for b in built)
                assert (
                    sum(len(o.rebuilt.activations) for o in outcomes if o.rebuilt)
                    == many_activations
                )
                del built, outcomes
                algorithm_rates.append(many_activations / algorithm_cpu)
                pass_rates.append(many_activations / pass_cpu)
                service_rates.append(
                    many_activations
                    / _service_pass_cpu(store, f"service-{run}", session_steps, seeds)
                )
        finally:
            store.close()
    report = {
        "steps": steps,
        "spans": len(spans),
        "events": len(events),
        "trajectory_steps": len(result.trajectory.steps),  # type: ignore[attr-defined]
        "activations": activations,
        "algorithm_ms": round(algorithm_s * 1000, 1),
        "read_rebuild_write_ms": round(full_s * 1000, 1),
        "sessions": sessions,
        "session_steps": session_steps,
        "batched": batched,
        "many_activations": many_activations,
        "passes": repeat,
        "activations_per_cpu_s_algorithm": round(statistics.median(algorithm_rates)),
        "activations_per_cpu_s_pass": round(statistics.median(pass_rates)),
        "activations_per_cpu_s_pass_range": [round(min(pass_rates)), round(max(pass_rates))],
        "activations_per_cpu_s_service_pass": round(statistics.median(service_rates)),
    }
    _print(console, report)
    return report


def _print(console: Console, r: dict[str, Any]) -> None:
    table = Table(title="rebuild benchmark (embedded store)", box=None, header_style="bold")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row(
        f"session of {r['steps']} steps ({r['spans']} spans, {r['events']} events)",
        f"{r['trajectory_steps']} ATIF steps, {r['activations']} activations",
    )
    table.add_row("  algorithm alone (median)", f"{r['algorithm_ms']} ms")
    table.add_row("  store read + algorithm + write (median)", f"{r['read_rebuild_write_ms']} ms")
    inserted = "in one insert" if r["batched"] else "each inserted apart"
    table.add_row(
        f"{r['sessions']} sessions of {r['session_steps']} steps ({inserted})",
        f"{r['many_activations']} activations",
    )
    passes = f"median of {r['passes']} passes" if r["passes"] > 1 else "one pass"
    table.add_row(
        f"  activations / CPU-second, algorithm ({passes})",
        f"{r['activations_per_cpu_s_algorithm']:,}",
    )
    low, high = r["activations_per_cpu_s_pass_range"]
    table.add_row(
        f"  activations / CPU-second, read + rebuild + write ({passes})",
        f"{r['activations_per_cpu_s_pass']:,}" + (f" ({low:,} to {high:,})" if high > low else ""),
    )
    table.add_row(
        f"  the same as the finalizer runs it, its results released ({passes})",
        f"{r['activations_per_cpu_s_service_pass']:,}",
    )
    console.print(table)
