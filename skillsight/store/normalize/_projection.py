"""Compose the conventions into the SELECT list that turns raw rows into stored rows."""

from __future__ import annotations

from collections.abc import Sequence

from skillsight.store.normalize._convention import Convention
from skillsight.store.normalize._sql import first, lit, when

_NUMERIC = {
    "input_tokens": "toUInt64OrZero",
    "output_tokens": "toUInt64OrZero",
    "cache_read_tokens": "toUInt64OrZero",
    "cache_creation_tokens": "toUInt64OrZero",
    "cost_usd": "toFloat64OrZero",
}


def _combine(conventions: Sequence[Convention], field: str, events: bool) -> str:
    exprs: list[str] = []
    for convention in conventions:
        fields = convention.event_fields if events else convention.span_fields
        if field not in fields:
            continue
        detect = convention.event_detect if events else convention.detect
        exprs.append(when(detect, fields[field]) if convention.gated else fields[field])
    combined = first(*exprs) if exprs else "''"
    cast = _NUMERIC.get(field)
    return f"{cast}({combined})" if cast else combined


def _source(conventions: Sequence[Convention], events: bool) -> str:
    arms = []
    for convention in conventions:
        detect = convention.event_detect if events else convention.detect
        arms.append(f"{detect}, {lit(convention.name)}")
    return f"multiIf({', '.join(arms)}, 'otel')"


def _default_conventions() -> Sequence[Convention]:
    from skillsight.store.normalize import CONVENTIONS

    return CONVENTIONS


# Raw columns arrive as written by the decoders (skillsight.store.rows), whose text is valid
# UTF-8 already (Arrow refuses anything else); the scalar columns are still passed through
# toValidUTF8 so that a source that bypasses Python cannot store broken text.
_SPAN_BASE = """
    project_id,
    trace_id,
    span_id,
    parent_span_id,
    toValidUTF8(name) AS name,
    kind,
    fromUnixTimestamp64Nano(start_ns, 'UTC') AS start_time,
    fromUnixTimestamp64Nano(greatest(end_ns, start_ns), 'UTC') AS end_time,
    status_code,
    toValidUTF8(status_message) AS status_message,
    mapFromArrays(attr_keys, attr_values) AS attributes,
    mapFromArrays(res_keys, res_values) AS resource_attributes,
    resource_attributes['service.name'] AS service_name,
    toValidUTF8(scope_name) AS scope_name,
    toValidUTF8(scope_version) AS scope_version,
    toValidUTF8(span_events) AS span_events,
    toValidUTF8(links) AS links"""

_EVENT_BASE = """
    project_id,
    record_id,
    fromUnixTimestamp64Nano(time_ns, 'UTC') AS timestamp,
    fromUnixTimestamp64Nano(observed_ns, 'UTC') AS observed_time,
    trace_id,
    span_id,
    toUInt8(least(greatest(severity_number, 0), 255)) AS severity_number,
    toValidUTF8(severity_text) AS severity_text,
    toValidUTF8(body) AS body,
    toValidUTF8(scope_name) AS scope_name,
    mapFromArrays(attr_keys, attr_values) AS attributes,
    mapFromArrays(res_keys, res_values) AS resource_attributes,
    resource_attributes['service.name'] AS service_name,
    toValidUTF8(arrayFirst(x -> x != '', [
        event_name,
        if(match(body, '^[A-Za-z][A-Za-z0-9_]*([.][A-Za-z0-9_]+)+$'), body, ''),
        attributes['event.name']])) AS event_name"""


def span_projection(conventions: Sequence[Convention] | None = None) -> tuple[list[str], str]:
    """(target columns, SELECT list) turning raw span rows into ``spans`` rows."""
    from skillsight.store.normalize._convention import SPAN_FIELDS

    convs = conventions if conventions is not None else _default_conventions()
    parts = [_SPAN_BASE, f"    {_source(convs, events=False)} AS source_convention"]
    parts += [f"    {_combine(convs, f, events=False)} AS {f}" for f in SPAN_FIELDS]
    select = ",\n".join(parts)
    return _names(select), select


def event_projection(conventions: Sequence[Convention] | None = None) -> tuple[list[str], str]:
    """(target columns, SELECT list) turning raw log records into ``events`` rows."""
    from skillsight.store.normalize._convention import EVENT_FIELDS

    convs = conventions if conventions is not None else _default_conventions()
    parts = [_EVENT_BASE, f"    {_source(convs, events=True)} AS source_convention"]
    parts += [
        f"    {_combine(convs, f, events=True)} AS {f}" for f in EVENT_FIELDS if f != "event_name"
    ]
    select = ",\n".join(parts)
    return _names(select), select


def _names(select: str) -> list[str]:
    """The output column names of a SELECT list built above (alias, or the bare column)."""
    names: list[str] = []
    depth = 0
    current = ""
    for char in select:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == "," and depth == 0:
            names.append(_alias(current))
            current = ""
        else:
            current += char
    names.append(_alias(current))
    return names


def _alias(item: str) -> str:
    item = item.strip()
    return item.rsplit(" AS ", 1)[1].strip() if " AS " in item else item
