"""The OTLP receivers end to end: a real ``skillsight serve`` fed by the real OTel SDK exporters.

Spans and log records travel over OTLP/HTTP (protobuf and JSON, gzip or not) and OTLP/gRPC and
must read back from the REST API with the same normalized fields whatever the route; responses
follow the OTLP specification; API keys separate projects; retried exports are stored once.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.support.otlp_builders import BASE_NS, export_request, span
from tests.support.serve import RunningServer, running_server

PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}
KEY = "x-skillsight-key"
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {"SKILLSIGHT_FLUSH_INTERVAL_S": "0.05"}  # read-backs need not wait for a full batch
    with running_server(tmp_path_factory.mktemp("receivers"), env=env) as running:
        yield running


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server with API keys: k1 → alpha, k2 → beta, k3 → gamma; its own requests (``/healthz``
    in ``wait_written``) carry ``ops``, an admin key, since /healthz shows a plain key no counts."""
    env = {
        "SKILLSIGHT_API_KEYS": "k1:alpha,k2:beta,k3:gamma,ops:ops:admin",
        "SKILLSIGHT_FLUSH_INTERVAL_S": "0.05",
    }
    with running_server(tmp_path_factory.mktemp("keyed"), env=env) as running:
        yield dataclasses.replace(running, headers={KEY: "ops"})


def as_key(server: RunningServer, key: str) -> RunningServer:
    """The same server, read through the REST API with ``key``."""
    return dataclasses.replace(server, headers={KEY: key})


def post(
    server: RunningServer,
    body: bytes,
    headers: dict[str, str],
    path: str = "/v1/traces",
) -> httpx.Response:
    return httpx.post(server.otlp_http + path, content=body, headers=headers, timeout=30)


def grpc_export(
    server: RunningServer, body: bytes, metadata: Sequence[tuple[str, str]] = ()
) -> ExportTraceServiceResponse:
    with grpc.insecure_channel(server.otlp_grpc) as channel:
        call = channel.unary_unary(
            TRACE_EXPORT,
            request_serializer=lambda b: b,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        response: ExportTraceServiceResponse = call(body, metadata=tuple(metadata), timeout=30)
        return response


# ---- what the SDK produces ----------------------------------------------------------------------


def sdk_spans(session: str, service: str = "sdk-agent") -> list[ReadableSpan]:
    """A Claude-Code-like interaction and one Skill tool call, recorded by the real SDK."""
    collected = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("com.anthropic.claude_code.tracing", "2.1.0")
    root = tracer.start_span(
        "claude_code.interaction",
        start_time=BASE_NS,
        attributes={"session.id": session, "user_prompt": "sum data/sales.csv"},
    )
    with trace.use_span(root, end_on_exit=False):
        tool = tracer.start_span(
            "claude_code.tool",
            kind=SpanKind.CLIENT,
            start_time=BASE_NS + 1_000_000,
            attributes={
                "session.id": session,
                "tool_name": "Skill",
                "skill_name": "csv-summary",
                "tool_use_id": "toolu_01",
                "input_tokens": 1200,
                "cost_usd": 0.0125,
                "approved": True,
                "tags": ["csv", "report"],
            },
        )
    tool.add_event("tool.decision", {"decision": "accept", "attempt": 1}, timestamp=BASE_NS + 2)
    tool.set_status(Status(StatusCode.ERROR, "script exited 1"))
    tool.end(end_time=BASE_NS + 251_000_000)
    root.end(end_time=BASE_NS + 900_000_000)
    provider.shutdown()
    return list(collected.get_finished_spans())


def sdk_logs(session: str, service: str = "sdk-agent") -> list[ReadableLogRecord]:
    """Two Claude Code events, recorded by the real SDK logger."""
    collected = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": service}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(collected))
    logger = provider.get_logger("com.anthropic.claude_code.events", "2.1.0")
    logger.emit(
        timestamp=BASE_NS + 5,
        observed_timestamp=BASE_NS + 6,
        severity_number=SeverityNumber.INFO,
        severity_text="INFO",
        body="claude_code.skill_activated",
        event_name="claude_code.skill_activated",
        attributes={"session.id": session, "prompt.id": "p-1", "skill.name": "csv-summary"},
    )
    logger.emit(
        timestamp=BASE_NS + 7,
        severity_number=SeverityNumber.INFO,
        body="claude_code.tool_result",
        event_name="claude_code.tool_result",
        attributes={
            "session.id": session,
            "tool_name": "Bash",
            "tool_use_id": "toolu_02",
            "success": True,
            "duration_ms": 42,
        },
    )
    provider.shutdown()
    return list(collected.get_finished_logs())


_HEX_IDS = {"traceId", "spanId", "parentSpanId"}


def otlp_json(message: Any, *, enum_ints: bool = False) -> dict[str, Any]:
    """OTLP/JSON of a protobuf request: generic proto JSON with ids in hex, as OTLP asks."""
    document = json_format.MessageToDict(message, use_integers_for_enums=enum_ints)

    def fix(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: base64.b64decode(v).hex() if k in _HEX_IDS else fix(v) for k, v in value.items()
            }
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    fixed: dict[str, Any] = fix(document)
    return fixed


# Fields that differ by construction between two sends of "the same" telemetry.
_VOLATILE = {"trace_id", "span_id", "parent_span_id", "session_id", "record_id"}


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k not in _VOLATILE}
    out["attributes"] = {k: v for k, v in row["attributes"].items() if k != "session.id"}
    out["resource_attributes"] = {
        k: v for k, v in row["resource_attributes"].items() if k != "service.instance.id"
    }
    return out


