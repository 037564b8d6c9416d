"""Hostile and broken OTLP input against a real ``skillsight serve``.

For each kind of bad input: the exact status (OTLP/HTTP and OTLP/gRPC), a response body that
decodes as an OTLP Export response or a ``google.rpc.Status`` with a clear message, the right
``partial_success`` counts, the good spans of the same request stored and readable, and the
service still serving afterwards (checked after every test).
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import time
import zlib
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from skillsight.store.values import DEPTH_MARK, TRUNCATION_MARK
from tests.support.otlp_builders import (
    export_request,
    json_span,
    json_traces,
    log_record,
    logs_request,
    span,
)
from tests.support.serve import RunningServer, running_server

MAX_REQUEST_BYTES = 12 * 1024 * 1024
MAX_ATTRIBUTE_CHARS = 256 * 1024  # the default SKILLSIGHT_MAX_ATTRIBUTE_BYTES
MAX_DEPTH = 8  # the default SKILLSIGHT_MAX_ATTRIBUTE_DEPTH
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"

_traces = itertools.count(0x5EED0001)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "SKILLSIGHT_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
        "SKILLSIGHT_FLUSH_INTERVAL_S": "0.05",  # read-backs need not wait for a full batch
    }
    with running_server(tmp_path_factory.mktemp("hostile"), env=env) as running:
        yield running


@pytest.fixture(autouse=True)
def keeps_serving(server: RunningServer) -> Iterator[None]:
    """After each test, a normal export still succeeds on every route and reads back."""
    yield
    assert server.proc.poll() is None, "the server died:\n" + "".join(server.output[-50:])
    trace = next(_traces)
    ok = post(server, export_request([span("after-pb", trace=trace)]), PROTOBUF)
    assert ok.status_code == 200, ok.content
    # A span id the auto-incrementing builder ids never reach: equal ids would be deduplicated.
    doc = json_traces([json_span("after-json", hex_trace(trace), "aa000000000000aa")])
    ok = post(server, json.dumps(doc).encode(), JSON)
    assert ok.status_code == 200, ok.text
    grpc_call(server, export_request([span("after-grpc", trace=trace)]))
    assert sorted(stored_names(server, trace)) == ["after-grpc", "after-json", "after-pb"]


# ---- helpers ------------------------------------------------------------------------------------


def hex_trace(trace: int) -> str:
    return f"{trace:032x}"


def post(
    server: RunningServer,
    body: bytes | Iterator[bytes],
    content_type: str,
    path: str = "/v1/traces",
    **headers: str,
) -> httpx.Response:
    return httpx.post(
        server.otlp_http + path,
        content=body,
        headers={"content-type": content_type, **headers},
        timeout=60,
    )


def grpc_call(server: RunningServer, body: bytes, method: str = TRACE_EXPORT) -> Any:
    response_type = (
        ExportTraceServiceResponse if method == TRACE_EXPORT else ExportLogsServiceResponse
    )
    with grpc.insecure_channel(
        server.otlp_grpc, options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
    ) as channel:
        call = channel.unary_unary(
            method,
            request_serializer=lambda b: b,
            response_deserializer=response_type.FromString,
        )
        return call(body, timeout=60)


def grpc_refused(server: RunningServer, body: bytes, method: str = TRACE_EXPORT) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        grpc_call(server, body, method)
    return refused.value


def error_status(response: httpx.Response, status: int, content_type: str) -> status_pb2.Status:
    """The ``google.rpc.Status`` of an error answer, in the request's encoding."""
    assert response.status_code == status, response.content[:500]
    assert response.headers["content-type"].startswith(content_type)
    if content_type == JSON:
        decoded = json_format.Parse(response.text, status_pb2.Status())
    else:
        decoded = status_pb2.Status.FromString(response.content)
    assert decoded.code == code_pb2.INVALID_ARGUMENT
    assert decoded.message
    return decoded


