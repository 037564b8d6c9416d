"""Bounded inputs on every port of a real ``skillsight serve`` (issue 15).

A 64 MB header line is answered 431 after its first 64 KB, on the API port and the OTLP port,
without the server's memory growing by it; so are too many header fields. A body that stops
short of its Content-Length, a connection that sends nothing, a header that trickles in: each
is answered 408 (or closed) after the read timeouts, while other clients are served meanwhile.
Body and decompression limits hold on the API port as on the OTLP port. Duplicate JSON keys get a
clear 400. A project past its rate limit or daily quota gets 429 (gRPC RESOURCE_EXHAUSTED) with
``Retry-After`` while other projects are served.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2

from tests.support.otlp_builders import export_request, json_span, json_traces, span
from tests.support.serve import RunningServer, running_server

KEY = "x-skillsight-key"
PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
READ_TIMEOUT_S, REQUEST_TIMEOUT_S = 1.0, 3.0
MAX_REQUEST_BYTES = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "SKILLSIGHT_API_KEYS": "k-open:open,k-slow:slow,k-capped:capped,ops:ops:admin",
        "SKILLSIGHT_READ_TIMEOUT_S": str(READ_TIMEOUT_S),
        "SKILLSIGHT_REQUEST_READ_TIMEOUT_S": str(REQUEST_TIMEOUT_S),
        "SKILLSIGHT_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
        "SKILLSIGHT_PROJECT_RATE_LIMIT": "slow=100",
        "SKILLSIGHT_PROJECT_BURST_S": "1",
        "SKILLSIGHT_PROJECT_DAILY_QUOTA": "capped=50",
        "SKILLSIGHT_FLUSH_INTERVAL_S": "0.05",
    }
    with running_server(tmp_path_factory.mktemp("limits"), env=env) as running:
        yield running


@pytest.fixture(autouse=True)
def keeps_serving(server: RunningServer) -> Iterator[None]:
    yield
    assert server.proc.poll() is None, "the server died:\n" + "".join(server.output[-50:])
    ok = httpx.post(
        server.otlp_http + "/v1/traces",
        content=export_request([span("after")]),
        headers={**PROTOBUF, KEY: "k-open"},
        timeout=30,
    )
    assert ok.status_code == 200, ok.text


def rss_kb(server: RunningServer) -> int:
    for line in Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def answer_of(sock: socket.socket) -> bytes:
    """What the server sent until it closed (or 5 s of silence)."""
    sock.settimeout(5)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


@pytest.mark.parametrize("port", ["api", "otlp_http"])
def test_a_64_mb_header_gets_431_without_being_read_whole(server: RunningServer, port: str) -> None:
    sock = connect(getattr(server, port))
    before = rss_kb(server)
    sent = 0
    total = 64 * 1024 * 1024

    def send() -> None:
        nonlocal sent
        try:
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nhost: x\r\nx-big: ")
            chunk = b"a" * 65536
            while sent < total:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # the server stopped reading and closed: what it should do

    started = time.monotonic()
    sender = threading.Thread(target=send)
    sender.start()
    answer = answer_of(sock)
    sender.join(30)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert time.monotonic() - started < 10
    assert sent < total // 4, f"the server read {sent} bytes of the header"
    assert rss_kb(server) - before < 32 * 1024  # the issue measured +130 MB


@pytest.mark.parametrize("port", ["api", "otlp_http"])
def test_too_many_header_fields_get_431(server: RunningServer, port: str) -> None:
    headers = {f"x-h{i}": "v" for i in range(150)}
    response = httpx.get(getattr(server, port) + "/healthz", headers=headers, timeout=30)
    assert response.status_code == 431
    assert "header fields" in response.text


def test_a_body_short_of_its_length_gets_408_and_others_are_served_meanwhile(
    server: RunningServer,
) -> None:
    body = export_request([span("short")])
    sock = connect(server.otlp_http)
    sock.sendall(
        b"POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-protobuf\r\n"
        + f"{KEY}: k-open\r\ncontent-length: {len(body) + 100}\r\n\r\n".encode()
        + body
    )
    started = time.monotonic()
    # another client, meanwhile, is not held up by the stalled one
    other = httpx.post(
        server.otlp_http + "/v1/traces",
        content=export_request([span("meanwhile")]),
        headers={**PROTOBUF, KEY: "k-open"},
        timeout=30,
    )
    assert other.status_code == 200 and time.monotonic() - started < READ_TIMEOUT_S
    answer = answer_of(sock)
    waited = time.monotonic() - started
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert READ_TIMEOUT_S * 0.9 <= waited < READ_TIMEOUT_S + 5


@pytest.mark.parametrize("port", ["api", "otlp_http"])
def test_a_connection_that_sends_nothing_is_closed(server: RunningServer, port: str) -> None:
    sock = connect(getattr(server, port))
    started = time.monotonic()
    assert answer_of(sock) == b""  # closed without an answer: there was no request
    assert time.monotonic() - started < READ_TIMEOUT_S + 4
    sock.close()


def test_a_header_trickling_in_is_cut_at_the_request_timeout(server: RunningServer) -> None:
    sock = connect(server.api)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
    started = time.monotonic()
    answer = b""
    try:
        while time.monotonic() - started < REQUEST_TIMEOUT_S + 5:
            sock.sendall(b"x-slow: 1\r\n")  # a byte now and then keeps it from being idle
            sock.settimeout(READ_TIMEOUT_S / 3)
            try:
                answer += sock.recv(65536)
            except TimeoutError:
                continue
            if answer:
                break
    except OSError:
        pass
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert time.monotonic() - started < REQUEST_TIMEOUT_S + 3


def test_body_limits_hold_on_the_api_port_too(server: RunningServer) -> None:
    headers = {**PROTOBUF, KEY: "k-open"}
    big = httpx.post(
        server.api + "/v1/traces",
        content=b"\0" * (MAX_REQUEST_BYTES + 1),
        headers=headers,
        timeout=30,
    )
    assert big.status_code == 413
    bomb = gzip.compress(b"\0" * (80 * 1024 * 1024))
    inflated = httpx.post(
        server.api + "/v1/traces",
        content=bomb,
        headers={**headers, "content-encoding": "gzip"},
        timeout=30,
    )
    assert inflated.status_code == 413
    assert (
        "SKILLSIGHT_MAX_DECOMPRESSED_BYTES"
        in status_pb2.Status.FromString(inflated.content).message
    )


@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_duplicate_json_keys_get_a_clear_400(server: RunningServer, signal: str) -> None:
    if signal == "traces":
        good = json_span("kept-if-merged", f"{0xDD1:032x}", "00000000000000d1")
        first = json.dumps(json_traces([good]))[1:-1]
        body = "{" + first + ", " + first + "}"  # resourceSpans given twice
    else:
        body = '{"resourceLogs": [], "resourceLogs": []}'
    response = httpx.post(
        f"{server.otlp_http}/v1/{signal}",
        content=body.encode(),
        headers={**JSON, KEY: "k-open"},
        timeout=30,
    )
    assert response.status_code == 400
    message = json_format.Parse(response.text, status_pb2.Status()).message
    assert "duplicate key 'resource" in message
    nested = json_traces([{**json_span("x", f"{0xDD2:032x}", "00000000000000d2")}])
    text = json.dumps(nested).replace('"name": "x"', '"name": "x", "name": "y"')
    response = httpx.post(
        server.otlp_http + "/v1/traces", content=text.encode(), headers={**JSON, KEY: "k-open"}
    )
    assert response.status_code == 400 and "duplicate key 'name'" in response.text


def test_a_project_past_its_rate_gets_429_and_others_are_served(server: RunningServer) -> None:
    body = export_request([span(f"r{i}", trace=0x4291) for i in range(300)])
    headers = {**PROTOBUF, KEY: "k-slow"}
    first = httpx.post(server.otlp_http + "/v1/traces", content=body, headers=headers, timeout=30)
    assert first.status_code == 200  # a quiet project may send one request past its bucket
    refused = httpx.post(server.otlp_http + "/v1/traces", content=body, headers=headers, timeout=30)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    status = status_pb2.Status.FromString(refused.content)
    assert (
        status.code == code_pb2.RESOURCE_EXHAUSTED
        and "SKILLSIGHT_PROJECT_RATE_LIMIT" in status.message
    )
    with grpc.insecure_channel(server.otlp_grpc) as channel:
        call = channel.unary_unary(TRACE_EXPORT, request_serializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as grpc_refused:
            call(body, metadata=((KEY, "k-slow"),), timeout=30)
    assert grpc_refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    other = httpx.post(
        server.otlp_http + "/v1/traces",
        content=body,
        headers={**PROTOBUF, KEY: "k-open"},
        timeout=30,
    )
    assert other.status_code == 200
    health = httpx.get(server.api + "/healthz", headers={KEY: "ops"}, timeout=30).json()
    assert health["rate_limited_requests"] >= 2


def test_a_project_past_its_daily_quota_gets_429_until_midnight(server: RunningServer) -> None:
    headers = {**PROTOBUF, KEY: "k-capped"}
    within = export_request([span(f"q{i}", trace=0x4292) for i in range(40)])
    assert (
        httpx.post(server.otlp_http + "/v1/traces", content=within, headers=headers).status_code
        == 200
    )
    past = export_request([span(f"p{i}", trace=0x4293) for i in range(20)])
    refused = httpx.post(server.otlp_http + "/v1/traces", content=past, headers=headers, timeout=30)
    assert refused.status_code == 429
    assert (
        "used 40 of its 50 rows for today" in status_pb2.Status.FromString(refused.content).message
    )
    assert 0 < int(refused.headers["retry-after"]) <= 86_400


def test_grpc_metadata_past_the_limit_is_refused_and_the_server_goes_on(
    server: RunningServer,
) -> None:
    with grpc.insecure_channel(server.otlp_grpc) as channel:
        call = channel.unary_unary(TRACE_EXPORT, request_serializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as refused:
            call(
                export_request([span("big-metadata")]),
                metadata=((KEY, "k-open"), ("x-big", "a" * (1024 * 1024))),
                timeout=30,
            )
        # the server's limit (SKILLSIGHT_MAX_HEADER_BYTES), not the client's
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "65536" in (refused.value.details() or "")
        call(export_request([span("small-metadata")]), metadata=((KEY, "k-open"),), timeout=30)