def spans_of(server: RunningServer, session: str) -> dict[str, dict[str, Any]]:
    server.wait_written()
    return {s["name"]: s for s in server.spans(session_id=session)}


def events_of(server: RunningServer, session: str) -> dict[str, dict[str, Any]]:
    server.wait_written()
    return {e["event_name"]: e for e in server.events(session_id=session)}


# ---- the SDK exporters, and OTLP/JSON, normalize alike -----------------------------------------


def _send_spans_http(server: RunningServer, spans: list[ReadableSpan]) -> None:
    exporter = HttpSpanExporter(endpoint=server.otlp_http + "/v1/traces", timeout=30)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()


def _send_spans_http_gzip(server: RunningServer, spans: list[ReadableSpan]) -> None:
    exporter = HttpSpanExporter(
        endpoint=server.otlp_http + "/v1/traces", timeout=30, compression=Compression.Gzip
    )
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()


def _send_spans_grpc(server: RunningServer, spans: list[ReadableSpan]) -> None:
    exporter = GrpcSpanExporter(endpoint=server.otlp_grpc, insecure=True, timeout=30)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()


def _send_spans_json(server: RunningServer, spans: list[ReadableSpan]) -> None:
    body = json.dumps(otlp_json(encode_spans(spans))).encode()
    response = post(server, body, JSON)
    assert response.status_code == 200, response.text
    assert response.json() == {}


def _send_spans_json_enum_ints(server: RunningServer, spans: list[ReadableSpan]) -> None:
    body = json.dumps(otlp_json(encode_spans(spans), enum_ints=True)).encode()
    response = post(server, gzip.compress(body), {**JSON, "content-encoding": "gzip"})
    assert response.status_code == 200, response.text


SPAN_ROUTES: dict[str, Callable[[RunningServer, list[ReadableSpan]], None]] = {
    "http-protobuf": _send_spans_http,
    "http-protobuf-gzip": _send_spans_http_gzip,
    "grpc": _send_spans_grpc,
    "http-json": _send_spans_json,
    "http-json-gzip-enum-ints": _send_spans_json_enum_ints,
}


