"""Time the Python path and the fast path on the benchmark's traces, in this process.

    python -m benchmarks.fastpath_measure --spans 100000 --batch 50000

Each path writes the same export requests into a fresh embedded store of its own, in inserts of
``--batch`` spans as the batch writer makes them, after one warm-up insert, and is timed in
process CPU seconds (every thread chdb runs counts) and wall seconds. Background merges are
stopped while timing: they cost the same on both paths and would land in whichever measurement
they overlap. The fast path's statements are also timed without their INSERT (parse only, raw
columns, normalized columns) to show where its time goes.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks.traces import export_requests
from skillsight.ingest.otlp import Limits, traces
from skillsight.store import EmbeddedStore
from skillsight.store.fastpath._render import lit
from skillsight.store.fastpath._schema import STRUCTURE
from skillsight.store.fastpath._screen import distinct_span_ids, screen
from skillsight.store.fastpath._statement import raw_select, settings
from skillsight.store.fastpath._writer import FastTraceWriter
from skillsight.store.normalize import span_projection
from skillsight.store.rows import SPAN_SCHEMA

PROJECT = "bench"


@dataclass
class Timing:
    cpu: float = 0.0
    wall: float = 0.0

    def rate(self, spans: int) -> str:
        per_cpu = spans / self.cpu if self.cpu else float("inf")
        return f"{per_cpu:>9,.0f} spans/CPU-s  ({self.cpu:6.3f} CPU-s, {self.wall:6.3f} s wall)"


@contextmanager
def _timed(into: Timing) -> Iterator[None]:
    cpu, wall = time.process_time(), time.perf_counter()
    yield
    into.cpu += time.process_time() - cpu
    into.wall += time.perf_counter() - wall


def _batches(bodies: Sequence[bytes], counts: Sequence[int], spans: int) -> list[list[int]]:
    """Request indexes grouped into batches of about ``spans`` spans."""
    out: list[list[int]] = [[]]
    held = 0
    for index, count in enumerate(counts):
        if out[-1] and held + count > spans:
            out.append([])
            held = 0
        out[-1].append(index)
        held += count
    return out


@contextmanager
def _store(root: Path, name: str) -> Iterator[EmbeddedStore]:
    store = EmbeddedStore(root / name)
    try:
        store.migrate()
        store.execute("SYSTEM STOP MERGES spans")
        yield store
    finally:
        store.close()


def _query(store: EmbeddedStore, sql: str) -> None:
    with store._lock:
        store._conn.query(sql, "CSV")


def python_path(
    store: EmbeddedStore,
    bodies: Sequence[bytes],
    batches: list[list[int]],
    limits: Limits,
    insert_settings: str,
) -> dict[str, Timing]:
    decode, insert = Timing(), Timing()
    columns, select = span_projection()
    for batch in batches:
        with _timed(decode):
            tables = [
                traces.decode_protobuf(bodies[i], PROJECT, limits).columns.to_arrow(SPAN_SCHEMA)
                for i in batch
            ]
            data = pa.concat_tables(tables)
        with _timed(insert):
            if insert_settings:
                # Store.spans.insert, with settings it does not take
                _python_insert(store, columns, select, data, insert_settings)
            else:
                store.spans.insert(data)
    return {"decode + Arrow": decode, "INSERT ... FROM Python(arrow)": insert}


def _python_insert(
    store: EmbeddedStore, columns: Sequence[str], select: str, data: pa.Table, extra: str
) -> None:
    batch = data  # noqa: F841 - read by name inside the SQL below
    sql = f"INSERT INTO spans ({', '.join(columns)}) SELECT {select} FROM Python(batch)"
    with store._lock:
        store._conn.query(f"{sql} SETTINGS {extra}")


def fast_path(
    store: EmbeddedStore,
    bodies: Sequence[bytes],
    batches: list[list[int]],
    limits: Limits,
    insert_settings: dict[str, Any],
) -> tuple[dict[str, Timing], list[int]]:
    checked, insert = Timing(), Timing()
    writer = FastTraceWriter(store, limits, insert_settings=insert_settings)
    left: list[int] = []
    try:
        for batch in batches:
            with _timed(checked):
                screened = [screen(bodies[i]) for i in batch]
                distinct = distinct_span_ids(s.span_ids if s else b"" for s in screened)
            entries = any(s is None or s.entries for s in screened)
            with _timed(insert):
                left += writer.insert(
                    [(PROJECT, bodies[i]) for i in batch], entries=entries, distinct=distinct
                )
    finally:
        writer.close()
    return {"screen (receiver)": checked, "INSERT ... FROM file(protobuf)": insert}, left


def fast_breakdown(
    store: EmbeddedStore, bodies: Sequence[bytes], batches: list[list[int]], limits: Limits
) -> dict[str, Timing]:
    """The fast path's SELECT alone, at three depths, over the same batches."""
    writer = FastTraceWriter(store, limits)
    steps: dict[str, Callable[[str], str]] = {
        "parse only (SELECT * FROM file)": lambda p: (
            f"SELECT * FROM file({lit(p)}, 'Protobuf', {lit(STRUCTURE)}) FORMAT Null "
            f"SETTINGS {settings()}"
        ),
        "+ explode and render raw columns": lambda p: (
            f"SELECT * FROM ({raw_select(p, limits, entries=False)}) FORMAT Null "
            f"SETTINGS {settings()}"
        ),
        "+ normalizing projection": lambda p: (
            f"SELECT {writer._projection} FROM ({raw_select(p, limits, entries=False)}) "
            f"FORMAT Null SETTINGS {settings()}"
        ),
    }
    out = {name: Timing() for name in steps}
    try:
        for batch in batches:
            path = writer._spool([(PROJECT, bodies[i]) for i in batch], range(len(batch)))
            for name, sql in steps.items():
                with _timed(out[name]):
                    _query(store, sql(str(path)))
            path.unlink()
    finally:
        writer.close()
    return out


