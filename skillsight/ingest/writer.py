"""The batch writer: drains the write queue into ClickHouse in large inserts.

One thread, so one insert per table at a time (ClickHouse likes about one large insert per
second per table). A failed insert is retried with backoff while its rows stay held in the
queue, so back-pressure reaches clients instead of data being lost.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from types import TracebackType

import pyarrow as pa

from skillsight.errors import SkillsightError, StoreError
from skillsight.ingest import otlp
from skillsight.ingest.queue import Batch, Item, RawTraces, WriteQueue
from skillsight.store import Store
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
    ) -> None:
        self.store = store
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
                log.error(
                    "writer did not drain within %.0fs; %d rows not written",
                    self.drain_timeout_s,
                    self.queue.held_rows,
                )
            self._thread = None

    def _run(self) -> None:
        while True:
            batches = self.queue.take(self.batch_max_rows, self.flush_interval_s)
            if batches:
                self._write(batches)
            elif self.queue.closed and self.queue.empty():
                return

    def _write(self, batches: list[Item]) -> None:
        rows = sum(b.rows for b in batches)
        by_signal: dict[str, list[pa.Table]] = {}
        raw = [b for b in batches if isinstance(b, RawTraces)]
        if raw:
            by_signal["traces"] = self._write_raw(raw)
        for batch in batches:
            if isinstance(batch, Batch):
                by_signal.setdefault(batch.signal, []).append(batch.table)
        delay = 0.05
        for signal, tables in by_signal.items():
            if not tables:
                continue
            table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            while True:
                try:
                    if signal == "traces":
                        self.store.spans.insert(table)
                    else:
                        self.store.events.insert(table)
                    self.written[signal] += table.num_rows
                    self.healthy = True
                    break
                except StoreError as exc:
                    # keep the rows held: the queue fills and clients are told to retry
                    self.failures += 1
                    self.healthy = False
                    self.last_error = str(exc)[:500]
                    log.warning(
                        "insert of %d %s rows failed, retrying: %s", table.num_rows, signal, exc
                    )
                    time.sleep(delay)
                    delay = min(delay * 2, 5.0)
        self.queue.release(rows)

    def _write_raw(self, requests: list[RawTraces]) -> list[pa.Table]:
        """Insert raw requests through the fast path; decode what it leaves, for the caller."""
        assert self.fast is not None, "raw requests are queued only when the fast path is on"
        left = self.fast.insert(
            [(r.project_id, r.body) for r in requests],
            entries=any(r.entries for r in requests),
            distinct=distinct_span_ids(r.span_ids for r in requests),
        )
        self.written["traces"] += sum(r.rows for r in requests) - sum(
            requests[i].rows for i in left
        )
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
        return tables