def export_response(response: httpx.Response, content_type: str) -> ExportTraceServiceResponse:
    """The 200 Export response, in the request's encoding."""
    assert response.status_code == 200, response.content[:500]
    assert response.headers["content-type"].startswith(content_type)
    if content_type == JSON:
        return json_format.Parse(response.text, ExportTraceServiceResponse())
    return ExportTraceServiceResponse.FromString(response.content)


def stored(server: RunningServer, trace: int) -> list[dict[str, Any]]:
    server.wait_written()
    return server.spans(trace_id=hex_trace(trace))


def stored_names(server: RunningServer, trace: int) -> list[str]:
    return [s["name"] for s in stored(server, trace)]


def written(server: RunningServer) -> tuple[int, int]:
    server.wait_written()
    health = server.get("/healthz")
    return health["written_spans"], health["written_events"]


def varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        if not number:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def nested_array(depth: int) -> bytes:
    """An ``AnyValue`` of arrays ``depth`` deep around "leaf" (upb refuses to build one)."""
    value = field(1, b"leaf")  # AnyValue.string_value
    for _ in range(depth):
        value = field(5, field(1, value))  # AnyValue.array_value → ArrayValue.values
    return value


def nested_kvlist(depth: int) -> bytes:
    value = field(1, b"leaf")
    for _ in range(depth):
        value = field(6, field(1, field(1, b"k") + field(2, value)))  # kvlist → KeyValue
    return value


def raw_request(spans: Sequence[bytes]) -> bytes:
    """An ExportTraceServiceRequest around already-encoded spans."""
    scope = field(1, field(1, b"hostile")) + b"".join(field(2, s) for s in spans)
    resource = field(1, field(1, field(1, b"service.name") + field(2, field(1, b"hostile"))))
    return field(1, resource + field(2, scope))


def with_raw_attribute(item: Span, key: str, value: bytes) -> bytes:
    """``item`` encoded with one more attribute whose AnyValue is ``value`` as given."""
    return item.SerializeToString() + field(9, field(1, key.encode()) + field(2, value))


def json_nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def depth_cut(depth: int = MAX_DEPTH) -> str:
    """How an array nested past the limit reads back: cut at the limit and marked."""
    return (
        "[" * depth + json.dumps(DEPTH_MARK.format(d=MAX_DEPTH), ensure_ascii=False) + "]" * depth
    )