def test_sdk_spans_read_back_alike_over_every_route(server: RunningServer) -> None:
    seen = {}
    for route, send in SPAN_ROUTES.items():
        session = f"spans-{route}"
        spans = sdk_spans(session)
        send(server, spans)
        stored = spans_of(server, session)
        assert set(stored) == {"claude_code.interaction", "claude_code.tool"}, route
        root, tool = stored["claude_code.interaction"], stored["claude_code.tool"]
        context = next(s.context for s in spans if s.name == "claude_code.tool")
        assert context is not None
        assert tool["trace_id"] == f"{context.trace_id:032x}"
        assert tool["span_id"] == f"{context.span_id:016x}"
        assert tool["parent_span_id"] == root["span_id"] and root["parent_span_id"] == ""
        assert tool["session_id"] == session
        seen[route] = {name: comparable(row) for name, row in stored.items()}

    tool = seen["http-protobuf"]["claude_code.tool"]
    assert tool["kind"] == "client"
    assert (tool["status_code"], tool["status_message"]) == ("error", "script exited 1")
    assert tool["start_time_unix_nano"] == BASE_NS + 1_000_000
    assert tool["duration_ms"] == 250.0
    assert (tool["source_convention"], tool["operation"]) == ("claude_code", "execute_tool")
    assert (tool["tool_name"], tool["skill_name"], tool["input"]) == (
        "Skill",
        "csv-summary",
        "csv-summary",
    )
    assert tool["tool_call_id"] == "toolu_01"
    assert tool["tokens"]["input"] == 1200 and tool["cost_usd"] == 0.0125
    assert tool["attributes"]["approved"] == "true"
    assert json.loads(tool["attributes"]["tags"]) == ["csv", "report"]
    assert tool["service_name"] == "sdk-agent"
    assert tool["scope_name"] == "com.anthropic.claude_code.tracing"
    assert tool["events"] == [
        {
            "time_unix_nano": BASE_NS + 2,
            "name": "tool.decision",
            "attributes": {"decision": "accept", "attempt": "1"},
        }
    ]
    root = seen["http-protobuf"]["claude_code.interaction"]
    assert (root["operation"], root["input"]) == ("invoke_agent", "sum data/sales.csv")
    for route, rows in seen.items():
        assert rows == seen["http-protobuf"], f"{route} normalizes differently from protobuf"


def _send_logs_http(server: RunningServer, records: list[ReadableLogRecord]) -> None:
    exporter = HttpLogExporter(endpoint=server.otlp_http + "/v1/logs", timeout=30)
    assert exporter.export(records) == LogRecordExportResult.SUCCESS
    exporter.shutdown()


def _send_logs_grpc(server: RunningServer, records: list[ReadableLogRecord]) -> None:
    exporter = GrpcLogExporter(endpoint=server.otlp_grpc, insecure=True, timeout=30)
    assert exporter.export(records) == LogRecordExportResult.SUCCESS
    exporter.shutdown()


def _send_logs_json(server: RunningServer, records: list[ReadableLogRecord]) -> None:
    body = json.dumps(otlp_json(encode_logs(records))).encode()
    response = post(server, gzip.compress(body), {**JSON, "content-encoding": "gzip"}, "/v1/logs")
    assert response.status_code == 200, response.text
    json_format.Parse(response.text, ExportLogsServiceResponse())


LOG_ROUTES: dict[str, Callable[[RunningServer, list[ReadableLogRecord]], None]] = {
    "http-protobuf": _send_logs_http,
    "grpc": _send_logs_grpc,
    "http-json-gzip": _send_logs_json,
}


