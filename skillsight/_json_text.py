"""JSON that arrives as text inside telemetry (tool inputs and results, span events) or a model's
answer, parsed so that every string in it can be stored.

A ``\\uD800``-``\\uDFFF`` escape without its pair (text cut inside an emoji by a sender that
counts UTF-16 units, then JSON-encoded) parses into a Python ``str`` holding a lone surrogate,
which no UTF-8 encoder accepts: Arrow's, pydantic's and ClickHouse's all refuse it, so one such
value would fail the write of every rebuild or evaluation batched with it. Such a surrogate
becomes U+FFFD, as invalid UTF-8 bytes do at ingest; only text holding such an escape pays for
the scrub.

orjson parses the texts, in about a third of the standard parser's time (a rebuild parses every
span's events and every tool input, an evaluation every call's arguments). Where the two would
differ the standard parser answers: orjson refuses a lone surrogate (escaped or not), ``NaN``
and ``Infinity``, a number past a double's range and nesting past 1,024 levels, and those texts
are parsed again by ``json.loads``; it turns an integer past 64 bits into a float without an
error, so a text holding 19 digits in a row, as every such integer does, goes to ``json.loads``
directly. Either way the value is what ``json.loads`` gives (``tests/test_json_text.py``
compares them).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_LONG_DIGITS = re.compile("[0-9]{19}")
"""Where an integer orjson would read as a float may be: 2**63 has 19 digits."""


def loads(text: str) -> Any:
    """``json.loads(text)``, with every lone surrogate in its strings replaced by U+FFFD.
    Raises :class:`json.JSONDecodeError` as ``json.loads`` does."""
    if _LONG_DIGITS.search(text) is None:
        try:
            return orjson.loads(text)  # what it takes holds no lone surrogate: nothing to scrub
        except orjson.JSONDecodeError:
            pass  # the standard parser answers: the same error, or what orjson refuses
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
