"""The batch writer survives a fast-path request that neither ClickHouse nor Python can read.

The receiver's screen makes that impossible for real traffic; if it ever happened, the one
request is reported (``/healthz`` ``last_error``) and every other request is still written,
because the writer thread is what drains the whole queue."""

from __future__ import annotations

import asyncio
from pathlib import Path

from skillsight.ingest import otlp
from skillsight.ingest.queue import RawTraces, WriteQueue
from skillsight.ingest.writer import BatchWriter
from skillsight.store import EmbeddedStore
from skillsight.store.fastpath import FastTraceWriter, screen
from tests.support.otlp_builders import export_request, span


def test_an_unreadable_raw_request_is_reported_and_the_rest_is_written(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    store.migrate()
    limits = otlp.Limits()
    fast = FastTraceWriter(store, limits)
    queue = WriteQueue(10_000)
    writer = BatchWriter(
        store, queue, batch_max_rows=10_000, flush_interval_s=0.05, fast=fast, limits=limits
    )
    good = export_request([span(f"good-{i}", trace=0xABC) for i in range(3)])
    screened = screen(good)
    assert screened is not None
    try:

        async def run() -> None:
            async with writer:
                queue.offer(RawTraces("default", b"\x0a\x05garbage", rows=2, entries=False))
                queue.offer(RawTraces("default", good, screened.spans, screened.entries))

        asyncio.run(run())
        stored = sorted(s["name"] for s in store.spans.find("default", trace_id=f"{0xABC:032x}"))
    finally:
        fast.close()
        store.close()
    assert stored == ["good-0", "good-1", "good-2"]
    assert writer.failures == 1
    assert "a screened request of 2 spans did not decode" in writer.last_error
    assert queue.held_rows == 0  # the lost request's capacity is given back too
