"""The fast path (ClickHouse parses OTLP protobuf) stores exactly the rows the Python path stores.

Each comparison decodes the same requests in Python into one embedded store and sends them
through :class:`FastTraceWriter` into another (one chdb connection per process: each store is
closed before the next opens), then compares every column but ``ingested_at``. Requests the fast
path hands back go the Python way, as the batch writer sends them.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import random
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from benchmarks.traces import export_requests
from skillsight.ingest.otlp import Limits, Window, traces
from skillsight.store import EmbeddedStore, month_of
from skillsight.store.fastpath import FastTraceWriter, Screened, distinct_span_ids, screen
from skillsight.store.rows import SPAN_SCHEMA

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
LIMITS = Limits()
Request = tuple[str, bytes]

# ---- building requests ----------------------------------------------------------------------

_ids = itertools.count(1)
BASE_NS = 1_763_000_000_000_000_000


class Unset:
    """An AnyValue with no value set."""


class StrIndex:
    """An AnyValue holding a string table index (profiles), which traces render as nothing."""


def value(v: Any) -> AnyValue:
    if isinstance(v, Unset):
        return AnyValue()
    if isinstance(v, StrIndex):
        return AnyValue(string_value_strindex=3)
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, bytes):
        return AnyValue(bytes_value=v)
    if isinstance(v, list):
        out = AnyValue()
        out.array_value.values.extend(value(x) for x in v)
        return out
    if isinstance(v, tuple):  # a kvlist, as (key, value) pairs so that keys may repeat
        out = AnyValue()
        out.kvlist_value.values.extend(KeyValue(key=k, value=value(x)) for k, x in v)
        return out
    return AnyValue(string_value=str(v))


def kvs(attributes: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> list[KeyValue]:
    items = attributes.items() if isinstance(attributes, Mapping) else attributes
    return [KeyValue(key=k, value=value(v)) for k, v in items]


def make_span(
    name: str = "op",
    attributes: Mapping[str, Any] | Sequence[tuple[str, Any]] = (),
    *,
    trace: int = 1,
    parent: int | None = None,
    kind: int = Span.SPAN_KIND_INTERNAL,
    status: tuple[int, str] = (0, ""),
    start: int | None = None,
    end: int | None = None,
    events: Sequence[tuple[int, str, Any]] = (),
    links: Sequence[tuple[bytes, bytes, Any]] = (),
) -> Span:
    number = next(_ids)
    out = Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=number.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        name=name,
        kind=kind,  # type: ignore[arg-type]
        start_time_unix_nano=BASE_NS + number * 1000 if start is None else start,
        end_time_unix_nano=BASE_NS + number * 1000 + 500 if end is None else end,
        status=Status(code=status[0], message=status[1]),  # type: ignore[arg-type]
    )
    out.attributes.extend(kvs(attributes))
    for time_ns, event_name, event_attributes in events:
        event = out.events.add(time_unix_nano=time_ns, name=event_name)
        event.attributes.extend(kvs(event_attributes))
    for trace_id, span_id, link_attributes in links:
        link = out.links.add(trace_id=trace_id, span_id=span_id)
        link.attributes.extend(kvs(link_attributes))
    return out


def request(
    *resources: tuple[Mapping[str, Any], Sequence[tuple[str | None, str, Sequence[Span]]]],
) -> bytes:
    """An export request of (resource attributes, [(scope name or None, version, spans)])."""
    out = ExportTraceServiceRequest()
    for resource_attributes, scopes in resources:
        rs = ResourceSpans()
        rs.resource.attributes.extend(kvs(resource_attributes))
        for scope_name, scope_version, spans in scopes:
            ss = ScopeSpans()
            if scope_name is not None:
                ss.scope.name = scope_name
                ss.scope.version = scope_version
            ss.spans.extend(spans)
            rs.scope_spans.append(ss)
        out.resource_spans.append(rs)
    return out.SerializeToString()


def simple(*spans: Span, service: str = "svc") -> bytes:
    return request(({"service.name": service}, [("scope", "1.0", spans)]))


# ---- the two paths ----------------------------------------------------------------------------


@contextmanager
def open_store(folder: Path) -> Iterator[EmbeddedStore]:
    store = EmbeddedStore(folder)
    store.migrate()
    store.execute("SYSTEM STOP MERGES spans")  # so that duplicate rows would show
    try:
        yield store
    finally:
        store.close()


def rows(store: EmbeddedStore) -> list[dict[str, Any]]:
    return store.query(
        "SELECT * EXCEPT ingested_at FROM spans ORDER BY project_id, trace_id, span_id"
    )


# The fast path stores whatever times the receiver let through (its screen applies the time
# window); compared with the Python decoder under no window but its own.
ANY_TIME = Window(future_s=1e12)


def python_insert(store: EmbeddedStore, requests: Sequence[Request], limits: Limits) -> None:
    tables = []
    for project, body in requests:
        decoded = traces.decode_protobuf(body, project, limits, ANY_TIME)
        assert decoded.rejected == 0, decoded.message()
        tables.append(decoded.columns.to_arrow(SPAN_SCHEMA))
    if tables:
        store.spans.insert(pa.concat_tables(tables))


def python_rows(
    folder: Path, requests: Sequence[Request], limits: Limits = LIMITS
) -> list[dict[str, Any]]:
    with open_store(folder / "python") as store:
        python_insert(store, requests, limits)
        return rows(store)


def fast_rows(
    folder: Path, requests: Sequence[Request], limits: Limits = LIMITS, *, entries: bool = True
) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows after the fast path, and the indexes of the requests it left to Python.

    The insert skips the table's deduplication when the screen vouches every span id is
    distinct, as the batch writer does.
    """
    screened = [screen(body) for _, body in requests]
    distinct = distinct_span_ids(s.span_ids if s else b"" for s in screened)
    with open_store(folder / "fast") as store:
        writer = FastTraceWriter(store, limits)
        try:
            left = writer.insert(requests, entries=entries, distinct=distinct)
        finally:
            writer.close()
        python_insert(store, [requests[i] for i in left], limits)
        return rows(store), left


