"""Typed views of the normalized rows the store returns, deduplicated and in time order.

Input is what ``Store.list_spans`` / ``list_events`` return, but in any order and possibly
repeated (retried exports, late batches): one span per (trace_id, span_id), one event per
(session_id, time, record_id), exactly as the store's own ``LIMIT 1 BY`` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillsight.errors import SkillsightError


class RowError(SkillsightError, ValueError):
    """A span or event row lacks what every normalized row has (ids, times)."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    status_code: str
    status_message: str
    source: str
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
    attributes: Mapping[str, str]
    resource: Mapping[str, str]
    events: tuple[SpanEvent, ...]

    def attr(self, key: str) -> str:
        return self.attributes.get(key, "")

    @property
    def failed(self) -> bool:
        return self.status_code == "error"


@dataclass(frozen=True, slots=True)
class Event:
    record_id: str
    time_ns: int
    trace_id: str
    span_id: str
    name: str
    source: str
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
    attributes: Mapping[str, str] = field(default_factory=dict)

    def attr(self, key: str) -> str:
        return self.attributes.get(key, "")


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value)


def _int(row: Mapping[str, Any], key: str) -> int:
    value = row.get(key)
    try:
        return int(value) if value not in (None, "") else 0
    except (TypeError, ValueError):
        return 0


def _float(row: Mapping[str, Any], key: str) -> float:
    value = row.get(key)
    try:
        return float(value) if value not in (None, "") else 0.0
    except (TypeError, ValueError):
        return 0.0


def _map(row: Mapping[str, Any], key: str) -> Mapping[str, str]:
    value = row.get(key)
    if isinstance(value, Mapping):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    return {}


def _span_events(raw: Any) -> tuple[SpanEvent, ...]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw else []
        except json.JSONDecodeError:
            return ()
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if isinstance(item, Mapping):
            attributes = item.get("attributes")
            out.append(
                SpanEvent(
                    name=str(item.get("name", "")),
                    time_ns=_int(item, "time_unix_nano"),
                    attributes={str(k): str(v) for k, v in attributes.items()}
                    if isinstance(attributes, Mapping)
                    else {},
                )
            )
    return tuple(out)


def _require(row: Mapping[str, Any], keys: tuple[str, ...], what: str) -> None:
    missing = [key for key in keys if not row.get(key)]
    if missing:
        raise RowError(f"{what} row without {', '.join(missing)}: {dict(row)!r:.200}")


def span_from_row(row: Mapping[str, Any]) -> Span:
    _require(row, ("trace_id", "span_id"), "span")
    start = _int(row, "start_time_unix_nano")
    return Span(
        trace_id=_text(row, "trace_id"),
        span_id=_text(row, "span_id"),
        parent_span_id=_text(row, "parent_span_id"),
        name=_text(row, "name"),
        start_ns=start,
        end_ns=max(start, _int(row, "end_time_unix_nano")),
        status_code=_text(row, "status_code").lower(),
        status_message=_text(row, "status_message"),
        source=_text(row, "source_convention"),
        operation=_text(row, "operation"),
        session_id=_text(row, "session_id"),
        agent=_text(row, "agent"),
        model=_text(row, "model"),
        tool_name=_text(row, "tool_name"),
        tool_call_id=_text(row, "tool_call_id"),
        skill_name=_text(row, "skill_name"),
        input=_text(row, "input"),
        output=_text(row, "output"),
        input_tokens=_int(row, "input_tokens"),
        output_tokens=_int(row, "output_tokens"),
        cache_read_tokens=_int(row, "cache_read_tokens"),
        cache_creation_tokens=_int(row, "cache_creation_tokens"),
        cost_usd=_float(row, "cost_usd"),
        attributes=_map(row, "attributes"),
        resource=_map(row, "resource_attributes"),
        events=_span_events(row.get("span_events")),
    )


def event_from_row(row: Mapping[str, Any]) -> Event:
    _require(row, ("record_id",), "event")
    return Event(
        record_id=_text(row, "record_id"),
        time_ns=_int(row, "time_unix_nano"),
        trace_id=_text(row, "trace_id"),
        span_id=_text(row, "span_id"),
        name=_text(row, "event_name"),
        source=_text(row, "source_convention"),
        session_id=_text(row, "session_id"),
        prompt_id=_text(row, "prompt_id"),
        skill_name=_text(row, "skill_name"),
        tool_name=_text(row, "tool_name"),
        tool_call_id=_text(row, "tool_call_id"),
        model=_text(row, "model"),
        input_tokens=_int(row, "input_tokens"),
        output_tokens=_int(row, "output_tokens"),
        cache_read_tokens=_int(row, "cache_read_tokens"),
        cache_creation_tokens=_int(row, "cache_creation_tokens"),
        cost_usd=_float(row, "cost_usd"),
        attributes=_map(row, "attributes"),
    )


def unique_spans(rows: Iterable[Mapping[str, Any]]) -> list[Span]:
    """One span per (trace_id, span_id), ordered by start time then ids.

    Of several copies the one that ended last (then the richest) wins, whatever the order of
    delivery, so a rebuild does not depend on which copy arrived first.
    """
    best: dict[tuple[str, str], tuple[tuple[int, int, int, str], Span]] = {}
    for row in rows:
        span = span_from_row(row)
        rank = (span.end_ns, len(span.attributes), len(span.events), span.status_code)
        key = (span.trace_id, span.span_id)
        held = best.get(key)
        if held is None or rank > held[0]:
            best[key] = (rank, span)
    return sorted((s for _, s in best.values()), key=lambda s: (s.start_ns, s.trace_id, s.span_id))


def unique_events(rows: Iterable[Mapping[str, Any]]) -> list[Event]:
    """One event per (session_id, time, record_id), in time order (sequence number, then id)."""
    seen: dict[tuple[str, int, str], Event] = {}
    for row in rows:
        event = event_from_row(row)
        seen.setdefault((event.session_id, event.time_ns, event.record_id), event)
    return sorted(seen.values(), key=_event_order)


def _event_order(event: Event) -> tuple[int, int, str]:
    sequence = event.attr("event.sequence")
    return (event.time_ns, int(sequence) if sequence.isdigit() else 0, event.record_id)


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed when it is a JSON object, else None."""
    if not text or text[0] != "{":
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def json_value(text: str) -> Any:
    """``text`` parsed as JSON when it is JSON, else the text itself."""
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
