"""OTLP decoding: request bodies into raw rows, and the responses that answer them."""

from __future__ import annotations

from skillsight.ingest.otlp import logs, traces
from skillsight.ingest.otlp._result import Decoded
from skillsight.ingest.otlp.body import JSON, PROTOBUF, decompress, encoding_of
from skillsight.store.values import Limits

TRACES = "traces"
LOGS = "logs"
SIGNALS = (TRACES, LOGS)


def decode(signal: str, body: bytes, encoding: str, project_id: str, limits: Limits) -> Decoded:
    """Rows of one OTLP export request; raises :class:`~skillsight.errors.DecodeError`."""
    if signal == TRACES:
        if encoding == JSON:
            return traces.decode_json(body, project_id, limits)
        return traces.decode_protobuf(body, project_id, limits)
    if encoding == JSON:
        return logs.decode_json(body, project_id, limits)
    return logs.decode_protobuf(body, project_id, limits)


__all__ = [
    "JSON",
    "LOGS",
    "PROTOBUF",
    "SIGNALS",
    "TRACES",
    "Decoded",
    "Limits",
    "decode",
    "decompress",
    "encoding_of",
]
