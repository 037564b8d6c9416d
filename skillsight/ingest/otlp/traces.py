"""OTLP trace requests (protobuf or JSON) into raw span rows.

The protobuf path is the hot one and is written for speed: protobuf's C parser decodes the
request, one loop flattens it into column lists, and everything else (normalization) is left to
ClickHouse. A span with unusable ids is rejected alone; a request protobuf cannot parse as a
whole (bad UTF-8, absurd nesting) goes through :mod:`._salvage`, which keeps every usable span.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from skillsight.errors import DecodeError
from skillsight.ingest.otlp import _salvage
from skillsight.ingest.otlp._jsonbody import get, load, objects
from skillsight.ingest.otlp._result import Decoded
from skillsight.ingest.otlp.window import Window
from skillsight.store.rows import span_columns
from skillsight.store.values import (
    MAX_INT64,
    SPAN_KINDS,
    STATUS_CODES,
    Limits,
    cap,
    json_attributes,
    json_hex_id,
    json_span_kind,
    json_status_code,
    json_uint64,
    render,
)

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


def decode_protobuf(
    body: bytes, project_id: str, limits: Limits, window: Window | None = None
) -> Decoded:
    """Rows of an ``ExportTraceServiceRequest`` in protobuf encoding."""
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except ProtobufDecodeError:
        request = None
    decoded = Decoded("traces", span_columns())
    if request is None:
        # raises DecodeError when the body is not a trace request at all
        request = _salvage.trace_request(body, decoded, limits)
    if body and not request.resource_spans:
        raise DecodeError("body is not an OTLP ExportTraceServiceRequest (no resource_spans)")
    _flatten(request, project_id, limits, decoded, window or Window())
    return decoded


def attributes(items: Any, limits: Limits) -> tuple[list[str], list[str]]:
    keys: list[str] = []
    values: list[str] = []
    max_chars = limits.max_value_chars
    for kv in items:
        keys.append(kv.key)
        value = kv.value
        # A member of the oneof that is not the one set reads as its default, so a non-empty
        # string is the value: most attributes are, and this spares them WhichOneof (a fifth of
        # the decoder's time per span).
        text = value.string_value
        if text:
            values.append(text if len(text) <= max_chars else cap(text, limits))
            continue
        which = value.WhichOneof("value")
        if which == "string_value":
            values.append("")
        elif which == "int_value":
            values.append(str(value.int_value))
        elif which == "bool_value":
            values.append("true" if value.bool_value else "false")
        elif which == "double_value":
            values.append(str(value.double_value))
        else:
            values.append(render(value, limits))
    return keys, values


def _events_json(span: Any, limits: Limits) -> str:
    events = [
        {
            "time_unix_nano": event.time_unix_nano,
            "name": event.name,
            "attributes": dict(zip(*attributes(event.attributes, limits), strict=True)),
        }
        for event in span.events
    ]
    return cap(json.dumps(events, ensure_ascii=False), limits)


def _links_json(span: Any, limits: Limits) -> str:
    links = [
        {
            "trace_id": link.trace_id.hex(),
            "span_id": link.span_id.hex(),
            "attributes": dict(zip(*attributes(link.attributes, limits), strict=True)),
        }
        for link in span.links
    ]
    return cap(json.dumps(links, ensure_ascii=False), limits)


def _flatten(
    request: Any, project_id: str, limits: Limits, decoded: Decoded, window: Window
) -> None:
    data = decoded.columns.data
    earliest, latest = bounds = window.bounds()
    keeps_unset = window.keeps_unset
    # Local bindings: this loop runs once per span on the ingest hot path.
    project = data["project_id"].append
    trace_ids = data["trace_id"].append
    span_ids = data["span_id"].append
    parents = data["parent_span_id"].append
    names = data["name"].append
    kinds = data["kind"].append
    starts = data["start_ns"].append
    ends = data["end_ns"].append
    status_codes = data["status_code"].append
    status_messages = data["status_message"].append
    scope_names = data["scope_name"].append
    scope_versions = data["scope_version"].append
    offsets = decoded.columns.offsets
    attr_keys = data["attr_keys"].extend
    attr_values = data["attr_values"].extend
    res_keys = data["res_keys"].extend
    res_values = data["res_values"].extend
    attr_offsets = offsets["attr_keys"].append
    value_offsets = offsets["attr_values"].append
    res_key_offsets = offsets["res_keys"].append
    res_value_offsets = offsets["res_values"].append
    n_attrs = 0
    n_res = 0
    span_events = data["span_events"].append
    links = data["links"].append
    n_kinds = len(SPAN_KINDS)
    n_codes = len(STATUS_CODES)
    for resource_spans in request.resource_spans:
        r_keys, r_values = attributes(resource_spans.resource.attributes, limits)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_name = scope.name
            scope_version = scope.version
            for span in scope_spans.spans:
                trace_id = span.trace_id
                span_id = span.span_id
                parent = span.parent_span_id
                if len(trace_id) != 16 or trace_id == _ZERO_TRACE:
                    decoded.reject(f"span {span.name[:60]!r}: trace_id must be 16 non-zero bytes")
                    continue
                if len(span_id) != 8 or span_id == _ZERO_SPAN:
                    decoded.reject(f"span {span.name[:60]!r}: span_id must be 8 non-zero bytes")
                    continue
                if parent and len(parent) != 8:
                    decoded.reject(f"span {span.name[:60]!r}: parent_span_id must be 8 bytes")
                    continue
                start = span.start_time_unix_nano
                if not earliest <= start <= latest and (start or not keeps_unset):
                    decoded.reject(f"span {span.name[:60]!r}: {window.refusal(start, bounds)}")
                    continue
                keys, values = attributes(span.attributes, limits)
                project(project_id)
                trace_ids(trace_id.hex())
                span_ids(span_id.hex())
                parents(parent.hex())
                names(span.name if len(span.name) <= 1024 else span.name[:1024])
                kind = span.kind
                kinds(SPAN_KINDS[kind] if 0 <= kind < n_kinds else "unspecified")
                starts(min(start, MAX_INT64))
                ends(min(span.end_time_unix_nano, MAX_INT64))
                status = span.status
                code = status.code
                status_codes(STATUS_CODES[code] if 0 <= code < n_codes else "unset")
                status_messages(cap(status.message, limits) if status.message else "")
                scope_names(scope_name)
                scope_versions(scope_version)
                attr_keys(keys)
                attr_values(values)
                n_attrs += len(keys)
                attr_offsets(n_attrs)
                value_offsets(n_attrs)
                res_keys(r_keys)
                res_values(r_values)
                n_res += len(r_keys)
                res_key_offsets(n_res)
                res_value_offsets(n_res)
                span_events(_events_json(span, limits) if span.events else "[]")
                links(_links_json(span, limits) if span.links else "[]")


def decode_json(
    body: bytes, project_id: str, limits: Limits, window: Window | None = None
) -> Decoded:
    """Rows of an ``ExportTraceServiceRequest`` in OTLP/JSON encoding.

    OTLP/JSON differs from generic protobuf JSON: ids are hex, 64-bit integers may be strings,
    enums may be integers, and keys are lowerCamelCase (snake_case is accepted too).
    """
    decoded = Decoded("traces", span_columns())
    window = window or Window()
    bounds = window.bounds()
    document = load(body, decoded)
    if document and get(document, "resourceSpans") is None:
        # e.g. a logs request sent to /v1/traces: refuse it rather than answer 200 for nothing
        raise DecodeError("body is not an OTLP/JSON ExportTraceServiceRequest (no resourceSpans)")
    for rs in objects(document, "resourceSpans"):
        resource = rs.get("resource") or {}
        try:
            r_keys, r_values = json_attributes(resource.get("attributes"), limits)
        except (ValueError, TypeError, AttributeError) as exc:
            r_keys, r_values = [], []
            decoded.note(f"resource attributes dropped: {exc}")
        for ss in objects(rs, "scopeSpans"):
            scope = ss.get("scope") or {}
            for span in objects(ss, "spans", items_must_be_objects=False):
                try:
                    _json_span(
                        span, scope, r_keys, r_values, project_id, limits, decoded, window, bounds
                    )
                except (ValueError, TypeError, AttributeError, OverflowError) as exc:
                    name = span.get("name") if isinstance(span, dict) else None
                    decoded.reject(f"span {str(name)[:60]!r}: {exc}")
    return decoded


def _json_span(
    span: Any,
    scope: Any,
    r_keys: list[str],
    r_values: list[str],
    project_id: str,
    limits: Limits,
    decoded: Decoded,
    window: Window,
    bounds: tuple[int, int],
) -> None:
    if not isinstance(span, dict):
        raise ValueError("span must be an object")
    trace_id = json_hex_id(get(span, "traceId"), 16, "trace_id", required=True)
    span_id = json_hex_id(get(span, "spanId"), 8, "span_id", required=True)
    parent = json_hex_id(get(span, "parentSpanId"), 8, "parent_span_id", required=False)
    start = json_uint64(get(span, "startTimeUnixNano"), "start time")
    if not window.accepts(start, bounds):
        raise ValueError(window.refusal(start, bounds))
    keys, values = json_attributes(span.get("attributes"), limits)
    status = span.get("status") or {}
    events = [
        {
            "time_unix_nano": json_uint64(get(e, "timeUnixNano"), "event time"),
            "name": str(e.get("name", "")),
            "attributes": dict(zip(*json_attributes(e.get("attributes"), limits), strict=True)),
        }
        for e in span.get("events") or []
    ]
    links = [
        {
            "trace_id": str(get(link, "traceId") or ""),
            "span_id": str(get(link, "spanId") or ""),
            "attributes": dict(zip(*json_attributes(link.get("attributes"), limits), strict=True)),
        }
        for link in span.get("links") or []
    ]
    row: dict[str, Any] = {
        "project_id": project_id,
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": cap(str(span.get("name", "")), limits)[:1024],
        "kind": json_span_kind(span.get("kind")),
        "start_ns": start,
        "end_ns": json_uint64(get(span, "endTimeUnixNano"), "end time"),
        "status_code": json_status_code(status.get("code")),
        "status_message": cap(str(status.get("message", "")), limits),
        "scope_name": str(scope.get("name", "")),
        "scope_version": str(scope.get("version", "")),
        "attr_keys": keys,
        "attr_values": values,
        "res_keys": r_keys,
        "res_values": r_values,
        "span_events": cap(json.dumps(events, ensure_ascii=False), limits),
        "links": cap(json.dumps(links, ensure_ascii=False), limits),
    }
    columns = decoded.columns
    for column, value in row.items():
        if column in columns.list_names:
            columns.add_list(column, value)
        else:
            columns.data[column].append(value)


__all__ = ["attributes", "decode_json", "decode_protobuf"]
