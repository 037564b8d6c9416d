"""Build OTLP requests in tests: protobuf bodies and OTLP/JSON documents."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_ids = itertools.count(1)
BASE_NS = 1_763_000_000_000_000_000


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(
            KeyValue(key=k, value=any_value(v)) for k, v in value.items()
        )
        return out
    return AnyValue(string_value=str(value))


def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    trace: int = 1,
    span_id: int | None = None,
    parent: int | None = None,
) -> Span:
    """A span with deterministic ids: trace ``trace``, span ``span_id`` (incrementing)."""
    number = span_id if span_id is not None else next(_ids)
    out = Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=number.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=BASE_NS + number * 1000,
        end_time_unix_nano=BASE_NS + number * 1000 + 500,
    )
    out.attributes.extend(
        KeyValue(key=k, value=any_value(v)) for k, v in (attributes or {}).items()
    )
    return out


def export_request(spans: Sequence[Span], service: str = "test-agent") -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value=service))
    )
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "tests"
    scope.spans.extend(spans)
    return request.SerializeToString()


def logs_request(records: Sequence[LogRecord], service: str = "test-agent") -> bytes:
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value=service))
    )
    scope = resource_logs.scope_logs.add()
    scope.scope.name = "tests"
    scope.log_records.extend(records)
    return request.SerializeToString()


def log_record(body: str, attributes: Mapping[str, Any] | None = None, *, at: int = 0) -> LogRecord:
    record = LogRecord(time_unix_nano=BASE_NS + at, body=AnyValue(string_value=body))
    record.attributes.extend(
        KeyValue(key=k, value=any_value(v)) for k, v in (attributes or {}).items()
    )
    return record


def json_span(name: str, trace_id: str, span_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(BASE_NS),
        "endTimeUnixNano": str(BASE_NS + 1000),
        **fields,
    }


def json_traces(spans: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "json-agent"}}]
                },
                "scopeSpans": [{"scope": {"name": "tests"}, "spans": list(spans)}],
            }
        ]
    }