def statement_cost(store: EmbeddedStore, body: bytes, limits: Limits, rounds: int) -> float:
    """CPU-seconds of a fast-path INSERT of a one-span request: the cost of every statement
    (parsing and analysing its SQL, planning) whatever its batch size."""
    writer = FastTraceWriter(store, limits)
    best = float("inf")
    try:
        for _ in range(rounds + 1):  # the first one warms up
            took = Timing()
            with _timed(took):
                writer.insert([(PROJECT, body)], entries=False, distinct=True)
            best = min(best, took.cpu)
    finally:
        writer.close()
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--per-request", type=int, default=500)
    parser.add_argument("--batch", type=int, default=50_000, help="spans per INSERT")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many runs")
    parser.add_argument(
        "--no-optimize-on-insert",
        action="store_true",
        help="insert with optimize_on_insert = 0 on both paths",
    )
    args = parser.parse_args(argv)
    limits = Limits()
    bodies = list(export_requests(args.spans, args.per_request))
    counts = [args.per_request] * len(bodies)
    counts[-1] = args.spans - args.per_request * (len(bodies) - 1)
    batches = _batches(bodies, counts, args.batch)
    py_settings = "optimize_on_insert = 0" if args.no_optimize_on_insert else ""
    fast_settings = {"optimize_on_insert": 0} if args.no_optimize_on_insert else {}
    print(
        f"{args.spans} spans in {len(bodies)} requests, {len(batches)} inserts of <= "
        f"{args.batch} spans; best of {args.rounds}"
        + ("; optimize_on_insert = 0" if args.no_optimize_on_insert else "")
    )
    results: dict[str, dict[str, Timing]] = {}
    with tempfile.TemporaryDirectory(prefix="skillsight-measure-") as tmp:
        root = Path(tmp)
        Run = Callable[[EmbeddedStore, list[list[int]]], dict[str, Timing]]
        runs: list[tuple[str, Run]] = [
            ("python", lambda s, b: python_path(s, bodies, b, limits, py_settings)),
            ("fast", lambda s, b: fast_path(s, bodies, b, limits, fast_settings)[0]),
            ("fast, SELECT only", lambda s, b: fast_breakdown(s, bodies, b, limits)),
        ]
        for label, run in runs:
            best: dict[str, Timing] | None = None
            for round_ in range(args.rounds):
                with _store(root, f"{label.split(',')[0]}-{round_}") as store:
                    # a server runs these statements all day: time them warm, as it does
                    run(store, [[0]])
                    store.execute("TRUNCATE TABLE spans")
                    got = run(store, batches)
                if best is None or sum(t.cpu for t in got.values()) < sum(
                    t.cpu for t in best.values()
                ):
                    best = got
            assert best is not None
            results[label] = best
    for label, steps in results.items():
        print(f"\n{label} path" if "," not in label else f"\n{label}")
        for name, timing in steps.items():
            print(f"  {name:36s} {timing.rate(args.spans)}")
        if "," not in label:
            total = Timing(sum(t.cpu for t in steps.values()), sum(t.wall for t in steps.values()))
            print(f"  {'total':36s} {total.rate(args.spans)}")
    # what the INSERT adds to the SELECT it runs: converting, sorting, compressing, writing
    insert = results["fast"]["INSERT ... FROM file(protobuf)"]
    select = results["fast, SELECT only"]["+ normalizing projection"]
    write = Timing(insert.cpu - select.cpu, insert.wall - select.wall)
    print(f"  {'= write (INSERT - SELECT)':36s} {write.rate(args.spans)}")
    with (
        tempfile.TemporaryDirectory(prefix="skillsight-measure-") as tmp,
        _store(Path(tmp), "statement") as store,
    ):
        fixed = statement_cost(store, next(export_requests(1, 1)), limits, args.rounds)
    print(f"\nper statement (INSERT of one span)    {fixed * 1000:9.0f} CPU-ms")


if __name__ == "__main__":
    main()
