"""OTLP export responses and error bodies, in the encoding of the request."""

from __future__ import annotations

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from skillsight.ingest.otlp._result import Decoded
from skillsight.ingest.otlp.body import JSON

PROTOBUF_MEDIA = "application/x-protobuf"
JSON_MEDIA = "application/json"


def export_response(decoded: Decoded) -> ExportTraceServiceResponse | ExportLogsServiceResponse:
    """The Export response message, with ``partial_success`` when anything was turned away."""
    message = decoded.message()
    if decoded.signal == "traces":
        traces = ExportTraceServiceResponse()
        if message:
            traces.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=decoded.rejected, error_message=message)
            )
        return traces
    logs = ExportLogsServiceResponse()
    if message:
        logs.partial_success.CopyFrom(
            ExportLogsPartialSuccess(rejected_log_records=decoded.rejected, error_message=message)
        )
    return logs


def encode(message: object, encoding: str) -> tuple[bytes, str]:
    """(body, media type) of a protobuf message in the request's encoding."""
    if encoding == JSON:
        text = json_format.MessageToJson(message, indent=None)  # type: ignore[arg-type,unused-ignore]
        return text.encode("utf-8"), JSON_MEDIA
    return message.SerializeToString(), PROTOBUF_MEDIA  # type: ignore[attr-defined]


def status(code: int, message: str) -> status_pb2.Status:
    """A ``google.rpc.Status`` error body, as OTLP/HTTP asks for on failures."""
    return status_pb2.Status(code=code, message=message)


INVALID_ARGUMENT = code_pb2.INVALID_ARGUMENT
RESOURCE_EXHAUSTED = code_pb2.RESOURCE_EXHAUSTED
UNAVAILABLE = code_pb2.UNAVAILABLE
UNAUTHENTICATED = code_pb2.UNAUTHENTICATED
PERMISSION_DENIED = code_pb2.PERMISSION_DENIED
INTERNAL = code_pb2.INTERNAL
NOT_FOUND = code_pb2.NOT_FOUND