def assert_same(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    assert len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        differ = {k: (want[k], have[k]) for k in want if want[k] != have[k]}
        assert not differ, f"span {want['span_id']} ({want['name'][:40]!r}) differs: {differ}"


def compare(
    tmp_path: Path, requests: Sequence[Request], limits: Limits = LIMITS, *, entries: bool = True
) -> tuple[list[dict[str, Any]], list[int]]:
    expected = python_rows(tmp_path, requests, limits)
    got, left = fast_rows(tmp_path, requests, limits, entries=entries)
    assert_same(expected, got)
    return got, left


# ---- values -------------------------------------------------------------------------------------

STRINGS = [
    "",
    "plain",
    "héllo wörld 日本語 😀 \U0010ffff",
    "line\nbreak\ttab\rcr\bbs\fff",
    "ctl \x00\x01\x0b\x0e\x1a\x1f del\x7f",
    "seps \u2028 \u2029 nbsp\u00a0 bom\ufeff",
    "quote \" backslash \\ slash / apostrophe '",
    "literal \\u001F and \\\\u2028 and \\n",
    '{"json": ["in", "a", "string"], "n": 1}',
]

DOUBLES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    0.1,
    1 / 3,
    -2 / 3,
    3.14,
    100.0,
    0.0713,
    123456789.125,
    1e-4,
    -1e-4,
    9.999999999999999e-05,
    1.5e-05,
    1e-05,
    3.25e-06,
    1e-06,
    9.99e-07,
    1.5e-07,
    1e-07,
    5e-324,
    2.2250738585072014e-308,
    1e15,
    999999999999999.9,
    9999999999999998.0,
    1e16,
    -1e16,
    1.2345678901234568e17,
    12345678901234567000.0,
    1e20,
    9.9e20,
    1e21,
    1.5e21,
    1e22,
    2.5e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    math.inf,
    -math.inf,
    math.nan,
]


def random_doubles(count: int, seed: int = 11) -> list[float]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        exponent = rng.uniform(-30, 30)
        out.append(rng.choice((1, -1)) * 10**exponent)
        out.append(struct.unpack("<d", rng.randbytes(8))[0])  # any bit pattern
        out.append(float(f"{10**exponent:.3g}"))
    return [x for x in out if not math.isnan(x)] + [math.nan]


def scalar_attributes() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [(f"s{i}", s) for i, s in enumerate(STRINGS)]
    out += [("i0", 0), ("i1", -1), ("imax", 2**63 - 1), ("imin", -(2**63))]
    out += [("t", True), ("f", False)]
    out += [(f"d{i}", d) for i, d in enumerate(DOUBLES)]
    out += [("b0", b""), ("b1", b"\x00\xff\x10"), ("b2", b"hello bytes")]
    out += [("unset", Unset()), ("strindex", StrIndex()), ("", "empty key"), ("ключ", "значение")]
    return out