def test_sdk_log_records_read_back_alike_over_every_route(server: RunningServer) -> None:
    seen = {}
    for route, send in LOG_ROUTES.items():
        session = f"logs-{route}"
        send(server, sdk_logs(session))
        stored = events_of(server, session)
        assert set(stored) == {"claude_code.skill_activated", "claude_code.tool_result"}, route
        seen[route] = {name: comparable(row) for name, row in stored.items()}
    activated = seen["http-protobuf"]["claude_code.skill_activated"]
    assert activated["source_convention"] == "claude_code"
    assert (activated["skill_name"], activated["prompt_id"]) == ("csv-summary", "p-1")
    assert activated["time_unix_nano"] == BASE_NS + 5
    assert (activated["severity_text"], activated["service_name"]) == ("INFO", "sdk-agent")
    result = seen["http-protobuf"]["claude_code.tool_result"]
    assert (result["tool_name"], result["tool_call_id"]) == ("Bash", "toolu_02")
    assert result["attributes"]["success"] == "true"
    assert result["attributes"]["duration_ms"] == "42"
    for route, rows in seen.items():
        assert rows == seen["http-protobuf"], f"{route} normalizes differently from protobuf"


# ---- OTLP/JSON as other exporters write it ----------------------------------------------------


def test_otlp_json_hex_ids_string_int64s_and_enums(server: RunningServer) -> None:
    trace = "5B8EFFF798038103D269B633813FC60C"  # upper-case hex is still hex
    spans = [
        {
            "traceId": trace,
            "spanId": "EEE19B7EC3C1B174",
            "parentSpanId": "",
            "name": "names",
            "kind": "SPAN_KIND_SERVER",
            "startTimeUnixNano": str(BASE_NS),
            "endTimeUnixNano": str(BASE_NS + 2_000_000),
            "status": {"code": "STATUS_CODE_OK"},
            "attributes": [
                {"key": "s", "value": {"stringValue": "text"}},
                {"key": "i", "value": {"intValue": "9007199254740993"}},  # past 2**53
                {"key": "d", "value": {"doubleValue": 1.5}},
                {"key": "b", "value": {"boolValue": False}},
                {"key": "raw", "value": {"bytesValue": "aGk="}},
                {"key": "arr", "value": {"arrayValue": {"values": [{"intValue": 1}]}}},
                {
                    "key": "kv",
                    "value": {
                        "kvlistValue": {"values": [{"key": "x", "value": {"stringValue": "y"}}]}
                    },
                },
            ],
        },
        {
            "trace_id": trace.lower(),  # snake_case keys, as protobuf JSON printers may write
            "span_id": "eee19b7ec3c1b175",
            "parent_span_id": "eee19b7ec3c1b174",
            "name": "ints",
            "kind": 3,
            "start_time_unix_nano": BASE_NS + 1,  # a JSON number works too
            "end_time_unix_nano": BASE_NS + 1_000_001,
            "status": {"code": 2, "message": "failed"},
        },
    ]
    document = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "j"}}]
                },
                "scopeSpans": [{"scope": {"name": "json-scope", "version": "1"}, "spans": spans}],
            }
        ]
    }
    response = post(server, json.dumps(document).encode(), JSON)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    server.wait_written()
    stored = {s["name"]: s for s in server.spans(trace_id=trace)}
    names, ints = stored["names"], stored["ints"]
    assert names["trace_id"] == trace.lower() and names["span_id"] == "eee19b7ec3c1b174"
    assert (names["kind"], names["status_code"]) == ("server", "ok")
    assert names["start_time_unix_nano"] == BASE_NS and names["duration_ms"] == 2.0
    assert names["attributes"] == {
        "s": "text",
        "i": "9007199254740993",
        "d": "1.5",
        "b": "false",
        "raw": "aGk=",
        "arr": "[1]",
        "kv": '{"x":"y"}',
    }
    assert (names["service_name"], names["scope_name"]) == ("j", "json-scope")
    assert ints["parent_span_id"] == "eee19b7ec3c1b174"
    assert (ints["kind"], ints["status_code"], ints["status_message"]) == (
        "client",
        "error",
        "failed",
    )
    assert ints["start_time_unix_nano"] == BASE_NS + 1


