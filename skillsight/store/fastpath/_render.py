"""ClickHouse expressions that render OTLP values exactly as the Python decoder does.

The Python decoder (:mod:`skillsight.ingest.otlp.traces` and ``_values``) is the definition;
everything here mirrors it character for character: scalars as Python's ``str`` prints them,
arrays and kvlists as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, events and
links as ``json.dumps(..., ensure_ascii=False)``, long values cut with the same marker.

ClickHouse analyses a statement in time proportional to its expression nodes (tens of
microseconds each, paid on every insert), so the expressions are written for few nodes: one
renderer per attribute list, ClickHouse's own JSON string escaping with a repair for the few
characters it escapes differently, and no SQL at all for the rare shapes Python handles anyway.
Those shapes (values nested past arrays and kvlists of scalars, repeated keys where Python would
build a dict) are found by :meth:`Renderer.unsupported`, and their requests go the Python way.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from skillsight.store.values import DEPTH_MARK, TRUNCATION_MARK, Limits

_STRUCTURED = "('array_value', 'kvlist_value')"
# past the depth cap, _values._native gives the mark to everything that is not a scalar
_NOT_SCALAR = "('array_value', 'kvlist_value', 'none', 'string_value_strindex')"

# Where ClickHouse's toJSONString differs from json.dumps(ensure_ascii=False) (with
# output_format_json_escape_forward_slashes off): upper-case hex in \u escapes of control
# characters, and escaped U+2028/U+2029. Each repair starts with a backslash-u, so strings
# without one skip them all.
_JSON_REPAIRS = [
    (f"\\u{c:04X}", f"\\u{c:04x}")
    for c in range(0x20)
    if chr(c) not in "\b\t\n\f\r" and f"{c:04X}" != f"{c:04x}"
]
_JSON_REPAIRS += [("\\u2028", "\u2028"), ("\\u2029", "\u2029")]
# An escaped backslash followed by "u" is not an escape; it is parked on a NUL (which never
# appears unescaped in JSON text) while the repairs run.
_PARKED = "\x00"

# Longer expressions needed more than once are passed through a lambda rather than repeated:
# the query tree holds a copy of an expression at every place it is used.
_SHARE_ABOVE = 160

Body = Callable[[str], str]


def lit(text: str) -> str:
    """A ClickHouse string literal of any text."""
    out = []
    for char in text:
        if char in "\\'":
            out.append("\\" + char)
        elif ord(char) < 0x20:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return "'" + "".join(out) + "'"


def field(expr: str, *names: str) -> str:
    for name in names:
        expr = f"tupleElement({expr}, '{name}')"
    return expr


def json_literal(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``, computed here for constants."""
    escapes = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
    escapes["\t"] = "\\t"
    return '"' + "".join(escapes.get(c, f"\\u{ord(c):04x}" if c < " " else c) for c in text) + '"'


