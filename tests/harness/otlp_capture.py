"""A minimal OTLP receiver that records what exporters send, byte for byte.

It exists to produce fixture captures and to prove the Claude Code harness works; it is not the
skillsight collector. HTTP (``POST /v1/traces|logs|metrics``, protobuf or JSON, gzip accepted)
and gRPC (the three OTLP ``Export`` services) both bind 127.0.0.1 on an ephemeral port.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from collections.abc import Iterable, Iterator
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

Signal = Literal["traces", "logs", "metrics"]

_REQUEST_TYPES: dict[str, type[Message]] = {
    "traces": trace_service_pb2.ExportTraceServiceRequest,
    "logs": logs_service_pb2.ExportLogsServiceRequest,
    "metrics": metrics_service_pb2.ExportMetricsServiceRequest,
}
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


@dataclass(frozen=True)
class Capture:
    """One export request as received: the body is already un-gzipped."""

    signal: Signal
    transport: Literal["http", "grpc"]
    content_type: str
    """``application/json``, ``application/x-protobuf`` or ``application/grpc``."""
    body: bytes
    headers: dict[str, str]

    @property
    def is_json(self) -> bool:
        """Whether the body is OTLP/JSON (else it is protobuf)."""
        return "json" in self.content_type

    def message(self) -> Message:
        """The body parsed as the signal's protobuf ``Export…ServiceRequest``."""
        request = _REQUEST_TYPES[self.signal]()
        if self.is_json:
            raise ValueError("JSON captures are kept as JSON; use as_json()")
        request.ParseFromString(self.body)
        return request

    def as_json(self) -> dict[str, Any]:
        """The request as OTLP/JSON: ids hex, keys lowerCamelCase (as the JSON exporter sends)."""
        if self.is_json:
            loaded: dict[str, Any] = json.loads(self.body)
            return loaded
        converted: dict[str, Any] = _hex_ids(
            MessageToDict(self.message(), use_integers_for_enums=True)
        )
        return converted