def test_json_partial_success_is_json(server: RunningServer) -> None:
    trace = "00000000000000000000000000000a01"
    spans = [
        {"traceId": trace, "spanId": "0000000000000001", "name": "kept"},
        {"traceId": trace, "spanId": "not-hex-at-all!!", "name": "bad-id"},
        {
            "traceId": trace,
            "spanId": "0000000000000002",
            "name": "bad-time",
            "endTimeUnixNano": "x",
        },
    ]
    document = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    response = post(server, json.dumps(document).encode(), JSON)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    parsed = json_format.Parse(response.text, ExportTraceServiceResponse())
    assert parsed.partial_success.rejected_spans == 2
    assert "bad-id" in parsed.partial_success.error_message
    assert "bad-time" in parsed.partial_success.error_message
    assert response.json()["partialSuccess"]["rejectedSpans"] == "2"  # int64 as a JSON string
    server.wait_written()
    assert [s["name"] for s in server.spans(trace_id=trace)] == ["kept"]


def test_protobuf_response_is_an_export_response(server: RunningServer) -> None:
    good = span("pb-kept", trace=0xB01)
    bad = span("pb-bad", trace=0xB01)
    bad.span_id = b"\x01\x02"
    response = post(server, export_request([good, bad]), PROTOBUF)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    parsed = ExportTraceServiceResponse.FromString(response.content)
    assert parsed.partial_success.rejected_spans == 1
    assert "pb-bad" in parsed.partial_success.error_message
    clean = post(server, export_request([span("pb-clean", trace=0xB01)]), PROTOBUF)
    assert clean.status_code == 200
    assert not ExportTraceServiceResponse.FromString(clean.content).HasField("partial_success")
    server.wait_written()
    assert {s["name"] for s in server.spans(trace_id=f"{0xB01:032x}")} == {"pb-kept", "pb-clean"}


