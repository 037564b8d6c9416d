"""Typed views of the normalized rows the store returns, deduplicated and in time order.

Input is what ``Store.spans.find`` / ``list_events`` return, but in any order and possibly
repeated (retried exports, late batches): one span per (trace_id, span_id), one event per
(session_id, time, record_id), exactly as the store's own ``LIMIT 1 BY`` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Generic, TypeVar

from skillsight._json_text import loads
from skillsight.errors import SkillsightError

T = TypeVar("T")


class RowError(SkillsightError, ValueError):
    """A span or event row lacks what every normalized row has (ids, times)."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, str]


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    if type(value) is str:
        return value
    return "" if value is None else str(value)


def _texts(row: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    """``_text`` of several keys at once (the fields every row converts up front)."""
    return [
        value if type(value) is str else "" if value is None else str(value)
        for value in map(row.get, keys)
    ]


def _texts_of(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any]], Sequence[str]]:
    """:func:`_texts` of ``keys``, taken in one C call when the row has them all as strings
    (as every stored row does); any other row goes through :func:`_texts`."""
    get = itemgetter(*keys)

    def texts(row: Mapping[str, Any]) -> Sequence[str]:
        if type(row) is dict:
            try:
                values: tuple[Any, ...] = get(row)
            except KeyError:
                return _texts(row, keys)
            for value in values:
                if type(value) is not str:
                    return _texts(row, keys)
            return values
        return _texts(row, keys)

    return texts


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
    # the store's maps are String → String already, and are only read
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _span_events(raw: Any) -> tuple[SpanEvent, ...]:
    if raw == "[]":  # most spans: no events
        return ()
    if isinstance(raw, str):
        try:
            raw = loads(raw) if raw else []
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


class _Field(Generic[T]):
    """A row field converted on read."""

    __slots__ = ("convert", "key")

    def __init__(self, key: str, convert: Callable[[Mapping[str, Any], str], T]) -> None:
        self.key = key
        self.convert = convert

    def __get__(self, obj: _Row, owner: type[_Row] | None = None) -> T:
        return self.convert(obj.row, self.key)


class _StrField(_Field[str]):
    """A text field: a stored string is returned as it is, without a conversion call."""

    __slots__ = ()

    def __get__(self, obj: _Row, owner: type[_Row] | None = None) -> str:
        value = obj.row.get(self.key)
        return value if type(value) is str else _text(obj.row, self.key)


def _str_field(key: str) -> _Field[str]:
    return _StrField(key, _text)


class _IntField(_Field[int]):
    """A number field: a stored integer is returned as it is, without a conversion call."""

    __slots__ = ()

    def __get__(self, obj: _Row, owner: type[_Row] | None = None) -> int:
        value = obj.row.get(self.key)
        return value if type(value) is int else _int(obj.row, self.key)


class _FloatField(_Field[float]):
    """A float field: a stored float is returned as it is, without a conversion call."""

    __slots__ = ()

    def __get__(self, obj: _Row, owner: type[_Row] | None = None) -> float:
        value = obj.row.get(self.key)
        return value if type(value) is float else _float(obj.row, self.key)


def _int_field(key: str) -> _Field[int]:
    return _IntField(key, _int)


def _float_field(key: str) -> _Field[float]:
    return _FloatField(key, _float)


class _Row:
    """A read-only view of one stored row; fields are converted when read, not up front, so a
    thousand-step session costs only the fields the readers look at."""

    __slots__ = ("attributes", "row")

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row
        self.attributes: Mapping[str, str] = _map(row, "attributes")

    def attr(self, key: str) -> str:
        return self.attributes.get(key, "")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Row) and type(other) is type(self) and self.row == other.row

    def __hash__(self) -> int:
        return id(self)


_SPAN_TEXTS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "source_convention",
    "operation",
    "tool_call_id",
)
_EVENT_TEXTS = (
    "record_id",
    "session_id",
    "event_name",
    "source_convention",
    "trace_id",
    "span_id",
    "tool_call_id",
)
_span_texts = _texts_of(_SPAN_TEXTS)
_event_texts = _texts_of(_EVENT_TEXTS)


