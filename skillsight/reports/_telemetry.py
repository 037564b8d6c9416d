"""JSON shapes of the REST API (they document themselves in the OpenAPI at /docs)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from skillsight.store.records import Activation


class Tokens(BaseModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0


class SpanOut(BaseModel):
    """One normalized span."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    start_time: str = Field(description="ISO 8601, UTC, nanosecond precision")
    end_time: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    duration_ms: float
    status_code: str
    status_message: str
    service_name: str
    scope_name: str
    source_convention: str = Field(description="convention the span was recognised as")
    operation: str = Field(description="invoke_agent, chat, execute_tool, activate_skill, ...")
    session_id: str
    agent: str
    model: str
    tool_name: str
    tool_call_id: str
    skill_name: str
    input: str
    output: str
    tokens: Tokens
    cost_usd: float
    attributes: dict[str, str]
    resource_attributes: dict[str, str]
    events: list[dict[str, Any]]
    links: list[dict[str, Any]]


class EventOut(BaseModel):
    """One normalized log event."""

    record_id: str
    time: str
    time_unix_nano: int
    trace_id: str
    span_id: str
    event_name: str
    severity_text: str
    body: str
    service_name: str
    source_convention: str
    session_id: str
    prompt_id: str
    skill_name: str
    tool_name: str
    tool_call_id: str
    model: str
    tokens: Tokens
    cost_usd: float
    attributes: dict[str, str]
    resource_attributes: dict[str, str]


def iso(unix_nano: int) -> str:
    seconds, nanos = divmod(int(unix_nano), 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"


def _json_list(text: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(text) if text else []
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def _tokens(row: Mapping[str, Any]) -> Tokens:
    return Tokens(
        input=row["input_tokens"],
        output=row["output_tokens"],
        cache_read=row["cache_read_tokens"],
        cache_creation=row["cache_creation_tokens"],
    )


def span_out(row: Mapping[str, Any]) -> SpanOut:
    start, end = int(row["start_time_unix_nano"]), int(row["end_time_unix_nano"])
    return SpanOut(
        **{
            k: row[k]
            for k in (
                "trace_id",
                "span_id",
                "parent_span_id",
                "name",
                "kind",
                "status_code",
                "status_message",
                "service_name",
                "scope_name",
                "source_convention",
                "operation",
                "session_id",
                "agent",
                "model",
                "tool_name",
                "tool_call_id",
                "skill_name",
                "input",
                "output",
                "cost_usd",
                "attributes",
                "resource_attributes",
            )
        },
        start_time=iso(start),
        end_time=iso(end),
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        duration_ms=(end - start) / 1e6,
        tokens=_tokens(row),
        events=_json_list(row["span_events"]),
        links=_json_list(row["links"]),
    )


def event_out(row: Mapping[str, Any]) -> EventOut:
    return EventOut(
        **{
            k: row[k]
            for k in (
                "record_id",
                "trace_id",
                "span_id",
                "event_name",
                "severity_text",
                "body",
                "service_name",
                "source_convention",
                "session_id",
                "prompt_id",
                "skill_name",
                "tool_name",
                "tool_call_id",
                "model",
                "cost_usd",
                "attributes",
                "resource_attributes",
            )
        },
        time=iso(row["time_unix_nano"]),
        time_unix_nano=int(row["time_unix_nano"]),
        tokens=_tokens(row),
    )


class SkillOut(BaseModel):
    """One recorded version of a skill in the catalogue (``skillsight skills scan --store``)."""

    name: str
    version: str = Field(description="SHA-256 of the skill folder's content")
    description: str
    allowed_tools: list[str] | None = Field(
        description="declared allowed-tools patterns; null when none are declared (unconstrained)"
    )
    scripts: list[str]
    source_uri: str
    scanned_at: str = Field(description="ISO 8601, UTC")


class ActivationOut(Activation):
    """One skill activation: the decision (trigger, request, visible skills), the internal
    trajectory (``tool_calls``, the loading call excluded), the integration (the next agent
    message) and its cost. The same record the evaluators score."""
