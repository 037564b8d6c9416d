"""The SQL of the fast path: raw span columns straight out of framed OTLP protobuf.

:func:`raw_select` yields exactly the raw columns of :data:`skillsight.store.rows.SPAN_COLUMNS`,
valued as :func:`skillsight.ingest.otlp.traces.decode_protobuf` values them, so the store's
normalizing projection applies to it unchanged.

Each query level selects only what the next one needs: a column still present at an ARRAY JOIN
is copied once per element, and copying a scope's whole span list once per span is quadratic.
"""

from __future__ import annotations

from skillsight.store.fastpath._render import Renderer, field, lit
from skillsight.store.fastpath._schema import ENVELOPE, PROTO, STRUCTURE
from skillsight.store.rows import SPAN_COLUMNS
from skillsight.store.values import MAX_INT64, SPAN_KINDS, STATUS_CODES, Limits

UNSUPPORTED = "SKILLSIGHT_FASTPATH_UNSUPPORTED"


def _enum_text(expr: str, names: tuple[str, ...]) -> str:
    numbers = ", ".join(str(i) for i in range(len(names)))
    texts = ", ".join(lit(n) for n in names)
    return f"transform({expr}, [{numbers}], [{texts}], {lit(names[0])})"


def _hex(expr: str) -> str:
    return f"lower(hex({expr}))"


def settings() -> str:
    """Settings the statements need to read the file and render JSON as Python does."""
    return (
        f"format_schema_source = 'string', format_schema = {lit(PROTO)}, "
        f"format_schema_message_name = '{ENVELOPE}', input_format_protobuf_oneof_presence = 1, "
        "output_format_json_escape_forward_slashes = 0, "
        # the cache hashes the WHERE condition's whole expression tree on every statement
        "use_query_condition_cache = 0"
    )


def _resources(r: Renderer, path: str) -> str:
    """One row per resource: its project, rendered attributes and scopes."""
    attributes = field("rs", "resource", "attributes")
    return (
        f"SELECT index, project, {field(attributes, 'key')} AS res_keys, "
        f"{r.values(attributes)} AS res_values, {r.unsupported(attributes)} AS res_unsupported, "
        f"{field('rs', 'scope_spans')} AS scope_spans\n"
        f"FROM file({lit(path)}, 'Protobuf', {lit(STRUCTURE)})\n"
        f"ARRAY JOIN {field('request', 'resource_spans')} AS rs"
    )


def _spans(r: Renderer, path: str) -> str:
    """One row per span, with what it inherits from its resource and scope."""
    return (
        f"SELECT index, project, res_keys, res_values, res_unsupported, "
        f"{field('ss', 'scope', 'name')} AS scope_name, "
        f"{field('ss', 'scope', 'version')} AS scope_version, s\n"
        f"FROM (\n{_resources(r, path)}\n)\n"
        f"ARRAY JOIN scope_spans AS ss\n"
        f"ARRAY JOIN {field('ss', 'spans')} AS s"
    )


def _entries(r: Renderer) -> str:
    """The JSON of each event, then of each link, as ``json.dumps`` writes them.

    Events and links share one renderer of their attribute dicts: rendering code is paid for
    per statement, and spans with events or links are rare. Strings are escaped by
    toJSONString and each entry's text repaired once (see :meth:`Renderer.json_repair`).
    """
    event, link, entry, key, val = (r.name(n) for n in ("e", "l", "en", "k", "v"))
    events = (
        f"arrayMap({event} -> tuple(concat('{{\"time_unix_nano\": ', "
        f"toString({field(event, 'time_unix_nano')}), ', \"name\": ', "
        f"toJSONString({field(event, 'name')}), ', \"attributes\": {{'), "
        f"{field(event, 'attributes')}), {field('s', 'events')})"
    )
    links = (
        f'arrayMap({link} -> tuple(concat(\'{{"trace_id": "\', {_hex(field(link, "trace_id"))}, '
        f'\'", "span_id": "\', {_hex(field(link, "span_id"))}, \'", "attributes": {{\'), '
        f"{field(link, 'attributes')}), {field('s', 'links')})"
    )
    attributes = f"tupleElement({entry}, 2)"
    item = f"concat(toJSONString({key}), ': ', toJSONString({r.text(val)}))"
    one = r.json_repair(
        f"concat(tupleElement({entry}, 1), arrayStringConcat(arrayMap(({key}, {val}) -> {item}, "
        f"{field(attributes, 'key')}, {field(attributes, 'value')}), ', '), '}}}}')"
    )
    return f"arrayMap({entry} -> {one}, arrayConcat({events}, {links}))"


