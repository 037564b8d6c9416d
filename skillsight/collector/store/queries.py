"""Read queries of the collector. Every one filters on project_id (tenancy) and deduplicates
with ``LIMIT 1 BY`` rather than ``FINAL``, which stays fast on large tables."""

from __future__ import annotations

SPAN_COLUMNS = """
    trace_id, span_id, parent_span_id, name, kind,
    toUnixTimestamp64Nano(start_time) AS start_time_unix_nano,
    toUnixTimestamp64Nano(end_time) AS end_time_unix_nano,
    status_code, status_message, service_name, scope_name, source_convention, operation,
    session_id, agent, model, tool_name, tool_call_id, skill_name, input, output,
    input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
    attributes, resource_attributes, span_events, links"""

LIST_SPANS = f"""
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

EVENT_COLUMNS = """
    record_id, toUnixTimestamp64Nano(timestamp) AS time_unix_nano, trace_id, span_id,
    severity_number, severity_text, event_name, body, service_name, scope_name,
    source_convention, session_id, prompt_id, skill_name, tool_name, tool_call_id, model,
    input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
    attributes, resource_attributes"""

LIST_EVENTS = f"""
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

COUNT_SPANS = """
SELECT count() AS rows, uniqExact(trace_id, span_id) AS spans
FROM spans WHERE project_id = {project:String}"""

COUNT_EVENTS = """
SELECT count() AS rows, uniqExact(session_id, timestamp, record_id) AS events
FROM events WHERE project_id = {project:String}"""
