"""The collector service: decode, queue and write OTLP requests from any receiver."""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType

import pyarrow as pa

from skillsight.collector import otlp
from skillsight.collector.fastpath import MIN_VALUE_CHARS, FastTraceWriter, screen
from skillsight.collector.finalizer import Finalizer, store_catalogue
from skillsight.collector.queue import Batch, RawTraces, WriteQueue
from skillsight.collector.rows import EVENT_SCHEMA, SPAN_SCHEMA, span_columns
from skillsight.collector.store import EmbeddedStore, Store
from skillsight.collector.writer import BatchWriter
from skillsight.config import Settings
from skillsight.errors import DecodeError, PayloadTooLarge


class Collector:
    """Takes OTLP export requests and gets their rows into the store.

    ``ingest`` is synchronous and CPU-bound; receivers call it off their event loop. Entering the
    collector starts the batch writer; leaving it drains the queue.
    """

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.limits = otlp.Limits(
            max_value_chars=settings.max_attribute_bytes, max_depth=settings.max_attribute_depth
        )
        self.queue = WriteQueue(settings.queue_max_rows)
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
            flush_interval_s=settings.flush_interval_s,
            fast=self.fast,
            limits=self.limits,
        )
        self.finalizer = (
            Finalizer(
                store,
                quiet_s=settings.rebuild_quiet_s,
                max_wait_s=settings.rebuild_max_wait_s,
                settle_s=settings.rebuild_settle_s,
                poll_s=settings.rebuild_poll_s,
                batch_max=settings.rebuild_batch_max,
                catchup_s=settings.rebuild_catchup_s,
                catalogue=store_catalogue(store),
                commits=lambda: sum(self.writer.written.values()),
            )
            if settings.rebuild_enabled
            else None
        )
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Collector:
        if self.fast is not None:
            self._stack.callback(self.fast.close)
        if self.finalizer is not None:
            # entered first, left last: the writer has drained when the finalizer's final
            # rebuild pass runs
            await self._stack.enter_async_context(self.finalizer)
        await self._stack.enter_async_context(self.writer)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    def ingest(
        self,
        signal: str,
        body: bytes,
        *,
        encoding: str,
        project_id: str,
        content_encoding: str | None = None,
    ) -> otlp.Decoded:
        """Decode one export request and queue its rows.

        Raises DecodeError (unusable body), PayloadTooLarge, or Overloaded (retry later); on
        return every accepted row is held by the queue until committed.
        """
        if len(body) > self.settings.max_request_bytes:
            raise PayloadTooLarge(
                f"body of {len(body)} bytes is past {self.settings.max_request_bytes} "
                "(SKILLSIGHT_MAX_REQUEST_BYTES)"
            )
        raw = otlp.decompress(body, content_encoding, self.settings.max_decompressed_bytes)
        retry_after = 1.0 if self.writer.healthy else 5.0
        if self.fast is not None and signal == otlp.TRACES and encoding == otlp.PROTOBUF:
            # Requests the Python decoder would keep whole go to ClickHouse as sent; the rest
            # (ids to reject, bytes to salvage) take the Python path below, which says why.
            screened = screen(raw)
            if screened is not None:
                self.queue.offer(
                    RawTraces(
                        project_id,
                        raw,
                        screened.spans,
                        screened.entries,
                        span_ids=screened.span_ids,
                    ),
                    retry_after,
                )
                return otlp.Decoded(signal, span_columns(), whole=screened.spans)
        decoded = otlp.decode(signal, raw, encoding, project_id, self.limits)
        if decoded.accepted:
            schema = SPAN_SCHEMA if signal == otlp.TRACES else EVENT_SCHEMA
            try:
                table = decoded.columns.to_arrow(schema)
            except (pa.ArrowException, UnicodeError, OverflowError) as exc:
                raise DecodeError(f"request holds values that cannot be stored: {exc}") from exc
            self.queue.offer(Batch(signal, table), retry_after)
        return decoded

    def health(self) -> dict[str, object]:
        return {
            "store": self.store.kind,
            "writer_healthy": self.writer.healthy,
            "queue_rows": self.queue.held_rows,
            "fast_path": self.fast is not None,
            "queue_capacity": self.queue.max_rows,
            "written_spans": self.writer.written["traces"],
            "written_events": self.writer.written["logs"],
            "refused_requests": self.queue.refused_requests,
            "last_error": self.writer.last_error,
            "rebuild": self.finalizer.health() if self.finalizer else {"enabled": False},
        }
