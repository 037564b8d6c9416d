"""Rendering of OTLP attribute values into the store's ``Map(String, String)``.

Scalars become their text (booleans ``true``/``false``), arrays and key-value lists become JSON,
bytes become base64. Values longer than the configured cap are cut and marked, and structures
nested deeper than the configured depth are cut at that depth and marked, so one hostile
attribute never costs the span that carries it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber

TRUNCATION_MARK = "…[truncated {n} chars]"
DEPTH_MARK = "…[nested deeper than {d} levels]"

SPAN_KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
STATUS_CODES = ("unset", "ok", "error")
_SPAN_KIND_NAMES = {f"SPAN_KIND_{k.upper()}": k for k in SPAN_KINDS}
_STATUS_NAMES = {f"STATUS_CODE_{k.upper()}": k for k in STATUS_CODES}
_SEVERITY_NAMES = dict(SeverityNumber.items())
MAX_INT64 = 2**63 - 1
_INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Limits:
    """Caps applied to every attribute value."""

    max_value_chars: int = 256 * 1024
    max_depth: int = 8


def cap(text: str, limits: Limits) -> str:
    if len(text) <= limits.max_value_chars:
        return text
    cut = len(text) - limits.max_value_chars
    return text[: limits.max_value_chars] + TRUNCATION_MARK.format(n=cut)


def _native(value: AnyValue, depth: int, limits: Limits) -> Any:
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if depth >= limits.max_depth:
        return DEPTH_MARK.format(d=limits.max_depth)
    if which == "array_value":
        return [_native(v, depth + 1, limits) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _native(kv.value, depth + 1, limits) for kv in value.kvlist_value.values}
    return None


def render(value: AnyValue, limits: Limits) -> str:
    """Text of a protobuf ``AnyValue`` (the slow path; scalars are inlined by callers)."""
    native = _native(value, 0, limits)
    if isinstance(native, str):
        return cap(native, limits)
    if isinstance(native, bool):
        return "true" if native else "false"
    if native is None:
        return ""
    if isinstance(native, int | float):
        return str(native)
    return cap(json.dumps(native, ensure_ascii=False, separators=(",", ":")), limits)


_MISSING = object()


def _pick(obj: dict[str, Any], camel: str) -> Any:
    """A field of an OTLP/JSON object by its lowerCamelCase name, or its snake_case name."""
    if camel in obj:
        return obj[camel]
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return obj.get(snake, _MISSING)


def _json_native(value: Any, depth: int, limits: Limits) -> Any:
    """Native Python value of an OTLP/JSON ``AnyValue`` object."""
    if not isinstance(value, dict):
        return value
    if (found := _pick(value, "stringValue")) is not _MISSING:
        return str(found)
    if (found := _pick(value, "intValue")) is not _MISSING:
        return int(found)  # 64-bit integers arrive as JSON strings in OTLP/JSON
    if (found := _pick(value, "boolValue")) is not _MISSING:
        return bool(found)
    if (found := _pick(value, "doubleValue")) is not _MISSING:
        return float(found)
    if (found := _pick(value, "bytesValue")) is not _MISSING:
        return str(found)  # already base64 in OTLP/JSON
    if depth >= limits.max_depth:
        return DEPTH_MARK.format(d=limits.max_depth)
    if (found := _pick(value, "arrayValue")) is not _MISSING:
        items = (found or {}).get("values") or []
        return [_json_native(v, depth + 1, limits) for v in items]
    if (found := _pick(value, "kvlistValue")) is not _MISSING:
        items = (found or {}).get("values") or []
        return {
            str(kv.get("key", "")): _json_native(kv.get("value"), depth + 1, limits) for kv in items
        }
    return None


def render_json(value: Any, limits: Limits) -> str:
    """Text of an OTLP/JSON ``AnyValue`` object, rendered exactly as :func:`render` would."""
    native = _json_native(value, 0, limits)
    if isinstance(native, str):
        return cap(native, limits)
    if isinstance(native, bool):
        return "true" if native else "false"
    if native is None:
        return ""
    if isinstance(native, int | float):
        return str(native)
    return cap(json.dumps(native, ensure_ascii=False, separators=(",", ":")), limits)


def json_attributes(items: Any, limits: Limits) -> tuple[list[str], list[str]]:
    """Keys and rendered values of an OTLP/JSON attribute list."""
    keys: list[str] = []
    values: list[str] = []
    if not items:
        return keys, values
    if not isinstance(items, list):
        raise ValueError("attributes must be a list of {key, value}")
    for kv in items:
        if not isinstance(kv, dict):
            raise ValueError("attribute entries must be objects")
        keys.append(cap(str(kv.get("key", "")), limits))
        values.append(render_json(kv.get("value"), limits))
    return keys, values


def json_hex_id(value: Any, length: int, what: str, *, required: bool) -> str:
    """Validate an OTLP/JSON id: lowercase hex of ``length`` bytes (or empty if not required).

    OTLP/JSON carries ids as hex, not base64 as generic protobuf JSON would.
    """
    text = "" if value is None else str(value)
    if not text:
        if required:
            raise ValueError(f"{what} is missing")
        return ""
    if len(text) != 2 * length:
        raise ValueError(f"{what} {text[:40]!r} is not {length} bytes of hex")
    try:
        raw = bytes.fromhex(text)
    except ValueError as exc:
        raise ValueError(f"{what} {text[:40]!r} is not hex") from exc
    if required and raw == bytes(length):
        raise ValueError(f"{what} is all zeros")
    return text.lower()


def json_uint64(value: Any, what: str) -> int:
    if value is None or value == "":
        return 0
    number = int(value)
    if number < 0:
        raise ValueError(f"{what} is negative")
    return min(number, MAX_INT64)


def json_span_kind(value: Any) -> str:
    if isinstance(value, int) and 0 <= value < len(SPAN_KINDS):
        return SPAN_KINDS[value]
    if isinstance(value, str):
        return _SPAN_KIND_NAMES.get(value, "unspecified")
    return "unspecified"


def json_status_code(value: Any) -> str:
    if isinstance(value, int) and 0 <= value < len(STATUS_CODES):
        return STATUS_CODES[value]
    if isinstance(value, str):
        return _STATUS_NAMES.get(value, "unset")
    return "unset"


def json_severity(value: Any) -> int:
    """A log record's severity number: an int, or its ``SEVERITY_NUMBER_*`` name in OTLP/JSON.

    Anything else (a boolean, an int past the protobuf enum's int32) never reaches the store
    as is, where it would fail the whole request's conversion.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, _INT32[0]), _INT32[1])
    if isinstance(value, str):
        return _SEVERITY_NAMES.get(value, 0)
    return 0
