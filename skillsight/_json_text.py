"""JSON that arrives as text inside telemetry (tool inputs and results, span events) or a model's
answer, parsed so that every string in it can be stored.

A ``\\uD800``-``\\uDFFF`` escape without its pair (text cut inside an emoji by a sender that
counts UTF-16 units, then JSON-encoded) parses into a Python ``str`` holding a lone surrogate,
which no UTF-8 encoder accepts: Arrow's, pydantic's and ClickHouse's all refuse it, so one such
value would fail the write of every rebuild or evaluation batched with it. Such a surrogate
becomes U+FFFD, as invalid UTF-8 bytes do at ingest; only text holding such an escape pays for
the scrub.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(text: str) -> Any:
    """``json.loads(text)``, with every lone surrogate in its strings replaced by U+FFFD.
    Raises :class:`json.JSONDecodeError` as ``json.loads`` does."""
    value = json.loads(text)
    if "\\" in text and _SURROGATE_ESCAPE.search(text):
        return scrub(value)
    return value


def scrub(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate in its strings and keys replaced."""
    if isinstance(value, str):
        # U+FFFD as for invalid UTF-8 bytes; encode(errors="replace") would write a plain "?"
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value
