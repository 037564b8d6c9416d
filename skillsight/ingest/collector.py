"""The collector service: decode, admit, make durable, queue and write OTLP requests.

An export is answered only once its rows are durable, as ``SKILLSIGHT_ACK`` says:

- ``spool`` (the default with the embedded store): the request is in the spool folder, fsync'd
  (:mod:`.spool`); rows committed later, replayed at start-up after a crash;
- ``commit`` (the default with a ClickHouse server, whose collectors keep no local state): the
  request's rows are committed (concurrent requests share an INSERT);
- ``memory``: the request is in the write queue (drained on SIGTERM, lost on a crash).

It holds no session state: rebuilding sessions is the finalizer's work, which the composition
root (:mod:`skillsight.runtime`) runs beside it or in another process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pyarrow as pa

from skillsight.config import Settings
from skillsight.errors import ConfigError, DecodeError, Overloaded, PayloadTooLarge, StoreError
from skillsight.ingest import otlp
from skillsight.ingest.flag import DONE, Flag, FlagFailed
from skillsight.ingest.limits import PerProject, ProjectLimiter
from skillsight.ingest.queue import Batch, Item, RawTraces, WriteQueue
from skillsight.ingest.spool import Record, Spool, SpoolFull
from skillsight.ingest.writer import BatchWriter
from skillsight.store import EmbeddedStore, Store
from skillsight.store.fastpath import MIN_VALUE_CHARS, FastTraceWriter, screen
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA, span_columns

log = logging.getLogger(__name__)

ACK_MODES = ("spool", "commit", "memory")


def ack_mode(store: Store, settings: Settings) -> str:
    """``SKILLSIGHT_ACK``, with ``auto`` resolved for the store."""
    if settings.ack != "auto":
        return settings.ack
    return "spool" if isinstance(store, EmbeddedStore) else "commit"


# Replayed records were accepted under the window of their day: take them whatever it is now.
_REPLAY_WINDOW = otlp.Window(future_s=1e9)
_REPLAY_TIMEOUT_S = 600.0


class Unavailable(Overloaded):
    """The collector cannot make requests durable now (store failing, stopping): HTTP 503."""


@dataclass(frozen=True)
class Receipt:
    """An accepted request: what decoding said, and a flag set once its rows are durable."""

    decoded: otlp.Decoded
    durable: Flag


def spool_folder(store: Store, settings: Settings) -> Path:
    """``SKILLSIGHT_SPOOL_DIR``, else ``spool`` in the embedded store's folder or the data
    folder."""
    if str(settings.spool_dir):
        return Path(settings.spool_dir)
    if isinstance(store, EmbeddedStore):
        return store.path / "spool"
    return Path(settings.data_dir) / "spool"


class Collector:
    """Takes OTLP export requests and gets their rows into the store.

    ``ingest`` is synchronous and CPU-bound; receivers call it off their event loop (or on it,
    for small fast-path requests) and then await :meth:`acknowledge`. Entering the collector
    replays the spool and starts the batch writer; leaving it drains the queue.
    """

    def __init__(self, store: Store, settings: Settings) -> None:
        self.ack = ack_mode(store, settings)
        if self.ack not in ACK_MODES:
            raise ConfigError(
                f"ack={settings.ack!r}: expected auto or one of {', '.join(ACK_MODES)} "
                "(SKILLSIGHT_ACK)"
            )
        self.store = store
        self.settings = settings
        self.limits = otlp.Limits(
            max_value_chars=settings.max_attribute_bytes, max_depth=settings.max_attribute_depth
        )
        self.window = otlp.Window(settings.retention_days, settings.ingest_future_s)
        self.limiter = ProjectLimiter(
            PerProject.parse(settings.project_rate_limit, "SKILLSIGHT_PROJECT_RATE_LIMIT"),
            PerProject.parse(settings.project_daily_quota, "SKILLSIGHT_PROJECT_DAILY_QUOTA"),
            burst_s=settings.project_burst_s,
        )
        self.queue = WriteQueue(settings.queue_max_rows)
        self.spool_dir = spool_folder(store, settings)
        self.spool: Spool | None = None
        # ClickHouse reads the fast path's requests from a local file: the embedded store only.
        self.fast = (
            FastTraceWriter(store, self.limits)
            if settings.fast_path
            and isinstance(store, EmbeddedStore)
            and self.limits.max_value_chars >= MIN_VALUE_CHARS
            else None
        )
        self.writer = BatchWriter(
            store,
            self.queue,
            batch_max_rows=settings.batch_max_rows,
            # group commit: take what concurrent requests queued, without waiting for more
            flush_interval_s=0.002 if self.ack == "commit" else settings.flush_interval_s,
            fast=self.fast,
            limits=self.limits,
            on_committed=self._committed,
            fallback_dir=self.spool_dir / "dead-letters",
        )
        self.dead_letters_before = 0
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Collector:
        if self.fast is not None:
            self._stack.callback(self.fast.close)
        leftovers = []
        if self.ack == "spool":
            self.spool = Spool(self.spool_dir, max_bytes=self.settings.spool_max_bytes)
            self._stack.callback(self.spool.close)  # after the writer has drained
            leftovers = self.spool.recover()
            self.spool.start()
        try:
            self.dead_letters_before = await asyncio.to_thread(self.store.dead_letters.count)
        except StoreError as exc:
            log.warning("cannot count dead letters: %s", exc)
        await self._stack.enter_async_context(self.writer)
        if leftovers:
            rows = sum(record.rows for _, record in leftovers)
            log.warning(
                "replaying %d spooled requests (%d rows) not yet committed", len(leftovers), rows
            )
            await asyncio.to_thread(self._replay, leftovers)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    # -- the request path -----------------------------------------------------------------

    def ingest(
        self,
        signal: str,
        body: bytes,
        *,
        encoding: str,
        project_id: str,
        content_encoding: str | None = None,
    ) -> Receipt:
        """Decode one export request, admit it and queue its rows.

        Raises DecodeError (unusable body), PayloadTooLarge, RateLimited (429), Unavailable
        (503) or Overloaded (queue full; 429). On return the rows are queued; they are durable
        once :meth:`acknowledge` returns.
        """
        if not self.writer.healthy:
            raise Unavailable("the store cannot be written now; retry later", 5.0)
        if len(body) > self.settings.max_request_bytes:
            raise PayloadTooLarge(
                f"body of {len(body)} bytes is past {self.settings.max_request_bytes} "
                "(SKILLSIGHT_MAX_REQUEST_BYTES)"
            )
        raw = otlp.decompress(body, content_encoding, self.settings.max_decompressed_bytes)
        decoded, rows, make = self._decode(signal, raw, encoding, project_id, self.window)
        if not rows:
            return Receipt(decoded, DONE)
        self.limiter.admit(project_id, rows)
        try:
            durable = self._enqueue(make, Record(signal, encoding, project_id, rows, raw))
        except BaseException:
            self.limiter.refund(project_id, rows)
            raise
        return Receipt(decoded, durable)

    async def acknowledge(self, receipt: Receipt) -> None:
        """Return once the receipt's rows are durable; Unavailable (503) if not in time."""
        try:
            await receipt.durable.wait(self.settings.ack_timeout_s)
        except TimeoutError:
            raise Unavailable(
                f"the request was not made durable within {self.settings.ack_timeout_s:g} s "
                "(SKILLSIGHT_ACK_TIMEOUT_S); retry",
                1.0,
            ) from None
        except FlagFailed as exc:
            raise Unavailable(f"the request could not be made durable: {exc}", 5.0) from exc

    def _decode(
        self, signal: str, raw: bytes, encoding: str, project_id: str, window: otlp.Window
    ) -> tuple[otlp.Decoded, int, Callable[[int, Flag | None], Item]]:
        if self.fast is not None and signal == otlp.TRACES and encoding == otlp.PROTOBUF:
            # Requests the Python decoder would keep whole go to ClickHouse as sent; the rest
            # (ids or times to reject, bytes to salvage) take the Python path below, which
            # says why.
            screened = screen(raw, window.bounds(), unset_ok=window.keeps_unset)
            if screened is not None:

                def raw_item(record: int, committed: Flag | None) -> Item:
                    return RawTraces(
                        project_id,
                        raw,
                        screened.spans,
                        screened.entries,
                        span_ids=screened.span_ids,
                        months=screened.months,
                        record=record,
                        committed=committed,
                    )

                decoded = otlp.Decoded(signal, span_columns(), whole=screened.spans)
                return decoded, screened.spans, raw_item
        decoded = otlp.decode(signal, raw, encoding, project_id, self.limits, window)
        table: pa.Table | None = None
        if decoded.accepted:
            schema = SPAN_SCHEMA if signal == otlp.TRACES else EVENT_SCHEMA
            try:
                table = decoded.columns.to_arrow(schema)
            except (pa.ArrowException, UnicodeError, OverflowError) as exc:
                raise DecodeError(f"request holds values that cannot be stored: {exc}") from exc

        def table_item(record: int, committed: Flag | None) -> Item:
            return Batch(signal, table, record=record, committed=committed)

        return decoded, decoded.accepted, table_item

    def _enqueue(self, make: Callable[[int, Flag | None], Item], record: Record) -> Flag:
        """Spool (in ``spool`` mode) and queue a request; the flag its answer waits on."""
        seq, durable = 0, DONE
        if self.spool is not None:
            try:
                seq, durable = self.spool.append(record)
            except SpoolFull as exc:
                raise Overloaded(f"{exc}; retry later", 5.0) from exc
            except OSError as exc:
                raise Unavailable(f"the spool cannot be written: {exc}", 5.0) from exc
        committed = Flag() if self.ack == "commit" else None
        retry_after = 1.0 if self.writer.healthy else 5.0
        try:
            self.queue.offer(make(seq, committed), retry_after)
        except Overloaded:
            if self.spool is not None and seq:
                self.spool.done([seq])
            raise
        return committed if committed is not None else durable

    def _committed(self, items: list[Item]) -> None:
        """The writer committed (or dead-lettered) these items' rows."""
        if self.spool is not None:
            self.spool.done(item.record for item in items if item.record)
        for item in items:
            if item.committed is not None:
                item.committed.set()

    def _replay(self, leftovers: list[tuple[int, Record]]) -> None:
        for seq, record in leftovers:
            try:
                _, rows, make = self._decode(
                    record.signal, record.body, record.encoding, record.project_id, _REPLAY_WINDOW
                )
            except (DecodeError, PayloadTooLarge) as exc:
                log.error("spooled request %d no longer decodes, dropped: %s", seq, exc)
                rows = 0
            if not rows:
                assert self.spool is not None
                self.spool.done([seq])
                continue
            self.queue.put(make(seq, None), _REPLAY_TIMEOUT_S)

    # -- state ----------------------------------------------------------------------------

    def commits(self) -> int:
        """Rows committed so far: a cheap hint for the finalizer that new rows may be in."""
        return sum(self.writer.written.values())

    def health(self) -> dict[str, object]:
        held = self.queue.held_rows
        exposure = {
            # acknowledged rows a crash now would lose, and rows received but not yet
            # answered (their exporters retry them)
            "acknowledged_rows": held if self.ack == "memory" else 0,
            "unacknowledged_rows": (
                self.spool.unsynced_rows
                if self.spool is not None
                else (held if self.ack == "commit" else 0)
            ),
        }
        return {
            "store": self.store.kind,
            "ack": self.ack,
            "accepting": self.writer.healthy and not self.queue.closed,
            "writer_healthy": self.writer.healthy,
            "queue_rows": held,
            "fast_path": self.fast is not None,
            "queue_capacity": self.queue.max_rows,
            "written_spans": self.writer.written["traces"],
            "written_events": self.writer.written["logs"],
            "refused_requests": self.queue.refused_requests,
            "rate_limited_requests": self.limiter.refused_requests,
            "dead_letters": {
                "rows": self.dead_letters_before + self.writer.dead_lettered,
                "since_start": self.writer.dead_lettered,
            },
            "spool": (
                {"records": self.spool.pending_records, "bytes": self.spool.held_bytes}
                if self.spool is not None
                else None
            ),
            "crash_exposure": exposure,
            "last_error": self.writer.last_error,
        }