@pytest.mark.parametrize("content_type", ["application/x-protobuf", "application/json"])
def test_gzip_content_encoding(server: RunningServer, content_type: str) -> None:
    trace = 0xC01 if "protobuf" in content_type else 0xC02
    if "protobuf" in content_type:
        body = export_request([span("gz", trace=trace)])
    else:
        request = ExportTraceServiceRequest.FromString(export_request([span("gz", trace=trace)]))
        body = json.dumps(otlp_json(request)).encode()
    headers = {"content-type": content_type, "content-encoding": "gzip"}
    response = post(server, gzip.compress(body), headers)
    assert response.status_code == 200, response.content
    assert response.headers["content-type"].startswith(content_type)
    server.wait_written()
    assert [s["name"] for s in server.spans(trace_id=f"{trace:032x}")] == ["gz"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", ""])
def test_unsupported_content_type_is_415(server: RunningServer, content_type: str) -> None:
    body = export_request([span("never", trace=0xD01)])
    response = post(server, body, {"content-type": content_type} if content_type else {})
    assert response.status_code == 415
    status = json_format.Parse(response.text, status_pb2.Status())
    assert "application/x-protobuf" in status.message
    assert post(server, body, PROTOBUF).status_code == 200  # the same body, properly labelled


def test_logs_route_answers_in_kind(server: RunningServer) -> None:
    response = post(server, b"", PROTOBUF, "/v1/logs")
    assert response.status_code == 200
    ExportLogsServiceResponse.FromString(response.content)
    # a trace request sent to the logs route is not silently taken for an empty one
    wrong = json.dumps({"resourceSpans": []}).encode()
    refused = post(server, wrong, JSON, "/v1/logs")
    assert refused.status_code == 400
    assert "resourceLogs" in json_format.Parse(refused.text, status_pb2.Status()).message


# ---- tenancy ------------------------------------------------------------------------------------


def test_requests_without_a_known_key_are_refused(keyed: RunningServer) -> None:
    body = export_request([span("anonymous", trace=0xE01)])
    for headers in ({}, {KEY: "nope"}, {"authorization": "Bearer nope"}):
        response = post(keyed, body, {**PROTOBUF, **headers})
        assert response.status_code == 401
        status = status_pb2.Status.FromString(response.content)
        assert status.code == code_pb2.UNAUTHENTICATED and KEY in status.message
    as_json = post(keyed, b"{}", JSON)
    assert as_json.status_code == 401
    assert json_format.Parse(as_json.text, status_pb2.Status()).code == code_pb2.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as refused:
        grpc_export(keyed, body)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as unknown:
        grpc_export(keyed, body, [(KEY, "nope")])
    assert unknown.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert httpx.get(keyed.api + "/api/v1/spans", timeout=30).status_code == 401
    assert (
        httpx.get(keyed.api + "/api/v1/stats", headers={KEY: "no"}, timeout=30).status_code == 401
    )


def test_each_key_sees_only_its_own_project(keyed: RunningServer) -> None:
    alpha, beta = as_key(keyed, "k1"), as_key(keyed, "k2")
    exporter = HttpSpanExporter(
        endpoint=keyed.otlp_http + "/v1/traces", headers={KEY: "k1"}, timeout=30
    )
    assert exporter.export(sdk_spans("tenant-alpha")) == SpanExportResult.SUCCESS
    exporter.shutdown()
    grpc_exporter = GrpcSpanExporter(
        endpoint=keyed.otlp_grpc, insecure=True, headers={"authorization": "Bearer k2"}, timeout=30
    )
    assert grpc_exporter.export(sdk_spans("tenant-beta")) == SpanExportResult.SUCCESS
    grpc_exporter.shutdown()
    logs = HttpLogExporter(endpoint=keyed.otlp_http + "/v1/logs", headers={KEY: "k1"}, timeout=30)
    assert logs.export(sdk_logs("tenant-alpha")) == LogRecordExportResult.SUCCESS
    logs.shutdown()
    keyed.wait_written()

    assert {s["session_id"] for s in alpha.spans()} == {"tenant-alpha"}
    assert {s["session_id"] for s in beta.spans()} == {"tenant-beta"}
    assert beta.spans(session_id="tenant-alpha") == []
    assert {e["session_id"] for e in alpha.events()} == {"tenant-alpha"}
    assert beta.events() == []
    trace_id = alpha.spans()[0]["trace_id"]
    assert beta.spans(trace_id=trace_id) == []
    assert alpha.get("/api/v1/stats")["spans"] == {"rows": 2, "spans": 2}
    assert beta.get("/api/v1/stats")["events"] == {"rows": 0, "events": 0}


# ---- retries ------------------------------------------------------------------------------------


def test_retried_exports_are_stored_once(keyed: RunningServer) -> None:
    """An exporter that got no answer sends the same spans again: they count once."""
    gamma = as_key(keyed, "k3")
    body = export_request([span(f"retried-{i}", trace=0xF01) for i in range(50)])
    headers = {**PROTOBUF, KEY: "k3"}
    assert post(keyed, body, headers).status_code == 200
    keyed.wait_written()
    assert post(keyed, body, headers).status_code == 200  # a retry after the first was written
    assert post(keyed, gzip.compress(body), {**headers, "content-encoding": "gzip"}).is_success
    grpc_export(keyed, body, [(KEY, "k3")])
    spans = sdk_spans("retried-sdk")
    for _ in range(2):
        exporter = GrpcSpanExporter(
            endpoint=keyed.otlp_grpc, insecure=True, headers={KEY: "k3"}, timeout=30
        )
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
    keyed.wait_written()
    stats = gamma.get("/api/v1/stats")["spans"]
    assert stats["spans"] == 52
    assert 52 <= stats["rows"] <= 4 * 50 + 2 * 2  # duplicates until merged, never counted
    assert len(gamma.spans(trace_id=f"{0xF01:032x}")) == 50
    assert len(gamma.spans(session_id="retried-sdk")) == 2