def structured_attributes() -> list[tuple[str, Any]]:
    return [
        ("a_empty", []),
        ("a_str", STRINGS),
        ("a_int", [1, -2, 2**63 - 1]),
        ("a_bool", [True, False]),
        ("a_double", DOUBLES),
        ("a_bytes", [b"", b"\x01\x02"]),
        ("a_mixed", ["x", 1, True, 2.5, b"y", Unset(), StrIndex()]),
        ("kv_empty", ()),
        ("kv_str", tuple((s or "k", s) for s in STRINGS)),
        ("kv_mixed", (("a", 1), ("b", False), ("c", 1e-7), ("d", Unset()), ("é\n", b"z"))),
        ("kv_keys", tuple((s, i) for i, s in enumerate(STRINGS))),
    ]


# ---- tests --------------------------------------------------------------------------------------


def test_bench_traces_in_several_projects(tmp_path: Path) -> None:
    bodies = list(export_requests(3000, 250))
    requests = [(f"project-{i % 3}", body) for i, body in enumerate(bodies)]
    got, left = compare(tmp_path, requests)
    assert left == []
    assert len(got) == 3000
    assert {r["project_id"] for r in got} == {"project-0", "project-1", "project-2"}


def test_real_captures(tmp_path: Path) -> None:
    requests = [(p.parent.name, p.read_bytes()) for p in sorted(CAPTURES.glob("*/traces.pb"))]
    assert len(requests) == 3
    got, left = compare(tmp_path, requests)
    assert left == []
    assert any(r["span_events"] != "[]" for r in got)


def test_scalar_values_everywhere(tmp_path: Path) -> None:
    attributes = scalar_attributes()
    body = request(
        (
            dict(attributes),
            [
                (
                    "scope",
                    "1",
                    [
                        make_span("with all", attributes),
                        make_span(
                            "with events and links",
                            events=[(1, "ev", attributes), (2, "second ☃", {}), (3, "", {})],
                            links=[(b"\x01" * 16, b"\x02" * 8, attributes), (b"", b"", {})],
                        ),
                    ],
                )
            ],
        )
    )
    _, left = compare(tmp_path, [("p", body)])
    assert left == []


def test_arrays_and_kvlists_of_scalars(tmp_path: Path) -> None:
    attributes = structured_attributes()
    body = request(
        (
            dict(attributes),
            [
                (
                    "scope",
                    "1",
                    [
                        make_span("structured", attributes),
                        make_span(
                            "structured entries",
                            events=[(5, "ev", attributes)],
                            links=[(b"\x03" * 16, b"\x04" * 8, attributes)],
                        ),
                    ],
                )
            ],
        )
    )
    got, left = compare(tmp_path, [("p", body)])
    assert left == []
    stored = next(r for r in got if r["name"] == "structured")["attributes"]
    assert json.loads(stored["a_str"]) == STRINGS
    assert stored["kv_mixed"] == '{"a":1,"b":false,"c":1e-07,"d":null,"é\\n":"eg=="}'


def test_doubles_render_as_python_prints_them(tmp_path: Path) -> None:
    doubles = DOUBLES + random_doubles(700)
    top_level = [(f"x{i}", d) for i, d in enumerate(doubles)]
    body = simple(make_span("doubles", [*top_level, ("all", doubles)]))
    got, left = compare(tmp_path, [("p", body)])
    assert left == []
    stored = got[0]["attributes"]
    for text in ("1.0", "-0.0", "1e+20", "1e-05", "5e-324", "nan", "-inf", "0.0713"):
        index = next(i for i, d in enumerate(DOUBLES) if repr(d) == text)
        assert stored[f"x{index}"] == text


def test_structure_of_requests(tmp_path: Path) -> None:
    """Several resources and scopes, missing pieces, odd enum values and ids, and projects."""
    long_name = "ü" * 1500
    first = request(
        (
            {"service.name": "one", "n": 1},
            [
                ("scope.a", "1.2.3", [make_span("a1"), make_span("a2", {"k": "v"}, parent=7)]),
                (None, "", [make_span("no scope")]),
                ("scope.empty", "0", []),
            ],
        ),
        ({}, [("bare", "", [make_span("no resource attributes", trace=2)])]),
        ({"service.name": "no spans"}, []),
        (
            {"service.name": "three"},
            [
                (
                    "odd",
                    "x",
                    [
                        make_span(long_name, kind=-3, status=(9, "weird ✓")),
                        make_span("kind 99", kind=99, status=(-1, "")),
                        make_span("server", kind=Span.SPAN_KIND_SERVER, status=(2, "boom")),
                        make_span("consumer", kind=Span.SPAN_KIND_CONSUMER, status=(1, "")),
                        make_span("huge times", start=2**64 - 1, end=2**63 + 5),
                        make_span("ends first", start=BASE_NS + 10, end=BASE_NS),
                        make_span("zero times", start=0, end=0),
                    ],
                )
            ],
        ),
    )
    second = simple(make_span("other project", {"session.id": "s1"}, trace=3), service="two")
    third = simple(make_span("same ids, third project", trace=1))
    got, left = compare(tmp_path, [("alpha", first), ("beta", second), ("gamma", third)])
    assert left == []
    assert {r["project_id"] for r in got} == {"alpha", "beta", "gamma"}
    assert len(got) == 13


