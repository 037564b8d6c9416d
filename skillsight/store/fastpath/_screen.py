"""Which requests the fast path may take: those the Python decoder would keep whole.

The Python decoder turns away spans with unusable ids or impossible start times and answers with
their reasons, and it salvages what protobuf's parser refuses; both need it. Everything else it
keeps as sent, and so does the fast path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from skillsight.store import MAX_PARTITIONS_PER_INSERT, month_of

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class Screened(NamedTuple):
    """A request the fast path may insert."""

    spans: int
    entries: bool  # some span has events or links (see FastTraceWriter.insert)
    span_ids: bytes  # the spans' 8-byte ids, end to end (see distinct_span_ids)
    months: tuple[int, int] = (0, 0)  # the first and last month its spans start in


_ANY_TIME = (0, (1 << 64) - 1)


def screen(
    body: bytes, bounds: tuple[int, int] = _ANY_TIME, *, unset_ok: bool = True
) -> Screened | None:
    """What the fast path needs to know of ``body``, or None when Python must decode it.

    None for a body protobuf refuses, one holding a span the Python decoder would reject (it
    says why in the response: bad ids, a start time outside ``bounds`` — or unset, unless
    ``unset_ok`` — ), one whose spans start
    over more months than one INSERT may write, and one without spans (nothing to insert, or not
    a request).
    """
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except ProtobufDecodeError:
        return None
    count = 0
    entries = False
    ids: list[bytes] = []
    earliest, latest = bounds
    first, last = 1 << 64, -1
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id = span.trace_id
                span_id = span.span_id
                parent = span.parent_span_id
                if (
                    len(trace_id) != 16
                    or trace_id == _ZERO_TRACE
                    or len(span_id) != 8
                    or span_id == _ZERO_SPAN
                    or (parent and len(parent) != 8)
                ):
                    return None
                start = span.start_time_unix_nano
                if start < first:
                    if start < earliest and (start or not unset_ok):
                        return None
                    first = start
                if start > last:
                    if start > latest:
                        return None
                    last = start
                if not entries and (span.events or span.links):
                    entries = True
                ids.append(span_id)
                count += 1
    if not count:
        return None
    months = (month_of(first), month_of(last))
    if months[1] - months[0] >= MAX_PARTITIONS_PER_INSERT:
        return None  # Python's rows are cut into INSERTs by month (Spans.insert)
    return Screened(count, entries, b"".join(ids), months)


def distinct_span_ids(batches: Iterable[bytes]) -> bool:
    """Whether no span id repeats across ``batches`` (each :attr:`Screened.span_ids`).

    Then no two spans of the batch share a sorting key (project, trace, span), and the insert
    may skip ReplacingMergeTree's deduplication of the block: it would change nothing. An
    empty entry means ids unknown, so False.
    """
    seen: set[bytes] = set()
    total = 0
    for ids in batches:
        if not ids or len(ids) % 8:
            return False
        seen.update(ids[i : i + 8] for i in range(0, len(ids), 8))
        total += len(ids) // 8
    return len(seen) == total
