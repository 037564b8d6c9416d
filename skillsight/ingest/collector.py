"""The collector service: decode, queue and write OTLP requests from any receiver.

It holds no session state: rebuilding sessions is the finalizer's work, which the composition
root (:mod:`skillsight.runtime`) runs beside it or in another process.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType

import pyarrow as pa

from skillsight.config import Settings
from skillsight.errors import DecodeError, PayloadTooLarge
from skillsight.ingest import otlp
from skillsight.ingest.queue import Batch, RawTraces, WriteQueue
from skillsight.ingest.writer import BatchWriter
from skillsight.store import EmbeddedStore, Store
from skillsight.store.fastpath import MIN_VALUE_CHARS, FastTraceWriter, screen
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA, span_columns


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
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Collector:
        if self.fast is not None:
            self._stack.callback(self.fast.close)
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

    def commits(self) -> int:
        """Rows committed so far: a cheap hint for the finalizer that new rows may be in."""
        return sum(self.writer.written.values())

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
        }