def test_caps_and_depth(tmp_path: Path) -> None:
    long = "ß" * 100 + "x" * 50
    attributes = [
        ("long", long),
        ("bytes", b"\xff" * 80),
        ("array", [long, "y"]),
        ("kvlist", (("k", long),)),
        ("nested", [[1, 2], (("a", "b"),), Unset(), StrIndex(), 3]),
        ("unset", Unset()),
    ]
    body = simple(
        make_span("capped", attributes, status=(2, long)),
        make_span("entries", events=[(1, long, attributes)] * 3, links=[(b"1", b"2", {"a": long})]),
    )
    for limits in (
        Limits(max_value_chars=64, max_depth=1),
        Limits(max_value_chars=100, max_depth=0),
    ):
        folder = tmp_path / f"{limits.max_value_chars}-{limits.max_depth}"
        _, left = compare(folder, [("p", body)], limits)
        assert left == []


def test_unsupported_values_go_the_python_way(tmp_path: Path) -> None:
    plain = [simple(make_span(f"plain {i}", {"i": i})) for i in range(3)]
    nested = simple(make_span("nested", {"deep": [[1, [2]]]}))
    kv_in_kv = request(({"r": (("a", (("b", 1),)),)}, [("s", "", [make_span("resource kv")])]))
    repeated = simple(make_span("repeated", {"kv": (("a", 1), ("b", 2), ("a", 3))}))
    event_repeats = simple(make_span("event keys", events=[(1, "e", [("k", 1), ("k", 2)])]))
    link_nested = simple(make_span("link", links=[(b"t", b"s", {"x": [(("q", [1]),)]})]))
    requests = [("p", b) for b in (plain[0], nested, plain[1], kv_in_kv, repeated)]
    requests += [("p", b) for b in (event_repeats, link_nested, plain[2])]
    got, left = compare(tmp_path, requests)
    assert left == [1, 3, 4, 5, 6]
    assert len(got) == len(requests)  # nothing written twice by the statement that threw


def test_without_entries_requests_with_events_go_the_python_way(tmp_path: Path) -> None:
    requests = [
        ("p", simple(make_span("plain"))),
        ("p", simple(make_span("event", events=[(1, "e", {"a": 1})]))),
        ("p", simple(make_span("link", links=[(b"t" * 16, b"s" * 8, {})]))),
    ]
    _, left = compare(tmp_path, requests, entries=False)
    assert left == [1, 2]


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    def varint(n: int) -> bytes:
        out = bytearray()
        while n > 0x7F:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes([*out, n])

    length = varint(len(payload)) if wire_type == 2 else b""
    return varint(number << 3 | wire_type) + length + payload


def test_odd_encodings_protobuf_accepts(tmp_path: Path) -> None:
    """Bytes no serializer writes but protobuf's parser takes: ClickHouse reads some of them
    otherwise, and those requests must go the Python way rather than be stored differently."""

    def wrapped(span: bytes) -> bytes:  # request.resource_spans[0].scope_spans[0].spans[0]
        return _field(1, 2, _field(2, 2, _field(2, 2, span)))

    span = make_span("odd").SerializeToString()
    requests = [
        ("p", wrapped(span + _field(1, 2, b"\x03" * 16))),  # trace_id twice: the last counts
        ("p", wrapped(span + _field(6, 2, b"ab"))),  # kind with the wrong wire type
        ("p", wrapped(span + _field(99, 3, b"") + _field(99, 4, b""))),  # an unknown group
        ("p", simple(make_span("plain"))),
    ]
    assert all(screen(body) for _, body in requests)
    _, left = compare(tmp_path, requests)
    assert 0 in left
    # a field of the wrong wire type fails ClickHouse's whole statement: all go the Python way
    requests.append(("p", wrapped(span + _field(5, 0, b"\x05"))))
    _, left = compare(tmp_path / "refused", requests)
    assert left == [0, 1, 2, 3, 4]


