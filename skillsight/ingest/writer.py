"""The batch writer: drains the write queue into ClickHouse in large inserts.

One thread, so one insert per table at a time (ClickHouse likes about one large insert per
second per table). No batch can fail because of what one request carries: inserts are cut so
none touches more than ``MAX_PARTITIONS_PER_INSERT`` months, and rows the store refuses are
isolated by bisection and dead-lettered (:mod:`skillsight.ingest.isolate`). A failure that is
the store's condition (down, disk full, merges behind) is retried with backoff while the rows
stay held and :attr:`BatchWriter.healthy` is False, which receivers turn into 503s.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import pyarrow as pa

from skillsight.errors import SkillsightError, StoreError
from skillsight.ingest import otlp
from skillsight.ingest.isolate import Isolator
from skillsight.ingest.queue import Batch, Item, RawTraces, WriteQueue
from skillsight.store import MAX_PARTITIONS_PER_INSERT, Store
from skillsight.store.fastpath import FastTraceWriter, distinct_span_ids
from skillsight.store.rows import SPAN_SCHEMA

log = logging.getLogger(__name__)


class BatchWriter:
    """Async context manager running the writer thread; leaving it drains the queue."""

    def __init__(
        self,
        store: Store,
        queue: WriteQueue,
        *,
        batch_max_rows: int,
        flush_interval_s: float,
        drain_timeout_s: float = 60.0,
        fast: FastTraceWriter | None = None,
        limits: otlp.Limits | None = None,
        on_committed: Callable[[list[Item]], None] | None = None,
        fallback_dir: Path | None = None,
    ) -> None:
        self.store = store
        self.on_committed = on_committed
        self.isolator = Isolator(store, fallback_dir=fallback_dir)
        self.dead_lettered = 0
        self.fast = fast
        self.limits = limits or otlp.Limits()
        self.queue = queue
        self.batch_max_rows = batch_max_rows
        self.flush_interval_s = flush_interval_s
        self.drain_timeout_s = drain_timeout_s
        self.written = {"traces": 0, "logs": 0}
        self.failures = 0
        self.last_error = ""
        self.healthy = True
        self._abandoned = False
        self._thread: threading.Thread | None = None

    async def __aenter__(self) -> BatchWriter:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="skillsight-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Refuse new rows, write every held row, then end the thread."""
        self.queue.close()
        if self._thread is not None:
            self._thread.join(self.drain_timeout_s)
            if self._thread.is_alive():
                self._abandoned = True
                log.error(
                    "writer did not drain within %.0fs; %d rows not written (those the spool "
                    "holds are written at the next start)",
                    self.drain_timeout_s,
                    self.queue.held_rows,
                )
            self._thread = None

    def _run(self) -> None:
        while not self._abandoned:
            batches = self.queue.take(self.batch_max_rows, self.flush_interval_s)
            if batches:
                self._write(batches)
            elif self.queue.closed and self.queue.empty():
                return

    def _write(self, batches: list[Item]) -> None:
        rows = sum(b.rows for b in batches)
        delay = 0.05
        while True:
            try:
                written, dead = self._write_once(batches)
                break
            except StoreError as exc:
                # the store's condition: keep the rows held, so the queue fills, receivers
                # answer 503 and clients retry; try again with backoff
                self.failures += 1
                self.healthy = False
                self.last_error = str(exc)[:500]
                log.warning("insert of %d rows failed, retrying: %s", rows, exc)
                if self._abandoned:
                    return  # the process is stopping without them; the spool keeps them
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        for signal, count in written.items():
            self.written[signal] += count
        self.dead_lettered += dead
        self.healthy = True
        self.queue.release(rows)
        if self.on_committed is not None:
            self.on_committed(batches)

    def _write_once(self, batches: list[Item]) -> tuple[dict[str, int], int]:
        """Write every row of ``batches``: (rows committed per signal, rows dead-lettered).

        Raises StoreError only for the store's condition; the caller retries all of it (rows
        already written are written again, which the tables' deduplication absorbs).
        """
        written = {"traces": 0, "logs": 0}
        by_signal: dict[str, list[pa.Table]] = {}
        for group in _month_groups([b for b in batches if isinstance(b, RawTraces)]):
            tables, fast_rows = self._write_raw(group)
            written["traces"] += fast_rows
            by_signal.setdefault("traces", []).extend(tables)
        for batch in batches:
            if isinstance(batch, Batch):
                by_signal.setdefault(batch.signal, []).append(batch.table)
        dead = 0
        for signal, tables in by_signal.items():
            if not tables:
                continue
            table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            outcome = self.isolator.insert(signal, table)
            written[signal] += outcome.written
            dead += outcome.dead
        return written, dead

    def _write_raw(self, requests: list[RawTraces]) -> tuple[list[pa.Table], int]:
        """Insert raw requests through the fast path: (tables of what it leaves, decoded for
        the caller; spans it wrote)."""
        assert self.fast is not None, "raw requests are queued only when the fast path is on"
        left = self.fast.insert(
            [(r.project_id, r.body) for r in requests],
            entries=any(r.entries for r in requests),
            distinct=distinct_span_ids(r.span_ids for r in requests),
        )
        fast_rows = sum(r.rows for r in requests) - sum(requests[i].rows for i in left)
        # The screen let these through, so protobuf parses them and the Python decoder keeps
        # them. Should that ever fail, the request is logged and counted, and the writer thread
        # (which every other request depends on) lives on.
        tables = []
        for i in left:
            request = requests[i]
            try:
                decoded = otlp.decode(
                    otlp.TRACES, request.body, otlp.PROTOBUF, request.project_id, self.limits
                )
                tables.append(decoded.columns.to_arrow(SPAN_SCHEMA))
            except (SkillsightError, pa.ArrowException, UnicodeError, OverflowError) as exc:
                self.failures += 1
                self.last_error = (
                    f"a screened request of {request.rows} spans did not decode: {exc}"
                )
                log.error("%s", self.last_error)
        return tables, fast_rows


def _month_groups(requests: list[RawTraces]) -> list[list[RawTraces]]:
    """``requests`` in runs whose spans start in at most ``MAX_PARTITIONS_PER_INSERT`` months
    together (one statement each); usually one run, all in the current month."""
    groups: list[list[RawTraces]] = []
    months: set[int] = set()
    for request in requests:
        theirs = set(range(request.months[0], request.months[1] + 1))
        if not groups or len(months | theirs) > MAX_PARTITIONS_PER_INSERT:
            groups.append([])
            months = set()
        groups[-1].append(request)
        months |= theirs
    return groups
