"""JSON text inside telemetry parses to what the standard parser gives, whichever parser answers.

``skillsight._json_text.loads`` lets orjson parse what it parses alike and hands the rest to
``json.loads`` (lone surrogates, non-finite numbers, integers past 64 bits, deep nesting). Each
test compares it with the standard parser followed by the surrogate scrub, value and type alike,
errors included."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillsight._json_text import loads, scrub


def _standard(text: str) -> Any:
    """What the parsing was before orjson: ``json.loads``, then the scrub when the text holds a
    surrogate's escape (a lone surrogate written as itself is left as the text holds it)."""
    value = json.loads(text)
    return scrub(value) if re.search(r"\\u[dD][89a-fA-F]", text) else value


def _outcome(parse: Any, text: str) -> tuple[str, str]:
    """What a parse gave: ``ok`` and the value's exact form (``repr`` tells 1 from 1.0 and
    -0.0 from 0.0, and shows every character), or the kind of error."""
    try:
        return ("ok", _exact(parse(text)))
    except json.JSONDecodeError:
        return ("error", "JSONDecodeError")
    except RecursionError:
        return ("error", "RecursionError")


def _exact(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"  # nan != nan; its repr is stable
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_exact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_exact(v) for v in value) + "]"
    return f"{type(value).__name__}:{value!r}"


def _same(text: str) -> None:
    assert _outcome(loads, text) == _outcome(_standard, text), text[:200]


@pytest.mark.parametrize(
    "text",
    [
        # integers at and past 64 bits: orjson would read those past them as floats
        "[9223372036854775807, 9223372036854775808, 18446744073709551615]",
        "[18446744073709551616, -9223372036854775809, 123456789012345678901234567890]",
        '{"id": 99999999999999999999, "n": 1}',
        "[0.1234567890123456789012]",  # many digits after the point: a float either way
        # what orjson refuses and the standard parser takes
        "[NaN, Infinity, -Infinity]",
        "[1e400, -1e400]",
        '{"a": "\\ud800", "\\udfff": "b"}',
        '"cut \\ud83d"',
        '{"ok": "\\ud83d\\ude00"}',
        '"\ud800"',  # a lone surrogate in the text itself, not escaped
        "[" * 1100 + "]" * 1100,  # deeper than orjson goes
        "[" * 5000 + "]" * 5000,  # deeper than the standard parser goes: its error
        # what both take alike
        '{"a": 1, "a": 2}',
        "[-0, -0.0, 0.0, 1E2, 1e-7, 5e-324, 1.7976931348623157e308]",
        ' \t\n\r{"k" : [true, false, null]}\r\n',
        '{"a": "\\u0000\\u001f\\"\\\\\\/\\b\\f\\n\\r\\t"}',
        '"\u2028\u2029 é 😀"',
        # what both refuse
        "",
        " ",
        "[1,]",
        "{'a': 1}",
        "[01]",
        '"\x01"',
        "\ufeff[1]",
        "[1]x",
        "[1\x0b]",
        "nan",
        "-",
        "1.",
        ".5",
        '{"a" 1}',
    ],
)
def test_a_text_parses_as_the_standard_parser_parses_it(text: str) -> None:
    _same(text)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_JSON, st.booleans())
def test_any_json_document_parses_alike(value: Any, ascii_only: bool) -> None:
    _same(json.dumps(value, ensure_ascii=ascii_only))


# Texts near JSON: fragments of its grammar, digits, escapes and stray characters, most of them
# not JSON at all; both parsers must refuse, or take, each alike.
_PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "d800", "D83D", "\\ude00", "0", "1",
        "9", "-", "+", ".", "e", "E", "00000000000000000000", "true", "null", "NaN",
        "Infinity", " ", "\t", "\n", "\x0c", "\x00", "a", "é", "\ud800", "😀", '"k"', '"v"',
    ]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_any_text_near_json_parses_or_fails_alike(text: str) -> None:
    _same(text)


def test_a_scrubbed_value_holds_no_lone_surrogate_and_encodes() -> None:
    value = loads('{"cmd": "echo \\ud83d", "\\udc00key": ["\\ud800", "ok \\ud83d\\ude00"]}')
    assert value == {"cmd": "echo \ufffd", "\ufffdkey": ["\ufffd", "ok 😀"]}
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # encodes: nothing left to refuse
