"""OTLP log requests (protobuf or JSON) into raw event rows.

Claude Code reports skill activations, tool decisions and API requests as log records, so logs
are first-class input. A record has no id of its own; ``record_id`` hashes its content so a
retried export lands on the same row key and deduplicates.
"""

from __future__ import annotations

import hashlib
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from skillsight.errors import DecodeError
from skillsight.ingest.otlp import _salvage
from skillsight.ingest.otlp._jsonbody import get, load, objects
from skillsight.ingest.otlp._result import Decoded
from skillsight.ingest.otlp.traces import attributes as proto_attributes
from skillsight.ingest.otlp.window import Window
from skillsight.store.rows import event_columns
from skillsight.store.values import (
    MAX_INT64,
    Limits,
    cap,
    json_attributes,
    json_hex_id,
    json_severity,
    json_uint64,
    render,
    render_json,
)


def _record_id(row: dict[str, Any]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for column in ("time_ns", "trace_id", "span_id", "event_name", "body", "severity_number"):
        digest.update(str(row[column]).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    for key, value in zip(row["attr_keys"], row["attr_values"], strict=True):
        digest.update(key.encode("utf-8", "surrogatepass"))
        digest.update(b"\x1e")
        digest.update(value.encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()


def _append(decoded: Decoded, row: dict[str, Any]) -> None:
    row["record_id"] = _record_id(row)
    columns = decoded.columns
    for column in columns.names:
        if column in columns.list_names:
            columns.add_list(column, row[column])
        else:
            columns.data[column].append(row[column])


def _time(time_ns: int, observed_ns: int, window: Window, bounds: tuple[int, int]) -> int:
    """A record's time: its own, or when it was observed if it has none (as OTLP says);
    ValueError when that is outside the window."""
    when = time_ns or observed_ns
    if not window.accepts(when, bounds):
        raise ValueError(window.refusal(when, bounds))
    return when


def decode_protobuf(
    body: bytes, project_id: str, limits: Limits, window: Window | None = None
) -> Decoded:
    """Rows of an ``ExportLogsServiceRequest`` in protobuf encoding."""
    decoded = Decoded("logs", event_columns())
    window = window or Window()
    bounds = window.bounds()
    try:
        request = ExportLogsServiceRequest.FromString(body)
    except ProtobufDecodeError:
        request = _salvage.logs_request(body, decoded, limits)
    if body and not request.resource_logs:
        raise DecodeError("body is not an OTLP ExportLogsServiceRequest (no resource_logs)")
    for resource_logs in request.resource_logs:
        r_keys, r_values = proto_attributes(resource_logs.resource.attributes, limits)
        for scope_logs in resource_logs.scope_logs:
            scope_name = scope_logs.scope.name
            for record in scope_logs.log_records:
                trace_id = record.trace_id
                span_id = record.span_id
                if trace_id and len(trace_id) != 16:
                    decoded.reject("log record: trace_id must be 16 bytes")
                    continue
                if span_id and len(span_id) != 8:
                    decoded.reject("log record: span_id must be 8 bytes")
                    continue
                observed = min(record.observed_time_unix_nano, MAX_INT64)
                try:
                    when = _time(record.time_unix_nano, observed, window, bounds)
                except ValueError as exc:
                    decoded.reject(f"log record: {exc}")
                    continue
                keys, values = proto_attributes(record.attributes, limits)
                _append(
                    decoded,
                    {
                        "project_id": project_id,
                        "time_ns": when,
                        "observed_ns": observed,
                        "trace_id": trace_id.hex(),
                        "span_id": span_id.hex(),
                        "severity_number": int(record.severity_number),
                        "severity_text": record.severity_text[:64],
                        "event_name": record.event_name[:256],
                        "body": render(record.body, limits) if record.HasField("body") else "",
                        "scope_name": scope_name,
                        "attr_keys": keys,
                        "attr_values": values,
                        "res_keys": r_keys,
                        "res_values": r_values,
                    },
                )
    return decoded


def decode_json(
    body: bytes, project_id: str, limits: Limits, window: Window | None = None
) -> Decoded:
    """Rows of an ``ExportLogsServiceRequest`` in OTLP/JSON encoding."""
    decoded = Decoded("logs", event_columns())
    window = window or Window()
    bounds = window.bounds()
    document = load(body, decoded)
    if document and get(document, "resourceLogs") is None:
        # e.g. a trace request sent to /v1/logs: refuse it rather than answer 200 for nothing
        raise DecodeError("body is not an OTLP/JSON ExportLogsServiceRequest (no resourceLogs)")
    for rl in objects(document, "resourceLogs"):
        resource = rl.get("resource") or {}
        try:
            r_keys, r_values = json_attributes(resource.get("attributes"), limits)
        except (ValueError, TypeError, AttributeError) as exc:
            r_keys, r_values = [], []
            decoded.note(f"resource attributes dropped: {exc}")
        for sl in objects(rl, "scopeLogs"):
            scope = sl.get("scope") or {}
            for record in objects(sl, "logRecords", items_must_be_objects=False):
                try:
                    _json_record(
                        record, scope, r_keys, r_values, project_id, limits, decoded, window, bounds
                    )
                except (ValueError, TypeError, AttributeError, OverflowError) as exc:
                    decoded.reject(f"log record: {exc}")
    return decoded


def _json_record(
    record: Any,
    scope: Any,
    r_keys: list[str],
    r_values: list[str],
    project_id: str,
    limits: Limits,
    decoded: Decoded,
    window: Window,
    bounds: tuple[int, int],
) -> None:
    if not isinstance(record, dict):
        raise ValueError("log record must be an object")
    observed = json_uint64(get(record, "observedTimeUnixNano"), "observed time")
    when = _time(json_uint64(get(record, "timeUnixNano"), "time"), observed, window, bounds)
    keys, values = json_attributes(record.get("attributes"), limits)
    body = record.get("body")
    severity = get(record, "severityNumber")
    _append(
        decoded,
        {
            "project_id": project_id,
            "time_ns": when,
            "observed_ns": observed,
            "trace_id": json_hex_id(get(record, "traceId"), 16, "trace_id", required=False),
            "span_id": json_hex_id(get(record, "spanId"), 8, "span_id", required=False),
            "severity_number": json_severity(severity),
            "severity_text": str(get(record, "severityText") or "")[:64],
            "event_name": str(get(record, "eventName") or "")[:256],
            "body": render_json(body, limits) if body is not None else "",
            "scope_name": str(scope.get("name", "")),
            "attr_keys": keys,
            "attr_values": values,
            "res_keys": r_keys,
            "res_values": r_values,
        },
    )


__all__ = ["cap", "decode_json", "decode_protobuf"]
