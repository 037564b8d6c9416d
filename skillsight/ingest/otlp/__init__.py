"""OTLP decoding: request bodies into raw rows, and the responses that answer them."""

from __future__ import annotations

from skillsight.ingest.otlp import logs, traces
from skillsight.ingest.otlp._result import Decoded
from skillsight.ingest.otlp.body import JSON, PROTOBUF, decompress, encoding_of
from skillsight.ingest.otlp.window import Window
from skillsight.store.values import Limits

TRACES = "traces"
LOGS = "logs"
SIGNALS = (TRACES, LOGS)


def decode(
    signal: str,
    body: bytes,
    encoding: str,
    project_id: str,
    limits: Limits,
    window: Window | None = None,
) -> Decoded:
    """Rows of one OTLP export request; raises :class:`~skillsight.errors.DecodeError`.

    Items whose time is outside ``window`` (default: 2000 to a day ahead) are rejected alone.
    """
    if signal == TRACES:
        if encoding == JSON:
            return traces.decode_json(body, project_id, limits, window)
        return traces.decode_protobuf(body, project_id, limits, window)
    if encoding == JSON:
        return logs.decode_json(body, project_id, limits, window)
    return logs.decode_protobuf(body, project_id, limits, window)


__all__ = [
    "JSON",
    "LOGS",
    "PROTOBUF",
    "SIGNALS",
    "TRACES",
    "Decoded",
    "Limits",
    "Window",
    "decode",
    "decompress",
    "encoding_of",
]
