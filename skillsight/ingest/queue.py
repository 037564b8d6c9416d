"""The bounded write queue between receivers and the batch writer.

Capacity is counted in rows and released only once those rows are committed to ClickHouse, so
the queue's fill is exactly what a crash could cost and what a graceful stop must drain. A
request that does not fit is refused whole with :class:`~skillsight.errors.Overloaded` — never
partly taken, never silently dropped — and the client retries it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

import pyarrow as pa

from skillsight.errors import Overloaded
from skillsight.ingest.flag import Flag


@dataclass(frozen=True)
class Batch:
    """Rows the Python decoder made, as an Arrow table of raw columns."""

    signal: str  # "traces" | "logs"
    table: pa.Table
    record: int = 0  # the request's spool record (0: not spooled)
    committed: Flag | None = None  # set once the rows are committed, for who waits on that

    @property
    def rows(self) -> int:
        return int(self.table.num_rows)


@dataclass(frozen=True)
class RawTraces:
    """An OTLP/protobuf trace request kept as sent, for ClickHouse to parse (the fast path)."""

    project_id: str
    body: bytes
    rows: int  # spans in the request
    entries: bool  # some span has events or links
    signal: str = "traces"
    span_ids: bytes = b""  # the spans' 8-byte ids end to end; b"" when unknown
    months: tuple[int, int] = (0, 0)  # first and last month its spans start in
    record: int = 0  # the request's spool record (0: not spooled)
    committed: Flag | None = None  # set once the rows are committed, for who waits on that


Item = Batch | RawTraces


class WriteQueue:
    """Row-bounded FIFO of batches (Arrow tables or raw requests). Thread-safe."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._items: deque[Item] = deque()
        self._queued_rows = 0  # waiting to be taken
        self._held_rows = 0  # queued + taken but not yet committed
        self._closed = False
        self._cond = threading.Condition()
        self.accepted_rows = 0
        self.refused_requests = 0

    @property
    def held_rows(self) -> int:
        return self._held_rows

    def offer(self, batch: Item, retry_after_s: float = 1.0) -> None:
        rows = batch.rows
        with self._cond:
            if self._closed:
                self.refused_requests += 1
                raise Overloaded("the collector is shutting down", retry_after_s)
            if self._held_rows + rows > self.max_rows and self._held_rows > 0:
                self.refused_requests += 1
                raise Overloaded(
                    f"write queue full ({self._held_rows} of {self.max_rows} rows held)",
                    retry_after_s,
                )
            self._items.append(batch)
            self._queued_rows += rows
            self._held_rows += rows
            self.accepted_rows += rows
            self._cond.notify_all()

    def put(self, batch: Item, timeout_s: float) -> None:
        """Queue ``batch`` even when full, waiting up to ``timeout_s`` for room (start-up
        replay of the spool, whose rows were acknowledged already)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._held_rows > 0 and self._held_rows + batch.rows > self.max_rows:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Overloaded("write queue stayed full during the spool's replay", 5.0)
                self._cond.wait(remaining)
            self._items.append(batch)
            self._queued_rows += batch.rows
            self._held_rows += batch.rows
            self.accepted_rows += batch.rows
            self._cond.notify_all()

    def take(self, max_rows: int, wait_s: float, idle_s: float = 1.0) -> list[Item]:
        """Up to ``max_rows`` rows of batches: waits up to ``idle_s`` for a first batch, then up
        to ``wait_s`` more for a full batch to gather."""
        with self._cond:
            idle_until = time.monotonic() + idle_s
            while not self._items and not self._closed:
                remaining = idle_until - time.monotonic()
                if remaining <= 0:
                    return []
                self._cond.wait(remaining)
            deadline = time.monotonic() + wait_s
            while self._queued_rows < max_rows and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            taken: list[Item] = []
            rows = 0
            while self._items and (not taken or rows + self._items[0].rows <= max_rows):
                batch = self._items.popleft()
                rows += batch.rows
                taken.append(batch)
            self._queued_rows -= rows
            return taken

    def release(self, rows: int) -> None:
        """Rows taken earlier are committed: give their capacity back."""
        with self._cond:
            self._held_rows -= rows
            self._cond.notify_all()

    def close(self) -> None:
        """Refuse new batches; ``take`` stops waiting so the writer can drain."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def empty(self) -> bool:
        with self._cond:
            return not self._items

    def wait_drained(self, timeout_s: float) -> bool:
        """Block until every held row is committed; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._held_rows > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True