@cache
def gzip_bomb() -> bytes:
    """1 GiB of zeros, gzip-compressed to about 1 MiB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join([*(compressor.compress(zeros) for _ in range(1024)), compressor.flush()])


def peak_rss_kib(server: RunningServer) -> int:
    for line in Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


# ---- bodies that are not OTLP at all ------------------------------------------------------------


def test_truncated_protobuf(server: RunningServer) -> None:
    trace = next(_traces)
    body = export_request([span(f"t{i}", trace=trace) for i in range(5)])
    for cut in (1, 7, len(body) // 2):
        status = error_status(post(server, body[:-cut], PROTOBUF), 400, PROTOBUF)
        assert "truncated" in status.message
    refused = grpc_refused(server, body[:-7])
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "truncated" in refused.details()
    logs = logs_request([log_record("x")])
    assert (
        "truncated"
        in error_status(post(server, logs[:-3], PROTOBUF, "/v1/logs"), 400, PROTOBUF).message
    )
    assert stored_names(server, trace) == []


GARBAGE = [
    random.Random(7).randbytes(4096),
    b"\xde\xad\xbe\xef" * 100,
    b"<html><body>502 Bad Gateway</body></html>",
    b'{"resourceSpans": []}',  # JSON sent as protobuf
    b"\xff" * 20,  # a varint that never ends
]


@pytest.mark.parametrize("body", GARBAGE, ids=["random", "deadbeef", "html", "json", "varint"])
def test_garbage_bytes(server: RunningServer, body: bytes) -> None:
    before = written(server)
    status = error_status(post(server, body, PROTOBUF), 400, PROTOBUF)
    assert "protobuf" in status.message or "ExportTraceServiceRequest" in status.message
    error_status(post(server, body, PROTOBUF, "/v1/logs"), 400, PROTOBUF)
    refused = grpc_refused(server, body)
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT and refused.details()
    assert grpc_refused(server, body, LOGS_EXPORT).code() == grpc.StatusCode.INVALID_ARGUMENT
    assert written(server) == before


NOT_OTLP = [
    b'{"foo": 1}',
    b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "x"}}]}]}]}',
    b"[]",
    b'"resourceSpans"',
    b"42",
    b"null",
    b'{"resourceSpans": {"not": "a list"}}',
    b'{"resourceSpans": [1, 2]}',
    b'{"resourceSpans": [{"scopeSpans": "nope"}]}',
]


@pytest.mark.parametrize("body", NOT_OTLP)
def test_valid_json_that_is_not_otlp(server: RunningServer, body: bytes) -> None:
    before = written(server)
    status = error_status(post(server, body, JSON), 400, JSON)
    assert status.message
    assert written(server) == before


@pytest.mark.parametrize(
    "body",
    [b'{"resourceSpans": [', b"{'single': 'quotes'}", b"\x00\x01\x02", b"{}}", b""],
    ids=["cut", "quotes", "binary", "trailing", "empty"],
)
def test_invalid_json(server: RunningServer, body: bytes) -> None:
    status = error_status(post(server, body, JSON), 400, JSON)
    assert "not valid JSON" in status.message
    error_status(post(server, body, JSON, "/v1/logs"), 400, JSON)


def test_json_spans_that_are_not_objects_are_rejected_alone(server: RunningServer) -> None:
    trace = next(_traces)
    good = [json_span(f"ok{i}", hex_trace(trace), f"{i + 1:016x}") for i in range(2)]
    document = json_traces([good[0], 5, "span", None, good[1]])
    answer = export_response(post(server, json.dumps(document).encode(), JSON), JSON)
    assert answer.partial_success.rejected_spans == 3
    assert stored_names(server, trace) == ["ok0", "ok1"]


# ---- bad ids among good spans ------------------------------------------------------------------


def _bad_id_spans(trace: int) -> tuple[list[Span], list[Span]]:
    good = [span(f"good-{i}", trace=trace) for i in range(3)]
    bad = []
    for name, fields in {
        "trace-15-bytes": {"trace_id": b"\x01" * 15},
        "trace-17-bytes": {"trace_id": b"\x01" * 17},
        "trace-zero": {"trace_id": bytes(16)},
        "trace-missing": {"trace_id": b""},
        "span-7-bytes": {"span_id": b"\x02" * 7},
        "span-zero": {"span_id": bytes(8)},
        "span-missing": {"span_id": b""},
        "parent-5-bytes": {"parent_span_id": b"\x03" * 5},
    }.items():
        item = span(name, trace=trace)
        for attribute, value in fields.items():
            setattr(item, attribute, value)
        bad.append(item)
    return good, bad


def test_wrong_ids_among_good_spans_protobuf(server: RunningServer) -> None:
    trace = next(_traces)
    good, bad = _bad_id_spans(trace)
    mixed = [good[0], *bad[:4], good[1], *bad[4:], good[2]]
    answer = export_response(post(server, export_request(mixed), PROTOBUF), PROTOBUF)
    assert answer.partial_success.rejected_spans == len(bad) == 8
    message = answer.partial_success.error_message
    assert message.startswith("8 spans rejected")
    assert "trace_id must be 16 non-zero bytes" in message
    assert "span_id must be 8 non-zero bytes" in message
    assert stored_names(server, trace) == ["good-0", "good-1", "good-2"]

    trace = next(_traces)
    good, bad = _bad_id_spans(trace)
    answer = grpc_call(server, export_request([*bad, *good]))
    assert answer.partial_success.rejected_spans == 8
    assert stored_names(server, trace) == ["good-0", "good-1", "good-2"]


def test_wrong_ids_among_good_spans_json(server: RunningServer) -> None:
    trace = next(_traces)
    tid = hex_trace(trace)
    spans = [
        json_span("good-0", tid, "0000000000000001"),
        json_span("short-trace", tid[:-2], "0000000000000002"),
        json_span("long-trace", tid + "00", "0000000000000003"),
        json_span("non-hex-trace", "zz" + tid[2:], "0000000000000004"),
        json_span("zero-trace", "0" * 32, "0000000000000005"),
        json_span("good-1", tid.upper(), "00000000000000A6"),
        json_span("non-hex-span", tid, "00000000000000g7"),
        json_span("zero-span", tid, "0" * 16),
        json_span("base64-span", tid, "AAAAAAAAAAg="),  # generic proto JSON, not OTLP/JSON
        json_span("bad-parent", tid, "0000000000000009", parentSpanId="abc"),
        {"spanId": "000000000000000a", "name": "no-trace"},
        json_span("good-2", tid, "000000000000000b", parentSpanId="0000000000000001"),
    ]
    response = post(server, json.dumps(json_traces(spans)).encode(), JSON)
    answer = export_response(response, JSON)
    assert answer.partial_success.rejected_spans == 9
    assert response.json()["partialSuccess"]["rejectedSpans"] == "9"
    message = answer.partial_success.error_message
    assert "short-trace" in message and "not 16 bytes of hex" in message
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"good-0", "good-1", "good-2"}
    assert rows["good-1"]["span_id"] == "00000000000000a6"
    assert rows["good-2"]["parent_span_id"] == "0000000000000001"


def test_wrong_ids_in_log_records(server: RunningServer) -> None:
    before_spans, before_events = written(server)
    trace = next(_traces)
    records = [log_record("good-0", at=1)]
    for i, (trace_id, span_id) in enumerate([(b"\x01" * 15, b""), (b"\x01" * 16, b"\x02" * 3)]):
        record = log_record(f"bad-{i}", at=10 + i)
        record.trace_id, record.span_id = trace_id, span_id
        records.append(record)
    good = log_record("good-1", at=2)
    good.trace_id, good.span_id = trace.to_bytes(16, "big"), (7).to_bytes(8, "big")
    records.append(good)
    response = post(server, logs_request(records), PROTOBUF, "/v1/logs")
    assert response.status_code == 200
    answer = ExportLogsServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_log_records == 2
    assert written(server) == (before_spans, before_events + 2)
    events = server.events(trace_id=hex_trace(trace))
    assert [e["body"] for e in events] == ["good-1"]


def test_json_log_records_with_odd_severities_are_all_kept(server: RunningServer) -> None:
    """A severity that is a boolean, past int64 or an enum name costs nothing else."""
    trace = next(_traces)
    severities: list[Any] = [True, 2**70, -(2**70), "SEVERITY_NUMBER_WARN", "bogus", 13, None]
    records = [
        {
            "timeUnixNano": str(1_763_000_000_000_000_000 + i),
            "traceId": hex_trace(trace),
            "severityNumber": severity,
            "body": {"stringValue": f"record-{i}"},
        }
        for i, severity in enumerate(severities)
    ]
    document = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    response = post(server, json.dumps(document).encode(), JSON, "/v1/logs")
    assert response.status_code == 200, response.text
    assert response.json() == {}
    server.wait_written()
    bodies = [e["body"] for e in server.events(trace_id=hex_trace(trace))]
    assert bodies == [f"record-{i}" for i in range(len(severities))]


# ---- deep nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [100, 10_000])
@pytest.mark.parametrize("shape", ["array", "kvlist"])
def test_attribute_nested_deep_protobuf(server: RunningServer, depth: int, shape: str) -> None:
    trace = next(_traces)
    value = nested_array(depth) if shape == "array" else nested_kvlist(depth)
    deep = with_raw_attribute(span("deep", {"plain": "kept"}, trace=trace), "deep", value)
    body = raw_request([span("before", trace=trace).SerializeToString(), deep])
    body += raw_request([span("after", trace=trace).SerializeToString()])  # a second resource
    answer = export_response(post(server, body, PROTOBUF), PROTOBUF)
    assert answer.partial_success.rejected_spans == 0
    assert "repaired" in answer.partial_success.error_message
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"before", "deep", "after"}
    attributes = rows["deep"]["attributes"]
    assert attributes["plain"] == "kept"
    cut = DEPTH_MARK.format(d=MAX_DEPTH)
    assert cut in attributes["deep"]
    if shape == "array":
        assert attributes["deep"] == depth_cut()
    assert rows["before"]["resource_attributes"]["service.name"] == "hostile"

    trace = next(_traces)
    deep = with_raw_attribute(span("deep-grpc", trace=trace), "deep", value)
    answer = grpc_call(server, raw_request([deep, span("ok", trace=trace).SerializeToString()]))
    assert answer.partial_success.rejected_spans == 0
    assert stored_names(server, trace) == ["deep-grpc", "ok"]


def test_attribute_nested_100_deep_json(server: RunningServer) -> None:
    trace = next(_traces)
    tid = hex_trace(trace)
    spans = [
        json_span(
            "deep",
            tid,
            "0000000000000001",
            attributes=[
                {"key": "deep", "value": json_nested(100)},
                {"key": "plain", "value": {"stringValue": "kept"}},
            ],
        ),
        json_span("ok", tid, "0000000000000002"),
    ]
    answer = export_response(post(server, json.dumps(json_traces(spans)).encode(), JSON), JSON)
    assert answer.partial_success.rejected_spans == 0
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"deep", "ok"}
    assert rows["deep"]["attributes"] == {"deep": depth_cut(), "plain": "kept"}


def test_json_nested_past_the_parser_is_refused_whole(server: RunningServer) -> None:
    """Nesting no JSON parser should follow (100,000 levels) is a 400, not a crash."""
    body = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status = error_status(post(server, body, JSON), 400, JSON)
    assert "nested too deeply" in status.message


# ---- oversized values ---------------------------------------------------------------------------


def _ten_mb() -> str:
    return "0123456789abcdef" * (10 * 1024 * 1024 // 16)


def _check_cut(value: str) -> None:
    assert len(_ten_mb()) == 10 * 1024 * 1024
    dropped = len(_ten_mb()) - MAX_ATTRIBUTE_CHARS
    assert value == _ten_mb()[:MAX_ATTRIBUTE_CHARS] + TRUNCATION_MARK.format(n=dropped)


def test_ten_megabyte_attribute_protobuf(server: RunningServer) -> None:
    trace = next(_traces)
    big = span("big", {"small": "kept"}, trace=trace)
    big.attributes.append(KeyValue(key="big", value=AnyValue(string_value=_ten_mb())))
    body = export_request([span("before", trace=trace), big, span("after", trace=trace)])
    assert MAX_REQUEST_BYTES > len(body) > 10 * 1024 * 1024
    answer = export_response(post(server, body, PROTOBUF), PROTOBUF)
    assert answer.partial_success.rejected_spans == 0
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"before", "big", "after"}
    assert rows["big"]["attributes"]["small"] == "kept"
    _check_cut(rows["big"]["attributes"]["big"])

    trace = next(_traces)
    big.trace_id = trace.to_bytes(16, "big")
    answer = grpc_call(server, export_request([span("ok", trace=trace), big]))
    assert answer.partial_success.rejected_spans == 0
    assert sorted(stored_names(server, trace)) == ["big", "ok"]


def test_ten_megabyte_attribute_json(server: RunningServer) -> None:
    trace = next(_traces)
    tid = hex_trace(trace)
    spans = [
        json_span(
            "big",
            tid,
            "0000000000000001",
            attributes=[{"key": "big", "value": {"stringValue": _ten_mb()}}],
            status={"code": 2, "message": _ten_mb()[: 1024 * 1024]},
        ),
        json_span("ok", tid, "0000000000000002"),
    ]
    answer = export_response(post(server, json.dumps(json_traces(spans)).encode(), JSON), JSON)
    assert answer.partial_success.rejected_spans == 0
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"big", "ok"}
    _check_cut(rows["big"]["attributes"]["big"])
    status = rows["big"]["status_message"]
    assert (rows["big"]["status_code"], len(status)) == ("error", MAX_ATTRIBUTE_CHARS + 25)
    assert status.endswith(TRUNCATION_MARK.format(n=1024 * 1024 - MAX_ATTRIBUTE_CHARS))


# ---- text that is not UTF-8 ---------------------------------------------------------------------

BAD_NAME = b"bad\xff\xfename\xc3(xx"  # 13 bytes, as long as the placeholder it replaces
BAD_VALUE = b"v\xed\xa0\x80lue\x80\x81"  # a UTF-8-encoded surrogate and stray continuations
BAD_KEY = b"k\xe2\x82"  # cut inside a 3-byte sequence


def test_non_utf8_strings_in_protobuf(server: RunningServer) -> None:
    trace = next(_traces)
    placeholder = span("NAME_PLACEHOL", {"KEY": "VALUE_PLA", "fine": "ok"}, trace=trace)
    placeholder.status.code = placeholder.status.STATUS_CODE_ERROR
    placeholder.status.message = "VALUE_PLA"
    event = placeholder.events.add(name="EVENT_PH", time_unix_nano=5)
    event.attributes.append(
        KeyValue(key="exception.message", value=AnyValue(string_value="EXC_PH"))
    )
    body = export_request([span("before", trace=trace), placeholder, span("after", trace=trace)])
    patched = (
        body.replace(b"NAME_PLACEHOL", BAD_NAME)
        .replace(b"VALUE_PLA", BAD_VALUE)
        .replace(b"KEY", BAD_KEY)
        .replace(b"EVENT_PH", b"ev\xffnt_\x80h")
        .replace(b"EXC_PH", b"ex\xc3\x28PH")
    )
    assert len(patched) == len(body) and patched != body
    with pytest.raises(UnicodeDecodeError):
        BAD_NAME.decode()
    answer = export_response(post(server, patched, PROTOBUF), PROTOBUF)
    assert answer.partial_success.rejected_spans == 0
    assert "repaired" in answer.partial_success.error_message
    rows = {r["name"]: r for r in stored(server, trace)}
    name = BAD_NAME.decode("utf-8", "replace")
    assert set(rows) == {"before", name, "after"}
    assert "\ufffd" in name
    repaired = rows[name]
    assert repaired["attributes"] == {
        BAD_KEY.decode("utf-8", "replace"): "v\ufffd\ufffd\ufffdlue\ufffd\ufffd",
        "fine": "ok",
    }
    # the status, the events and links holding bad text are repaired too, not dropped
    assert repaired["status_code"] == "error"
    assert repaired["status_message"] == BAD_VALUE.decode("utf-8", "replace")
    assert repaired["events"] == [
        {
            "time_unix_nano": 5,
            "name": "ev\ufffdnt_\ufffdh",
            "attributes": {"exception.message": "ex\ufffd(PH"},
        }
    ]

    trace = next(_traces)
    placeholder.trace_id = trace.to_bytes(16, "big")
    body = export_request([placeholder, span("ok", trace=trace)])
    answer = grpc_call(server, body.replace(b"NAME_PLACEHOL", BAD_NAME))
    assert answer.partial_success.rejected_spans == 0
    assert stored_names(server, trace) == [name, "ok"]


def test_broken_attribute_with_fields_of_the_wrong_wire_type(server: RunningServer) -> None:
    """An attribute protobuf refuses, whose fields also have unexpected wire types, is kept."""
    trace = next(_traces)
    key_as_varint = varint(1 << 3 | 0) + varint(5)  # KeyValue.key as a number
    broken_kv = key_as_varint + field(2, field(1, b"\xff bad"))
    array_as_varint = varint(5 << 3 | 0) + varint(3)  # AnyValue.array_value as a number
    broken_value = array_as_varint + field(1, b"x\xfe")
    item = span("wire", {"fine": "ok"}, trace=trace).SerializeToString()
    item += field(9, broken_kv) + field(9, field(1, b"odd") + field(2, broken_value))
    body = raw_request([item, span("ok", trace=trace).SerializeToString()])
    answer = export_response(post(server, body, PROTOBUF), PROTOBUF)
    assert answer.partial_success.rejected_spans == 0
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"wire", "ok"}
    assert rows["wire"]["attributes"] == {"fine": "ok", "": "\ufffd bad", "odd": "x\ufffd"}


def test_non_utf8_resource_attribute_in_protobuf(server: RunningServer) -> None:
    trace = next(_traces)
    body = export_request([span("a", trace=trace), span("b", trace=trace)], service="SERVICE_N")
    patched = body.replace(b"SERVICE_N", b"svc\xc0\xafname")
    assert len(patched) == len(body)
    answer = export_response(post(server, patched, PROTOBUF), PROTOBUF)
    assert answer.partial_success.rejected_spans == 0
    rows = stored(server, trace)
    assert [r["name"] for r in rows] == ["a", "b"]
    assert {r["service_name"] for r in rows} == {b"svc\xc0\xafname".decode("utf-8", "replace")}


def test_non_utf8_bytes_in_json(server: RunningServer) -> None:
    trace = next(_traces)
    tid = hex_trace(trace)
    spans = [
        json_span(
            "NAME",
            tid,
            "0000000000000001",
            attributes=[{"key": "KEY", "value": {"stringValue": "VALUE"}}],
        ),
        json_span("ok", tid, "0000000000000002"),
    ]
    body = (
        json.dumps(json_traces(spans))
        .encode()
        .replace(b'"NAME"', b'"n\xff\xfe"')
        .replace(b'"KEY"', b'"k\xc3"')
        .replace(b'"VALUE"', b'"v\xed\xa0\x80"')
    )
    answer = export_response(post(server, body, JSON), JSON)
    assert answer.partial_success.rejected_spans == 0
    assert "UTF-8" in answer.partial_success.error_message
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"n\ufffd\ufffd", "ok"}
    assert rows["n\ufffd\ufffd"]["attributes"] == {"k\ufffd": "v\ufffd\ufffd\ufffd"}


def test_lone_surrogate_escapes_in_json(server: RunningServer) -> None:
    trace = next(_traces)
    tid = hex_trace(trace)
    text = json.dumps(
        json_traces(
            [
                json_span(
                    "lone-HIGH",
                    tid,
                    "0000000000000001",
                    attributes=[
                        {"key": "k-LOW", "value": {"stringValue": "a-HIGH-b-LOW-c"}},
                        {"key": "pair", "value": {"stringValue": "smile PAIR"}},
                    ],
                ),
                json_span("ok", tid, "0000000000000002"),
            ]
        )
    )
    escaped = (
        text.replace("PAIR", "\\ud83d\\ude00").replace("HIGH", "\\ud800").replace("LOW", "\\udfff")
    )
    answer = export_response(post(server, escaped.encode("ascii"), JSON), JSON)
    assert answer.partial_success.rejected_spans == 0
    assert "surrogate" in answer.partial_success.error_message
    rows = {r["name"]: r for r in stored(server, trace)}
    assert set(rows) == {"lone-\ufffd", "ok"}
    assert rows["lone-\ufffd"]["attributes"] == {
        "k-\ufffd": "a-\ufffd-b-\ufffd-c",
        "pair": "smile \U0001f600",  # a proper surrogate pair is one character, kept
    }


# ---- empty requests ----------------------------------------------------------------------------


def test_empty_requests_store_nothing(server: RunningServer) -> None:
    before = written(server)
    empty = post(server, b"", PROTOBUF)
    assert not export_response(empty, PROTOBUF).HasField("partial_success")
    assert empty.content == b""
    for body in (b"{}", b'{"resourceSpans": []}', b'{"resourceSpans": [{"scopeSpans": []}]}'):
        response = post(server, body, JSON)
        assert response.status_code == 200 and response.json() == {}, body
    for path in ("/v1/traces", "/v1/logs"):
        assert post(server, b"", PROTOBUF, path).status_code == 200
    assert post(server, b'{"resourceLogs": []}', JSON, "/v1/logs").json() == {}
    assert grpc_call(server, b"") == ExportTraceServiceResponse()
    assert grpc_call(server, b"", LOGS_EXPORT) == ExportLogsServiceResponse()
    assert written(server) == before


# ---- size limits and compression ----------------------------------------------------------------


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_body_past_the_size_limit(server: RunningServer, content_type: str) -> None:
    before = written(server)
    oversized = b" " * (MAX_REQUEST_BYTES + 1)
    status = error_status(post(server, oversized, content_type), 413, content_type)
    assert "SKILLSIGHT_MAX_REQUEST_BYTES" in status.message

    def chunked() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
        for _ in range(13):
            yield b" " * (1024 * 1024)

    status = error_status(post(server, chunked(), content_type), 413, content_type)
    assert "SKILLSIGHT_MAX_REQUEST_BYTES" in status.message
    assert written(server) == before


def test_grpc_message_past_the_size_limit(server: RunningServer) -> None:
    trace = next(_traces)
    big = span("too-big", {"pad": "x" * (MAX_REQUEST_BYTES + 1)}, trace=trace)
    refused = grpc_refused(server, export_request([big]))
    # final, not RESOURCE_EXHAUSTED: exporters would resend the same oversized message
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "SKILLSIGHT_MAX_REQUEST_BYTES" in (refused.details() or "")
    assert stored_names(server, trace) == []


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_gzip_bomb_is_refused_fast(server: RunningServer, content_type: str) -> None:
    bomb = gzip_bomb()
    assert len(bomb) < 2 * 1024 * 1024
    peak_before = peak_rss_kib(server)
    started = time.monotonic()
    response = post(server, bomb, content_type, **{"content-encoding": "gzip"})
    elapsed = time.monotonic() - started
    status = error_status(response, 413, content_type)
    assert "SKILLSIGHT_MAX_DECOMPRESSED_BYTES" in status.message
    assert elapsed < 3.0, f"took {elapsed:.1f}s: inflated too much"
    grown_mib = (peak_rss_kib(server) - peak_before) / 1024
    assert grown_mib < 512, f"server peak memory grew by {grown_mib:.0f} MiB"


def test_corrupt_gzip(server: RunningServer) -> None:
    trace = next(_traces)
    body = export_request([span(f"gz-{i}", trace=trace) for i in range(20)])
    packed = gzip.compress(body)
    flipped = bytearray(packed)
    flipped[len(packed) // 2] ^= 0xFF
    flipped[len(packed) // 2 + 1] ^= 0xFF
    cases = {
        "not gzip at all": body,
        "bit flips": bytes(flipped),
        "truncated": packed[: len(packed) // 2],
        "header only": packed[:10],
    }
    for label, payload in cases.items():
        for content_type in (PROTOBUF, JSON):
            response = post(server, payload, content_type, **{"content-encoding": "gzip"})
            status = error_status(response, 400, content_type)
            assert "gzip" in status.message, label
    unknown = post(server, packed, PROTOBUF, **{"content-encoding": "br"})
    assert "content encoding" in error_status(unknown, 400, PROTOBUF).message
    assert stored_names(server, trace) == []
    ok = post(server, packed, PROTOBUF, **{"content-encoding": "gzip"})
    assert export_response(ok, PROTOBUF) == ExportTraceServiceResponse()
    assert len(stored_names(server, trace)) == 20