def test_screen() -> None:
    a, b = make_span("a"), make_span("b", events=[(1, "e", {})])
    good = simple(a, b)
    month = month_of(a.start_time_unix_nano)
    assert screen(good) == Screened(2, True, a.span_id + b.span_id, (month, month))
    assert screen(simple(a)) == Screened(1, False, a.span_id, (month, month))
    zero_trace = make_span("z")
    zero_trace.trace_id = bytes(16)
    short_span = make_span("s")
    short_span.span_id = b"\x01" * 4
    bad_parent = make_span("p")
    bad_parent.parent_span_id = b"\x01" * 3
    for span in (zero_trace, short_span, bad_parent):
        assert screen(simple(make_span("ok"), span)) is None
    assert screen(b"\xff\xff not protobuf") is None
    assert screen(b"") is None
    assert screen(request(({"service.name": "x"}, [("s", "", [])]))) is None


def test_screen_leaves_times_outside_the_window_and_too_many_months_to_python() -> None:
    now = a_time = make_span("now").start_time_unix_nano
    bounds = (now - 10**12, now + 10**12)
    assert screen(simple(make_span("in")), bounds) is not None
    early, late, unset = make_span("early"), make_span("late"), make_span("unset")
    early.start_time_unix_nano = now - 10**13
    late.start_time_unix_nano = now + 10**13
    unset.start_time_unix_nano = 0
    assert screen(simple(early), bounds) is None
    assert screen(simple(late), bounds) is None
    assert screen(simple(unset), bounds) is not None  # not set: kept as sent, unless
    assert screen(simple(unset), bounds, unset_ok=False) is None  # a retention would delete it
    far = make_span("far")
    far.start_time_unix_nano = a_time - 70 * 31 * 86_400 * 10**9  # 70 months before
    assert screen(simple(make_span("x"), far)) is None  # more months than one INSERT writes


def test_distinct_span_ids() -> None:
    one, two, three = (n.to_bytes(8, "big") for n in (1, 2, 3))
    assert distinct_span_ids([one + two, three])
    assert not distinct_span_ids([one + two, two])  # a span sent again in the batch
    assert not distinct_span_ids([one + one])
    assert not distinct_span_ids([one, b""])  # ids unknown
    assert not distinct_span_ids([one + b"\x01"])  # not whole ids
    assert distinct_span_ids([])


def test_a_retried_request_in_the_same_batch_is_stored_once(tmp_path: Path) -> None:
    """Both paths insert the block deduplicated when a span comes twice: one row per span."""
    first = ("p", simple(make_span("a"), make_span("b")))
    requests = [first, ("p", simple(make_span("c"))), first]
    got, left = compare(tmp_path, requests)
    assert (left, [r["name"] for r in got]) == ([], ["a", "b", "c"])


def test_repeated_keys_normalize_from_their_first_value(tmp_path: Path) -> None:
    """The projection reads the first of repeated attribute keys, as a Map lookup does."""
    span = make_span(
        "execute_tool",
        [
            ("gen_ai.tool.name", "first"),
            ("gen_ai.tool.name", "second"),
            ("gen_ai.tool.call.id", ""),
            ("gen_ai.tool.call.id", "call-2"),
        ],
    )
    got, _ = compare(tmp_path, [("p", simple(span))])
    assert [(r["tool_name"], r["tool_call_id"], r["source_convention"]) for r in got] == [
        ("first", "", "gen_ai")
    ]


def test_requests_go_the_python_way_when_the_spool_fails(tmp_path: Path) -> None:
    requests = [("p", simple(make_span("a"))), ("p", simple(make_span("b")))]
    with open_store(tmp_path / "s") as store:
        writer = FastTraceWriter(store, LIMITS, spool_dir=tmp_path)
        writer.close()  # removes the spool folder: the file cannot be written
        assert writer.insert(requests) == [0, 1]
        assert rows(store) == []


def test_refuses_caps_below_number_lengths(tmp_path: Path) -> None:
    with open_store(tmp_path / "s") as store, pytest.raises(ValueError):
        FastTraceWriter(store, Limits(max_value_chars=10))


def test_values_check_themselves() -> None:
    """The builders above produce what the tests claim (base64 of bytes, say)."""
    assert value(b"z").bytes_value == b"z"
    assert base64.b64encode(b"z").decode() == "eg=="
