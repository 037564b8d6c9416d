"""The fast path for OTLP/protobuf traces: ClickHouse parses the requests and flattens them.

:func:`screen` (in the receiver) says which requests may take it; :class:`FastTraceWriter` (in
the batch writer) inserts a batch of them with one statement. The rows stored are exactly those
the Python decoder would produce; requests the fast path cannot reproduce are handed back.
"""

from __future__ import annotations

from skillsight.store.fastpath._screen import Screened, distinct_span_ids, screen
from skillsight.store.fastpath._writer import INSERT_SETTINGS, MIN_VALUE_CHARS, FastTraceWriter

__all__ = [
    "INSERT_SETTINGS",
    "MIN_VALUE_CHARS",
    "FastTraceWriter",
    "Screened",
    "distinct_span_ids",
    "screen",
]