class Span(_Row):
    # the fields every reader filters on are converted once; the rest when read
    __slots__ = (
        "end_ns",
        "name",
        "operation",
        "parent_span_id",
        "source",
        "span_id",
        "start_ns",
        "tool_call_id",
        "trace_id",
    )

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row
        attributes = row.get("attributes")
        self.attributes = attributes if type(attributes) is dict else _map(row, "attributes")
        (
            self.trace_id,
            self.span_id,
            self.parent_span_id,
            self.name,
            self.source,
            self.operation,
            self.tool_call_id,
        ) = _span_texts(row)
        start, end = row.get("start_time_unix_nano"), row.get("end_time_unix_nano")
        self.start_ns = start if type(start) is int else _int(row, "start_time_unix_nano")
        end = end if type(end) is int else _int(row, "end_time_unix_nano")
        self.end_ns = max(self.start_ns, end)

    status_message = _str_field("status_message")
    session_id = _str_field("session_id")
    agent = _str_field("agent")
    model = _str_field("model")
    tool_name = _str_field("tool_name")
    skill_name = _str_field("skill_name")
    input = _str_field("input")
    output = _str_field("output")
    input_tokens = _int_field("input_tokens")
    output_tokens = _int_field("output_tokens")
    cache_read_tokens = _int_field("cache_read_tokens")
    cache_creation_tokens = _int_field("cache_creation_tokens")
    cost_usd = _float_field("cost_usd")

    @property
    def status_code(self) -> str:
        value = self.row.get("status_code")
        return (value if type(value) is str else _text(self.row, "status_code")).lower()

    @property
    def resource(self) -> Mapping[str, str]:
        value = self.row.get("resource_attributes")
        return value if type(value) is dict else _map(self.row, "resource_attributes")

    @property
    def events(self) -> tuple[SpanEvent, ...]:
        return _span_events(self.row.get("span_events"))

    @property
    def failed(self) -> bool:
        return self.status_code == "error"


class Event(_Row):
    __slots__ = (
        "name",
        "record_id",
        "session_id",
        "source",
        "span_id",
        "time_ns",
        "tool_call_id",
        "trace_id",
    )

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row
        attributes = row.get("attributes")
        self.attributes = attributes if type(attributes) is dict else _map(row, "attributes")
        (
            self.record_id,
            self.session_id,
            self.name,
            self.source,
            self.trace_id,
            self.span_id,
            self.tool_call_id,
        ) = _event_texts(row)
        time_ns = row.get("time_unix_nano")
        self.time_ns = time_ns if type(time_ns) is int else _int(row, "time_unix_nano")

    prompt_id = _str_field("prompt_id")
    skill_name = _str_field("skill_name")

    @property
    def resource(self) -> Mapping[str, str]:
        value = self.row.get("resource_attributes")
        return value if type(value) is dict else _map(self.row, "resource_attributes")

    tool_name = _str_field("tool_name")
    model = _str_field("model")
    input_tokens = _int_field("input_tokens")
    output_tokens = _int_field("output_tokens")
    cache_read_tokens = _int_field("cache_read_tokens")
    cache_creation_tokens = _int_field("cache_creation_tokens")
    cost_usd = _float_field("cost_usd")


def span_from_row(row: Mapping[str, Any]) -> Span:
    _require(row, ("trace_id", "span_id"), "span")
    return Span(row)


def event_from_row(row: Mapping[str, Any]) -> Event:
    _require(row, ("record_id",), "event")
    return Event(row)


def unique_spans(rows: Iterable[Mapping[str, Any]]) -> list[Span]:
    """One span per (trace_id, span_id), ordered by start time then ids.

    Of several copies the one that ended last (then the richest) wins, whatever the order of
    delivery, so a rebuild does not depend on which copy arrived first.
    """
    best: dict[tuple[str, str], Span] = {}
    for row in rows:
        span = Span(row)
        if not (
            span.trace_id
            and span.span_id
            and type(row.get("trace_id")) is str
            and type(row.get("span_id")) is str
        ):  # what _require asks, known without its look when the ids were stored as texts
            _require(row, ("trace_id", "span_id"), "span")
        key = (span.trace_id, span.span_id)
        held = best.setdefault(key, span)
        if held is not span and _rank(span) > _rank(held):
            best[key] = span
    return sorted(best.values(), key=lambda s: (s.start_ns, s.trace_id, s.span_id))


def _rank(span: Span) -> tuple[int, int, int]:
    return (span.end_ns, len(span.attributes), len(str(span.row.get("span_events", ""))))


def unique_events(rows: Iterable[Mapping[str, Any]]) -> list[Event]:
    """One event per (session_id, time, record_id), in time order (sequence number, then id)."""
    seen: dict[tuple[str, int, str], Event] = {}
    for row in rows:
        event = Event(row)
        if not event.record_id or type(row.get("record_id")) is not str:
            _require(row, ("record_id",), "event")
        seen.setdefault((event.session_id, event.time_ns, event.record_id), event)
    return sorted(seen.values(), key=_event_order)


def _event_order(event: Event) -> tuple[int, int, str]:
    sequence = event.attributes.get("event.sequence", "")
    return (event.time_ns, int(sequence) if sequence.isdigit() else 0, event.record_id)


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed when it is a JSON object, else None."""
    if not text or text[0] != "{":
        return None
    try:
        value = loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def json_value(text: str) -> Any:
    """``text`` parsed as JSON when it is JSON, else the text itself."""
    if not text:
        return None
    try:
        return loads(text)
    except json.JSONDecodeError:
        return text
