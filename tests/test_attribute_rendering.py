"""The Python decoder's attribute values: the inlined scalar cases (a non-empty string read
without asking which member of the oneof is set, then the other scalars) render every value
exactly as the general renderer does, whatever its kind, emptiness or length."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    KeyValue,
    KeyValueList,
)

from skillsight.ingest.otlp.traces import attributes
from skillsight.store.values import Limits, render
from tests.test_fuzz_otlp import scalars

LIMITS = Limits(max_value_chars=24, max_depth=3)

_values = st.recursive(
    scalars,  # every scalar kind, the unset value too, as the fuzz tests make them
    lambda inner: st.one_of(
        st.builds(
            lambda vs: AnyValue(array_value=ArrayValue(values=vs)), st.lists(inner, max_size=3)
        ),
        st.builds(
            lambda kvs: AnyValue(
                kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])
            ),
            st.lists(st.tuples(st.text(max_size=6), inner), max_size=3),
        ),
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=10), _values), max_size=8))
def test_each_value_renders_as_the_general_renderer_does(
    pairs: list[tuple[str, AnyValue]],
) -> None:
    items = [KeyValue(key=key, value=value) for key, value in pairs]
    keys, values = attributes(items, LIMITS)
    assert keys == [key for key, _ in pairs]
    assert values == [render(item.value, LIMITS) for item in items]


def test_the_edges_of_the_shortcut() -> None:
    cases = {
        "": AnyValue(string_value=""),  # set but empty: no shortcut
        "x" * 24: AnyValue(string_value="x" * 24),  # at the cap
        "0": AnyValue(int_value=0),  # a set member at its default
        "false": AnyValue(bool_value=False),
        "0.0": AnyValue(double_value=0.0),
        "-0.0": AnyValue(double_value=-0.0),
    }
    items = [KeyValue(key=str(n), value=v) for n, v in enumerate(cases.values())]
    _, values = attributes(items, LIMITS)
    assert values == list(cases)
    long = attributes([KeyValue(key="k", value=AnyValue(string_value="y" * 30))], LIMITS)[1][0]
    assert long.startswith("y" * 24) and long == render(AnyValue(string_value="y" * 30), LIMITS)
    nan = attributes([KeyValue(key="k", value=AnyValue(double_value=math.nan))], LIMITS)[1][0]
    assert nan == "nan"
