"""Loading OTLP/JSON bodies safely: bad UTF-8 repaired, lone surrogates removed, duplicate keys
refused, shapes checked."""

from __future__ import annotations

import json
import re
from typing import Any

from skillsight._json_text import scrub
from skillsight.errors import DecodeError
from skillsight.ingest.otlp._result import Decoded

# A \uD800-\uDFFF escape may leave a lone surrogate in a Python str, which no UTF-8 encoder
# (Arrow's included) accepts; only bodies that contain one pay for the scrub below.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def load(body: bytes, decoded: Decoded) -> dict[str, Any]:
    """The JSON object in ``body``; :class:`DecodeError` when there is none."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("utf-8", errors="replace")
        decoded.note("invalid UTF-8 in the body replaced with U+FFFD")
    try:
        document = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise DecodeError(f"request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise DecodeError("request body JSON is nested too deeply") from exc
    if not isinstance(document, dict):
        raise DecodeError("request body must be a JSON object")
    if _SURROGATE_ESCAPE.search(body):
        scrubbed = scrub(document)
        assert isinstance(scrubbed, dict)
        if scrubbed != document:
            decoded.note("lone UTF-16 surrogate escapes in the body replaced with U+FFFD")
        document = scrubbed
    return document


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice is refused rather than letting the last one win.

    A generic parser keeps the last value of a repeated key, so a body with ``resourceSpans``
    twice would silently lose the first list's spans. OTLP/JSON is protobuf's JSON mapping,
    where a field appears once; the sender is told which key it repeated.
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        repeated = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise DecodeError(
            f"duplicate key {repeated[:80]!r} in a JSON object: OTLP/JSON gives each field once "
            "(merge the repeated lists into one)"
        )
    return obj


def get(obj: dict[str, Any], camel: str) -> Any:
    """Field ``camel`` (lowerCamelCase, as OTLP/JSON writes it) or its snake_case form."""
    if camel in obj:
        return obj[camel]
    return obj.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))


def objects(obj: dict[str, Any], camel: str, *, items_must_be_objects: bool = True) -> list[Any]:
    """The list under ``camel``; [] when absent, :class:`DecodeError` when not a list."""
    value = get(obj, camel)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(f"{camel} must be a list")
    if items_must_be_objects and not all(isinstance(item, dict) for item in value):
        raise DecodeError(f"{camel} entries must be objects")
    return value