def _entries_unsupported(r: Renderer) -> str:
    """:meth:`Renderer.unsupported` over event and link attributes, and repeated dict keys."""
    lists = (
        f"arrayConcat({field('s', 'events', 'attributes')}, {field('s', 'links', 'attributes')})"
    )
    every, one = r.name("ls"), r.name("l")
    return (
        f"arrayMap({every} -> {r.unsupported(f'arrayFlatten({every})')} OR "
        f"arrayExists({one} -> arrayUniq(tupleElement({one}, 'key')) != length({one}), {every}), "
        f"[{lists}])[1]"
    )


def _ids_differ() -> str:
    """Whether ClickHouse read other ids than protobuf's parser validated.

    A field sent twice is one place they part: protobuf keeps the last value, ClickHouse's
    reader an empty one. No serializer does that, but a span must never be stored without ids.
    """
    parent = f"length({field('s', 'parent_span_id')})"
    return (
        f"(length({field('s', 'trace_id')}) != 16 OR length({field('s', 'span_id')}) != 8 "
        f"OR {parent} NOT IN (0, 8))"
    )


def _with_entries(r: Renderer, path: str, entries: bool) -> str:
    """Spans with their event and link JSON, and whether anything is unsupported.

    Without ``entries`` no event or link is rendered and a span that has any is unsupported:
    the statement is then a good deal cheaper to analyse, and most spans have neither.
    """
    has_entries = f"(notEmpty({field('s', 'events')}) OR notEmpty({field('s', 'links')}))"
    if entries:
        rendered = f"if({has_entries}, {_entries(r)}, [])"
        unsupported = f"({has_entries} AND {_entries_unsupported(r)})"
    else:
        rendered, unsupported = "CAST([] AS Array(String))", has_entries
    return (
        f"SELECT *, length({field('s', 'events')}) AS n_events, {rendered} AS entries,\n"
        f"  res_unsupported OR {r.unsupported(field('s', 'attributes'))} OR {unsupported} "
        f"OR {_ids_differ()} AS unsupported\n"
        f"FROM (\n{_spans(r, path)}\n)"
    )


def raw_select(path: str, limits: Limits, *, entries: bool = True) -> str:
    """SELECT of the raw span columns of every request in the file at ``path``.

    It throws :data:`UNSUPPORTED` when some span holds a value rendered differently here than
    in Python (or, without ``entries``, has events or links); :func:`unsupported_select` then
    tells which requests hold one.
    """
    r = Renderer(limits)
    status = field("s", "status")
    name = field("s", "name")
    if entries:
        events = r.cap(
            "concat('[', arrayStringConcat(arraySlice(entries, 1, n_events), ', '), ']')"
        )
        events = f"if(n_events = 0, '[]', {events})"
        links = r.cap(
            "concat('[', arrayStringConcat(arraySlice(entries, n_events + 1), ', '), ']')"
        )
        links = f"if(length(entries) = n_events, '[]', {links})"
    else:
        events = links = "'[]'"
    columns = {
        "project_id": "project",
        "trace_id": _hex(field("s", "trace_id")),
        "span_id": _hex(field("s", "span_id")),
        "parent_span_id": _hex(field("s", "parent_span_id")),
        # the Python decoder cuts names to 1024 code points, without a marker
        "name": f"if(length({name}) <= 1024, {name}, substringUTF8({name}, 1, 1024))",
        "kind": _enum_text(field("s", "kind"), SPAN_KINDS),
        "start_ns": f"toInt64(least({field('s', 'start_time_unix_nano')}, {MAX_INT64}))",
        "end_ns": f"toInt64(least({field('s', 'end_time_unix_nano')}, {MAX_INT64}))",
        "status_code": _enum_text(field(status, "code"), STATUS_CODES),
        "status_message": r.cap(field(status, "message")),
        "scope_name": "scope_name",
        "scope_version": "scope_version",
        "attr_keys": field("s", "attributes", "key"),
        "attr_values": r.values(field("s", "attributes")),
        "res_keys": "res_keys",
        "res_values": "res_values",
        "span_events": events,
        "links": links,
    }
    assert list(columns) == [c for c, _, _ in SPAN_COLUMNS]
    listed = ",\n  ".join(f"{expr} AS {col}" for col, expr in columns.items())
    return (
        f"SELECT\n  {listed}\n"
        f"FROM (\n{_with_entries(r, path, entries)}\n)\n"
        f"WHERE NOT throwIf(unsupported, {lit(UNSUPPORTED)})"
    )


def unsupported_select(path: str, limits: Limits, *, entries: bool = True) -> str:
    """SELECT of the indexes of requests that make :func:`raw_select` throw."""
    r = Renderer(limits)
    return (
        f"SELECT DISTINCT index FROM (\n{_with_entries(r, path, entries)}\n) WHERE unsupported\n"
        f"SETTINGS {settings()}"
    )


__all__ = ["UNSUPPORTED", "raw_select", "settings", "unsupported_select"]