class Renderer:
    """Builds the expressions of one statement; lambda parameters are unique within it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._ids = itertools.count()

    def name(self, stem: str) -> str:
        return f"_{stem}{next(self._ids)}"

    def share(self, expr: str, body: Body) -> str:
        """``body`` applied to ``expr``, which it may use any number of times."""
        if len(expr) <= _SHARE_ABOVE:
            return body(expr)
        var = self.name("v")
        return f"arrayMap({var} -> {body(var)}, [{expr}])[1]"

    # -- text ----------------------------------------------------------------------------------

    def cap(self, expr: str) -> str:
        """``_values.cap``: cut past ``max_value_chars`` code points, with the marker."""
        limit = self.limits.max_value_chars
        head, tail = TRUNCATION_MARK.split("{n}")

        def body(v: str) -> str:
            # bytes bound code points from above, so lengthUTF8 runs only on long values
            return (
                f"if(length({v}) <= {limit} OR lengthUTF8({v}) <= {limit}, {v}, "
                f"concat(substringUTF8({v}, 1, {limit}), {lit(head)}, "
                f"toString(lengthUTF8({v}) - {limit}), {lit(tail)}))"
            )

        return self.share(expr, body)

    def json_repair(self, expr: str) -> str:
        """JSON text from ``toJSONString`` as ``json.dumps(..., ensure_ascii=False)`` writes it."""

        def body(j: str) -> str:
            repaired = f"replaceAll({j}, '\\\\\\\\', {lit(_PARKED)})"
            for wrong, right in _JSON_REPAIRS:
                repaired = f"replaceAll({repaired}, {lit(wrong)}, {lit(right)})"
            repaired = f"replaceAll({repaired}, {lit(_PARKED)}, '\\\\\\\\')"
            return f"if(position({j}, '\\\\u') > 0, {repaired}, {j})"

        return self.share(expr, body)

    def json_string(self, expr: str) -> str:
        """``json.dumps(text, ensure_ascii=False)`` of a String expression."""
        return self.json_repair(f"toJSONString({expr})")

    def py_float(self, expr: str, *, json: bool) -> str:
        """Python's ``repr`` of a Float64 (``json.dumps``'s spelling of non-finite ones if
        ``json``).

        Between 1e-4 and 1e16 ClickHouse prints the same shortest round-trip digits in the same
        fixed notation as Python, short only of Python's ``.0`` on whole numbers. Python uses
        exponent notation outside that range, ClickHouse only below 1e-6 and from 1e21, without
        a plus sign or a padded exponent; the other two stretches it prints in full.
        """
        x, text = self.name("x"), self.name("t")
        nan, inf, ninf = ("NaN", "Infinity", "-Infinity") if json else ("nan", "inf", "-inf")
        exponent = (
            f"replaceRegexpOne(replaceRegexpOne({text}, 'e(-?)([0-9])$', 'e\\\\10\\\\2'), "
            "'e([0-9])', 'e+\\\\1')"
        )
        # 0.0000ddd and 0.00000ddd (1e-6 <= |x| < 1e-4): d.dd, then the exponent from the zeros
        small = (
            f"replaceOne(replaceRegexpOne(replaceRegexpOne({text}, "
            "'^(-?)0[.]0000([1-9])([0-9]*)$', '\\\\1\\\\2.\\\\3e-05'), "
            "'^(-?)0[.]00000([1-9])([0-9]*)$', '\\\\1\\\\2.\\\\3e-06'), '.e', 'e')"
        )
        # ddd000 with 17 to 21 digits (1e16 <= |x| < 1e21)
        large = (
            f"concat(replaceRegexpOne(replaceRegexpOne({text}, '^(-?[0-9])([0-9]*?)0*$', "
            "'\\\\1.\\\\2'), '[.]$', ''), "
            f"'e+', toString(length({text}) - 1 - ({x} < 0)))"
        )
        laid_out = (
            f"multiIf(abs({x}) >= 1e-4 AND abs({x}) < 1e16, "
            f"if(position({text}, '.') > 0, {text}, concat({text}, '.0')), "
            f"{x} = 0, if({text} = '-0', '-0.0', '0.0'), "
            f"isNaN({x}), '{nan}', isInfinite({x}), if({x} > 0, '{inf}', '{ninf}'), "
            f"position({text}, 'e') > 0, {exponent}, abs({x}) < 1, {small}, {large})"
        )
        return f"arrayMap(({x}, {text}) -> {laid_out}, [{expr}], [toString({expr})])[1]"

    # -- AnyValue ------------------------------------------------------------------------------

    def text(self, value: str) -> str:
        """``_values.render`` of an attribute's ``AnyValue``: the text the store keeps.

        Numbers and booleans are not capped: they are shorter than any cap the writer takes.
        """
        kind = field(value, "value")
        base64 = f"base64Encode({field(value, 'bytes_value')})"
        if self.limits.max_depth <= 0:
            # past the depth cap already: whatever is not a scalar is the mark, even no value
            others = f"{kind} IN {_NOT_SCALAR}"
            rest = lit(DEPTH_MARK.format(d=self.limits.max_depth))
        else:
            others = f"{kind} IN {_STRUCTURED}"
            rest = self._structured(value)
        # bytes and the rest share one cap: each place it is written costs analysis time
        bytes_or_rest = f"if({kind} = 'bytes_value', {base64}, {rest})"
        return (
            f"multiIf({kind} = 'string_value', {self.cap(field(value, 'string_value'))}, "
            f"{kind} = 'int_value', toString({field(value, 'int_value')}), "
            f"{kind} = 'bool_value', if({field(value, 'bool_value')}, 'true', 'false'), "
            f"{kind} = 'double_value', {self.py_float(field(value, 'double_value'), json=False)}, "
            f"{kind} = 'bytes_value' OR {others}, "
            f"{self.cap(bytes_or_rest)}, '')"
        )

    def _structured(self, value: str) -> str:
        """Compact JSON of an array or kvlist of scalars (the nested ones are unsupported).

        Items are rendered with toJSONString's escaping and the whole text repaired once.
        """
        kind = field(value, "value")
        pairs = field(value, "kvlist_value", "values")
        items = (
            f"if({kind} = 'kvlist_value', {field(pairs, 'value')}, "
            f"{field(value, 'array_value', 'values')})"
        )
        item, key, rendered = self.name("a"), self.name("k"), self.name("r")

        def body(all_rendered: str) -> str:
            # keys sized like the items even where the value is an array and has none
            keys = f"arrayResize({field(pairs, 'key')}, length({all_rendered}))"
            entries = (
                f"arrayMap(({key}, {rendered}) -> concat(toJSONString({key}), ':', {rendered}), "
                f"{keys}, {all_rendered})"
            )
            return self.json_repair(
                f"if({kind} = 'kvlist_value', "
                f"concat('{{', arrayStringConcat({entries}, ','), '}}'), "
                f"concat('[', arrayStringConcat({all_rendered}, ','), ']'))"
            )

        return self.share(f"arrayMap({item} -> {self._json_item(item)}, {items})", body)

    def _json_item(self, value: str) -> str:
        """``json.dumps`` of ``_values._native`` of an array item or kvlist value, but with
        toJSONString's escaping of strings (see :meth:`json_repair`)."""
        kind = field(value, "value")
        if self.limits.max_depth <= 1:
            mark = json_literal(DEPTH_MARK.format(d=self.limits.max_depth))
            other = f"{kind} IN {_NOT_SCALAR}, {lit(mark)}, "
        else:
            other = ""  # nested structures never get here (see unsupported)
        return (
            f"multiIf({kind} = 'string_value', toJSONString({field(value, 'string_value')}), "
            f"{kind} = 'int_value', toString({field(value, 'int_value')}), "
            f"{kind} = 'bool_value', if({field(value, 'bool_value')}, 'true', 'false'), "
            f"{kind} = 'double_value', {self.py_float(field(value, 'double_value'), json=True)}, "
            f"{kind} = 'bytes_value', "
            f"concat('\"', base64Encode({field(value, 'bytes_value')}), '\"'), "
            f"{other}'null')"
        )

    def values(self, key_values: str) -> str:
        """The rendered values of an attribute list."""
        one = self.name("v")
        return f"arrayMap({one} -> {self.text(one)}, {field(key_values, 'value')})"

    # -- what the statement does not render ----------------------------------------------------

    def unsupported(self, key_values: str) -> str:
        """Whether an attribute list holds a value rendered here differently than in Python.

        That is a structure inside an array or kvlist (when the depth cap lets Python render
        it), or a kvlist repeating a key (Python's dict keeps the first place, the last value).
        """
        kinds = field(key_values, "value", "value")
        keys = field(key_values, "value", "kvlist_value", "values", "key")
        ks = self.name("ks")
        checks = [f"arrayExists({ks} -> arrayUniq({ks}) != length({ks}), {keys})"]
        if self.limits.max_depth > 1:
            items = field(key_values, "value", "array_value", "values", "value")
            pairs = field(key_values, "value", "kvlist_value", "values", "value", "value")
            checks.append(
                f"hasAny(arrayConcat(arrayFlatten({items}), arrayFlatten({pairs})), "
                f"['array_value', 'kvlist_value'])"
            )
        # one look at the values' kinds spares the deeper checks on lists of scalars alone
        structured = f"hasAny({kinds}, ['array_value', 'kvlist_value'])"
        return f"({structured} AND ({' OR '.join(checks)}))"