def _hex_ids(node: Any) -> Any:
    # MessageToDict renders bytes as base64, but OTLP/JSON spells trace and span ids in hex.
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def attr_value(value: dict[str, Any]) -> Any:
    """Unwrap an OTLP/JSON ``AnyValue``."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [attr_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return attrs(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attrs(key_values: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """OTLP/JSON ``KeyValue`` list to a plain dict."""
    return {kv["key"]: attr_value(kv.get("value", {})) for kv in key_values}


def iter_spans(captures: Iterable[Capture]) -> Iterator[dict[str, Any]]:
    """Every span of every trace capture, as OTLP/JSON with ``attrs`` added (flat dict)."""
    for capture in captures:
        if capture.signal != "traces":
            continue
        for resource_spans in capture.as_json().get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    yield {**span, "attrs": attrs(span.get("attributes", []))}


def iter_log_records(captures: Iterable[Capture]) -> Iterator[dict[str, Any]]:
    """Every log record of every logs capture, as OTLP/JSON with ``attrs`` added."""
    for capture in captures:
        if capture.signal != "logs":
            continue
        for resource_logs in capture.as_json().get("resourceLogs", []):
            for scope_logs in resource_logs.get("scopeLogs", []):
                for record in scope_logs.get("logRecords", []):
                    yield {**record, "attrs": attrs(record.get("attributes", []))}


class OtlpCapture:
    """HTTP + gRPC OTLP receivers on 127.0.0.1 that record every export request.

    Use as a context manager; :attr:`http_endpoint` (``http://127.0.0.1:<port>``, the base
    for ``/v1/<signal>``) and :attr:`grpc_endpoint` are valid inside it.
    """

    def __init__(self) -> None:
        self.captures: list[Capture] = []
        self._lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self._grpc: grpc.Server | None = None
        self._grpc_port = 0

    @property
    def http_endpoint(self) -> str:
        """Base URL of the HTTP receiver (exporters append ``/v1/<signal>``)."""
        assert self._http is not None, "receiver not started"
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def grpc_endpoint(self) -> str:
        """``http://127.0.0.1:<port>`` of the gRPC receiver (plaintext)."""
        assert self._grpc is not None, "receiver not started"
        return f"http://127.0.0.1:{self._grpc_port}"

    def endpoint_for(self, protocol: str) -> str:
        """The endpoint matching an ``OTEL_EXPORTER_OTLP_PROTOCOL`` value."""
        return self.grpc_endpoint if protocol == "grpc" else self.http_endpoint

    def record(self, capture: Capture) -> None:
        """Keep one received request."""
        with self._lock:
            self.captures.append(capture)

    def of(self, signal: Signal) -> list[Capture]:
        """The captures of one signal, in arrival order."""
        with self._lock:
            return [c for c in self.captures if c.signal == signal]

    def clear(self) -> None:
        """Forget everything received so far."""
        with self._lock:
            self.captures.clear()

    def start(self) -> OtlpCapture:
        """Start both receivers."""
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _http_handler(self))
        self._http.daemon_threads = True
        self._http_thread = threading.Thread(
            target=self._http.serve_forever, name="otlp-capture-http", daemon=True
        )
        self._http_thread.start()
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        # The generated *_pb2_grpc modules carry no type annotations.
        add_trace = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add_logs = logs_service_pb2_grpc.add_LogsServiceServicer_to_server
        add_metrics = metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server
        add_trace(_TraceServicer(self), self._grpc)  # type: ignore[no-untyped-call]
        add_logs(_LogsServicer(self), self._grpc)  # type: ignore[no-untyped-call]
        add_metrics(_MetricsServicer(self), self._grpc)  # type: ignore[no-untyped-call]
        self._grpc_port = self._grpc.add_insecure_port("127.0.0.1:0")
        self._grpc.start()
        return self

    def stop(self) -> None:
        """Stop both receivers and release their ports."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._http_thread is not None:
            self._http_thread.join(timeout=5)
            self._http_thread = None
        if self._grpc is not None:
            self._grpc.stop(grace=None)
            self._grpc = None

    def __enter__(self) -> OtlpCapture:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _http_handler(owner: OtlpCapture) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            signal = self.path.split("?")[0].removeprefix("/v1/")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if signal not in _REQUEST_TYPES:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                raw = gzip.decompress(raw)
            content_type = self.headers.get("Content-Type", "application/x-protobuf")
            owner.record(
                Capture(
                    signal=signal,  # type: ignore[arg-type]
                    transport="http",
                    content_type=content_type,
                    body=raw,
                    headers={k.lower(): v for k, v in self.headers.items()},
                )
            )
            # An empty Export…ServiceResponse: zero bytes in protobuf, {} in JSON.
            reply = b"{}" if "json" in content_type else b""
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    return Handler


def _grpc_capture(
    owner: OtlpCapture, signal: Signal, request: Message, context: grpc.ServicerContext
) -> None:
    metadata = {k: v if isinstance(v, str) else repr(v) for k, v in context.invocation_metadata()}
    owner.record(
        Capture(
            signal=signal,
            transport="grpc",
            content_type="application/grpc",
            body=request.SerializeToString(),
            headers=metadata,
        )
    )


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, owner: OtlpCapture) -> None:
        self._owner = owner

    def Export(self, request: Message, context: grpc.ServicerContext) -> Message:
        _grpc_capture(self._owner, "traces", request, context)
        return trace_service_pb2.ExportTraceServiceResponse()


class _LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, owner: OtlpCapture) -> None:
        self._owner = owner

    def Export(self, request: Message, context: grpc.ServicerContext) -> Message:
        _grpc_capture(self._owner, "logs", request, context)
        return logs_service_pb2.ExportLogsServiceResponse()


class _MetricsServicer(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, owner: OtlpCapture) -> None:
        self._owner = owner

    def Export(self, request: Message, context: grpc.ServicerContext) -> Message:
        _grpc_capture(self._owner, "metrics", request, context)
        return metrics_service_pb2.ExportMetricsServiceResponse()
