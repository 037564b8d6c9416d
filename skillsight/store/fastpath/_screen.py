"""Which requests the fast path may take: those the Python decoder would keep whole.

The Python decoder turns away spans with unusable ids and answers with their reasons, and it
salvages what protobuf's parser refuses; both need it. Everything else it keeps as sent, and so
does the fast path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class Screened(NamedTuple):
    """A request the fast path may insert."""

    spans: int
    entries: bool  # some span has events or links (see FastTraceWriter.insert)
    span_ids: bytes  # the spans' 8-byte ids, end to end (see distinct_span_ids)


def screen(body: bytes) -> Screened | None:
    """What the fast path needs to know of ``body``, or None when Python must decode it.

    None for a body protobuf refuses, one holding a span the Python decoder would reject (it
    says why in the response), and one without spans (nothing to insert, or not a request).
    """
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except ProtobufDecodeError:
        return None
    count = 0
    entries = False
    ids: list[bytes] = []
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
                if not entries and (span.events or span.links):
                    entries = True
                ids.append(span_id)
                count += 1
    return Screened(count, entries, b"".join(ids)) if count else None


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
