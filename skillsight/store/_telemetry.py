"""The ``spans`` and ``events`` tables: normalizing inserts and deduplicated reads.

Rows arrive raw (schemas in :mod:`skillsight.store.rows`) and are normalized inside ClickHouse
by the projection :mod:`skillsight.store.normalize` composes, so both transports and every
decoder share one definition of it. Reads deduplicate with ``LIMIT 1 BY`` rather than ``FINAL``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import pyarrow as pa

from skillsight.store import rows
from skillsight.store._partitions import by_partitions
from skillsight.store.normalize import event_projection, span_projection

if TYPE_CHECKING:
    from skillsight.store._store import Store

# What a rebuild reads of a session's rows (SessionSpanRow, SessionEventRow): every column but
# those below, which a listing shows and nothing rebuilds from. Left out, they are a sixth of
# what a rebuild pass would parse.
SESSION_SPAN_COLUMNS = """
    trace_id, span_id, parent_span_id, name,
    toUnixTimestamp64Nano(start_time) AS start_time_unix_nano,
    toUnixTimestamp64Nano(end_time) AS end_time_unix_nano,
    status_code, status_message, source_convention, operation,
    session_id, agent, model, tool_name, tool_call_id, skill_name, input, output,
    input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
    attributes, resource_attributes, span_events"""
SPAN_COLUMNS = SESSION_SPAN_COLUMNS + ", kind, service_name, scope_name, links"

SESSION_EVENT_COLUMNS = """
    record_id, toUnixTimestamp64Nano(timestamp) AS time_unix_nano, trace_id, span_id,
    event_name, source_convention, session_id, prompt_id, skill_name, tool_name, tool_call_id,
    model, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
    attributes, resource_attributes"""
EVENT_COLUMNS = (
    SESSION_EVENT_COLUMNS + ", severity_number, severity_text, body, service_name, scope_name"
)

_LIST_SPANS = f"""
SELECT {SPAN_COLUMNS}
FROM (
    SELECT * FROM spans
    WHERE project_id = {{project:String}}
      AND ({{trace:String}} = '' OR trace_id = {{trace:String}})
      AND ({{session:String}} = '' OR session_id = {{session:String}})
    ORDER BY ingested_at DESC
    LIMIT 1 BY trace_id, span_id
)
ORDER BY start_time, span_id
LIMIT {{limit:UInt32}}"""

_LIST_EVENTS = f"""
SELECT {EVENT_COLUMNS}
FROM (
    SELECT * FROM events
    WHERE project_id = {{project:String}}
      AND ({{session:String}} = '' OR session_id = {{session:String}})
      AND ({{trace:String}} = '' OR trace_id = {{trace:String}})
      AND ({{event:String}} = '' OR event_name = {{event:String}})
    ORDER BY ingested_at DESC
    LIMIT 1 BY session_id, timestamp, record_id
)
ORDER BY time_unix_nano, record_id
LIMIT {{limit:UInt32}}"""

_COUNT_SPANS = """
SELECT count() AS rows, uniqExact(trace_id, span_id) AS spans
FROM spans WHERE project_id = {project:String}"""

_COUNT_EVENTS = """
SELECT count() AS rows, uniqExact(session_id, timestamp, record_id) AS events
FROM events WHERE project_id = {project:String}"""


class SessionSpanRow(TypedDict):
    """A normalized span as a rebuild reads it (``Sessions.rows``): all but what
    :class:`SpanRow` adds."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    status_code: str
    status_message: str
    source_convention: str
    operation: str
    session_id: str
    agent: str
    model: str
    tool_name: str
    tool_call_id: str
    skill_name: str
    input: str
    output: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cost_usd: float
    attributes: dict[str, str]
    resource_attributes: dict[str, str]
    span_events: str


class SpanRow(SessionSpanRow):
    """A normalized span as stored (one per (trace, span) however often it was exported)."""

    kind: str
    service_name: str
    scope_name: str
    links: str


class SessionEventRow(TypedDict):
    """A normalized log record as a rebuild reads it (``Sessions.rows``): all but what
    :class:`EventRow` adds."""

    record_id: str
    time_unix_nano: int
    trace_id: str
    span_id: str
    event_name: str
    source_convention: str
    session_id: str
    prompt_id: str
    skill_name: str
    tool_name: str
    tool_call_id: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cost_usd: float
    attributes: dict[str, str]
    resource_attributes: dict[str, str]


class EventRow(SessionEventRow):
    """A normalized log record as stored."""

    severity_number: int
    severity_text: str
    body: str
    service_name: str
    scope_name: str


class Spans:
    """The ``spans`` table."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._columns, self._select = span_projection()

    def insert(self, data: pa.Table) -> int:
        """Normalize and insert raw span rows (schema :data:`rows.SPAN_SCHEMA`).

        One statement per block of at most ``MAX_PARTITIONS_PER_INSERT`` months, so rows from
        any number of months can be written (see :mod:`._partitions`).
        """
        if data.num_rows:
            structure = rows.clickhouse_structure(rows.SPAN_COLUMNS)
            for block in by_partitions(data, "start_ns"):
                self._store.insert_select("spans", self._columns, self._select, block, structure)
        return int(data.num_rows)

    def find(
        self, project_id: str, *, trace_id: str = "", session_id: str = "", limit: int = 1000
    ) -> list[SpanRow]:
        """Normalized spans of a project, oldest first, one row per span."""
        params = {"project": project_id, "trace": trace_id, "session": session_id, "limit": limit}
        found: list[SpanRow] = self._store.query(_LIST_SPANS, params)  # type: ignore[assignment]
        return found

    def count(self, project_id: str) -> dict[str, int]:
        """``{"rows": physical rows, "spans": distinct spans}`` of a project."""
        row = self._store.query(_COUNT_SPANS, {"project": project_id})[0]
        return {"rows": int(row["rows"]), "spans": int(row["spans"])}


class Events:
    """The ``events`` table (OTLP log records)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._columns, self._select = event_projection()

    def insert(self, data: pa.Table) -> int:
        """Normalize and insert raw log records (schema :data:`rows.EVENT_SCHEMA`), a statement
        per block of at most ``MAX_PARTITIONS_PER_INSERT`` months."""
        if data.num_rows:
            structure = rows.clickhouse_structure(rows.EVENT_COLUMNS)
            for block in by_partitions(data, "time_ns"):
                self._store.insert_select("events", self._columns, self._select, block, structure)
        return int(data.num_rows)

    def find(
        self,
        project_id: str,
        *,
        session_id: str = "",
        trace_id: str = "",
        event_name: str = "",
        limit: int = 1000,
    ) -> list[EventRow]:
        """Normalized log events of a project, oldest first, deduplicated."""
        params = {
            "project": project_id,
            "session": session_id,
            "trace": trace_id,
            "event": event_name,
            "limit": limit,
        }
        found: list[EventRow] = self._store.query(_LIST_EVENTS, params)  # type: ignore[assignment]
        return found

    def count(self, project_id: str) -> dict[str, int]:
        """``{"rows": physical rows, "events": distinct events}`` of a project."""
        row = self._store.query(_COUNT_EVENTS, {"project": project_id})[0]
        return {"rows": int(row["rows"]), "events": int(row["events"])}
