"""OTLP decoding: request bodies into raw rows, and the responses that answer them."""

from __future__ import annotations

from skillsight.collector.otlp import logs, traces
from skillsight.collector.otlp._result import Decoded
from skillsight.collector.otlp._values import Limits
from skillsight.collector.otlp.body import JSON, PROTOBUF, decompress, encoding_of

TRACES = "traces"
LOGS = "logs"
SIGNALS = (TRACES, LOGS)


def decode(signal: str, body: bytes, encoding: str, project_id: str, limits: Limits) -> Decoded:
    """Rows of one OTLP export request; raises :class:`~skillsight.errors.DecodeError`."""
    module = traces if signal == TRACES else logs
    if encoding == JSON:
        return module.decode_json(body, project_id, limits)
    return module.decode_protobuf(body, project_id, limits)


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
