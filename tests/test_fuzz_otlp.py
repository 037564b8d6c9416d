"""Property-based fuzzing of OTLP decoding, the fast path's screen, and normalization (issue 15).

Thousands of generated inputs in the suite (``FUZZ_EXAMPLES`` scales them for a long run):

- arbitrary bytes, and valid requests with bytes flipped or cut, through the protobuf decoders
  and the screen: a row set or a :class:`DecodeError`, never another exception;
- generated trace requests (odd ids, times, enums, nested and repeated attributes, events and
  links): every span is kept or rejected with a reason, the rows convert to Arrow, and whatever
  the screen lets through the Python decoder keeps whole — the fast path never takes a request
  Python would have answered with ``partial_success``;
- arbitrary JSON and OTLP-shaped JSON through the JSON decoders: rows or DecodeError, duplicate
  keys always refused;
- normalization: generated requests stored through the fast path and the Python path into the
  real engine give the same rows.

Findings are pinned as ``@example`` inputs or tests of their own at the end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from skillsight.errors import DecodeError
from skillsight.ingest import otlp
from skillsight.store import EmbeddedStore
from skillsight.store.fastpath import FastTraceWriter, distinct_span_ids, screen
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

SCALE = int(os.environ.get("FUZZ_EXAMPLES", "1"))
LIMITS = otlp.Limits(max_value_chars=256, max_depth=3)
NOW_NS = 1_763_000_000_000_000_000


def fuzz(examples: int) -> Any:
    """Hypothesis settings: ``examples`` in the suite (reproducible), times FUZZ_EXAMPLES in a
    long run (random)."""
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=SCALE == 1,
    )


# ---- strategies ---------------------------------------------------------------------------------

ids = st.one_of(st.binary(min_size=0, max_size=20), st.binary(min_size=8, max_size=8))
trace_ids = st.one_of(st.binary(min_size=16, max_size=16), ids, st.just(bytes(16)))
times = st.one_of(
    st.just(0),
    st.integers(min_value=0, max_value=2**64 - 1),
    st.integers(min_value=NOW_NS - 10**18, max_value=NOW_NS + 10**15),
)
keys = st.text(max_size=12)
scalars = st.one_of(
    st.builds(lambda s: AnyValue(string_value=s), st.text(max_size=300)),
    st.builds(lambda i: AnyValue(int_value=i), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda b: AnyValue(bool_value=b), st.booleans()),
    st.builds(lambda f: AnyValue(double_value=f), st.floats(allow_nan=True)),
    st.builds(lambda b: AnyValue(bytes_value=b), st.binary(max_size=40)),
    st.just(AnyValue()),
)


def _array(items: list[AnyValue]) -> AnyValue:
    out = AnyValue()
    out.array_value.values.extend(items)
    return out


def _kvlist(pairs: list[tuple[str, AnyValue]]) -> AnyValue:
    out = AnyValue()
    out.kvlist_value.values.extend(KeyValue(key=k, value=v) for k, v in pairs)
    return out


values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.builds(_array, st.lists(inner, max_size=4)),
        st.builds(_kvlist, st.lists(st.tuples(keys, inner), max_size=4)),
    ),
    max_leaves=12,
)
attribute_lists = st.lists(
    st.builds(lambda k, v: KeyValue(key=k, value=v), keys, values), max_size=6
)


@st.composite
def spans(draw: st.DrawFn) -> Span:
    out = Span(
        trace_id=draw(trace_ids),
        span_id=draw(ids),
        parent_span_id=draw(st.one_of(st.just(b""), ids)),
        name=draw(st.text(max_size=40)),
        kind=draw(st.integers(-5, 9)),  # type: ignore[arg-type]
        start_time_unix_nano=draw(times),
        end_time_unix_nano=draw(times),
        status=Status(code=draw(st.integers(-2, 5)), message=draw(st.text(max_size=30))),  # type: ignore[arg-type]
    )
    out.attributes.extend(draw(attribute_lists))
    for _ in range(draw(st.integers(0, 2))):
        event = out.events.add(time_unix_nano=draw(times), name=draw(st.text(max_size=10)))
        event.attributes.extend(draw(attribute_lists))
    for _ in range(draw(st.integers(0, 1))):
        link = out.links.add(trace_id=draw(trace_ids), span_id=draw(ids))
        link.attributes.extend(draw(attribute_lists))
    return out


@st.composite
def trace_requests(draw: st.DrawFn) -> tuple[bytes, int]:
    """(a serialized ExportTraceServiceRequest, the number of spans in it)."""
    request = ExportTraceServiceRequest()
    count = 0
    for _ in range(draw(st.integers(0, 2))):
        rs = request.resource_spans.add()
        rs.resource.attributes.extend(draw(attribute_lists))
        for _ in range(draw(st.integers(0, 2))):
            ss = rs.scope_spans.add()
            ss.scope.name, ss.scope.version = draw(st.text(max_size=8)), draw(st.text(max_size=4))
            batch = draw(st.lists(spans(), max_size=3))
            ss.spans.extend(batch)
            count += len(batch)
    return request.SerializeToString(), count


@st.composite
def log_requests(draw: st.DrawFn) -> bytes:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for _ in range(draw(st.integers(0, 3))):
        record = LogRecord(
            time_unix_nano=draw(times),
            observed_time_unix_nano=draw(times),
            trace_id=draw(st.one_of(st.just(b""), trace_ids)),
            span_id=draw(st.one_of(st.just(b""), ids)),
            severity_number=draw(st.integers(-3, 30)),  # type: ignore[arg-type]
            severity_text=draw(st.text(max_size=10)),
            event_name=draw(st.text(max_size=10)),
        )
        record.body.CopyFrom(draw(values))
        record.attributes.extend(draw(attribute_lists))
        scope.log_records.append(record)
    return request.SerializeToString()


def mutated(body: bytes, data: st.DataObject) -> bytes:
    """``body`` with a few bytes flipped, inserted or cut."""
    out = bytearray(body)
    for _ in range(data.draw(st.integers(1, 4))):
        if not out:
            break
        at = data.draw(st.integers(0, len(out) - 1))
        match data.draw(st.sampled_from(["flip", "cut", "insert"])):
            case "flip":
                out[at] ^= data.draw(st.integers(1, 255))
            case "cut":
                del out[at:]
            case _:
                out[at:at] = data.draw(st.binary(min_size=1, max_size=4))
    return bytes(out)


# ---- decoding never fails but with DecodeError ---------------------------------------------------


def decode_or_refuse(signal: str, body: bytes, encoding: str) -> otlp.Decoded | None:
    """Decode; a DecodeError is an answer (400), anything else is a bug and propagates."""
    try:
        decoded = otlp.decode(signal, body, encoding, "p", LIMITS, otlp.Window())
    except DecodeError:
        return None
    schema = SPAN_SCHEMA if signal == otlp.TRACES else EVENT_SCHEMA
    table = decoded.columns.to_arrow(schema)  # what the collector does next; must not raise
    # every kept item is a row, every turned-away one is counted and, when any is, explained
    assert table.num_rows == len(decoded.columns) == decoded.accepted
    assert decoded.rejected >= 0 and (decoded.reasons or not decoded.rejected)
    assert bool(decoded.message()) == bool(decoded.rejected or decoded.repaired)
    return decoded


@fuzz(2000)
@given(st.binary(max_size=600))
@example(b"\x0a\x05garbage")
@example(b"\x0a\x02\x12\x00")
def test_arbitrary_bytes_decode_or_get_a_clear_refusal(body: bytes) -> None:
    for signal in otlp.SIGNALS:
        decode_or_refuse(signal, body, otlp.PROTOBUF)
    screen(body, otlp.Window().bounds())


@fuzz(120)
@given(trace_requests(), st.data())
def test_damaged_trace_requests_decode_or_get_a_clear_refusal(
    request: tuple[bytes, int], data: st.DataObject
) -> None:
    body = mutated(request[0], data)
    decode_or_refuse(otlp.TRACES, body, otlp.PROTOBUF)
    screen(body, otlp.Window().bounds())


@fuzz(120)
@given(log_requests(), st.data())
def test_log_requests_whole_or_damaged_decode_or_get_a_clear_refusal(
    body: bytes, data: st.DataObject
) -> None:
    decode_or_refuse(otlp.LOGS, body, otlp.PROTOBUF)
    decode_or_refuse(otlp.LOGS, mutated(body, data), otlp.PROTOBUF)


@fuzz(200)
@given(trace_requests())
def test_every_span_is_kept_or_rejected_and_the_screen_takes_only_whole_requests(
    request: tuple[bytes, int],
) -> None:
    body, count = request
    window = otlp.Window()
    decoded = decode_or_refuse(otlp.TRACES, body, otlp.PROTOBUF)
    if count == 0:
        return
    assert decoded is not None  # a request protobuf made decodes
    assert decoded.accepted + decoded.rejected == count
    assert len(decoded.reasons) == min(5, decoded.rejected + decoded.repaired)
    screened = screen(body, window.bounds(), unset_ok=window.keeps_unset)
    if screened is not None:
        assert screened.spans == count
        assert decoded.rejected == 0, decoded.message()


# ---- JSON ---------------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
hexes = st.one_of(st.text(alphabet="0123456789abcdefABCDEF", max_size=34), st.text(max_size=20))


@st.composite
def json_spans(draw: st.DrawFn) -> Any:
    span: dict[str, Any] = {
        "traceId": draw(hexes),
        "spanId": draw(hexes),
        "name": draw(json_values),
        "startTimeUnixNano": draw(st.one_of(times.map(str), times, json_values)),
        "kind": draw(st.one_of(st.integers(-3, 9), st.text(max_size=25))),
        "attributes": draw(
            st.one_of(
                st.lists(st.fixed_dictionaries({"key": st.text(max_size=8), "value": json_values})),
                json_values,
            )
        ),
    }
    return draw(st.one_of(st.just(span), json_values))


@fuzz(300)
@given(st.one_of(json_values, st.lists(json_spans(), max_size=5)))
@example({"resourceSpans": [{"scopeSpans": [{"spans": [1, "x", None]}]}]})
def test_json_bodies_decode_or_get_a_clear_refusal(document: Any) -> None:
    if isinstance(document, list):
        document = {"resourceSpans": [{"scopeSpans": [{"spans": document}]}]}
    body = json.dumps(document).encode()
    for signal in otlp.SIGNALS:
        decode_or_refuse(signal, body, otlp.JSON)
    decode_or_refuse(otlp.TRACES, body[: len(body) // 2], otlp.JSON)


@fuzz(150)
@given(st.lists(json_spans(), min_size=1, max_size=5))
def test_json_spans_are_each_kept_or_rejected(items: list[Any]) -> None:
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": items}]}]}).encode()
    decoded = decode_or_refuse(otlp.TRACES, body, otlp.JSON)
    assert decoded is not None
    assert decoded.accepted + decoded.rejected == len(items)


@fuzz(200)
@given(st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=4), st.data())
def test_a_repeated_json_key_is_always_refused(obj: dict[str, Any], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(obj)))
    text = json.dumps(obj)[:-1] + f", {json.dumps(key)}: {json.dumps(obj[key])}}}"
    for signal in otlp.SIGNALS:
        with pytest.raises(DecodeError, match="duplicate key"):
            otlp.decode(signal, text.encode(), otlp.JSON, "p", LIMITS)


# ---- normalization: the fast path and the Python path store the same rows ----------------


@pytest.fixture(scope="module")
def engine(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[EmbeddedStore, FastTraceWriter]]:
    store = EmbeddedStore(tmp_path_factory.mktemp("fuzz") / "store")
    store.migrate()
    store.execute("SYSTEM STOP MERGES spans")
    fast = FastTraceWriter(store, LIMITS)
    yield store, fast
    fast.close()
    store.close()


_projects = iter(range(10**6))


def stored(store: EmbeddedStore, project: str) -> list[dict[str, Any]]:
    return store.query(
        "SELECT * EXCEPT (ingested_at, project_id) FROM spans WHERE project_id = {p:String} "
        "ORDER BY trace_id, span_id, start_time, name",
        {"p": project},
    )


@settings(
    max_examples=6 * SCALE,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=SCALE == 1,
)
@given(st.lists(trace_requests(), min_size=1, max_size=25))
def test_the_fast_path_stores_what_the_python_decoder_stores(
    engine: tuple[EmbeddedStore, FastTraceWriter], requests: list[tuple[bytes, int]]
) -> None:
    store, fast = engine
    n = next(_projects)
    python, raw = f"py-{n}", f"fast-{n}"
    window = otlp.Window(future_s=1e12)
    taken = [b for b, _ in requests if screen(b, window.bounds()) is not None]
    tables = []
    for body in taken:
        decoded = otlp.decode(otlp.TRACES, body, otlp.PROTOBUF, python, LIMITS, window)
        tables.append(decoded.columns.to_arrow(SPAN_SCHEMA))
    if tables:
        store.spans.insert(pa.concat_tables(tables))
    screened = [screen(b) for b in taken]
    left = fast.insert(
        [(raw, b) for b in taken],
        distinct=distinct_span_ids(s.span_ids if s else b"" for s in screened),
    )
    for i in left:  # what the fast path hands back goes the Python way, as in the writer
        decoded = otlp.decode(otlp.TRACES, taken[i], otlp.PROTOBUF, raw, LIMITS, window)
        store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
    assert stored(store, raw) == stored(store, python)


def test_a_start_past_int64_is_rejected_by_the_window_not_overflowed() -> None:
    """Pinned while building the window: a start of 2**64 - 1 once reached Arrow unclipped."""
    late = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, start_time_unix_nano=2**64 - 1)
    body = ExportTraceServiceRequest()
    body.resource_spans.add().scope_spans.add().spans.append(late)
    decoded = decode_or_refuse(otlp.TRACES, body.SerializeToString(), otlp.PROTOBUF)
    assert decoded is not None and decoded.rejected == 1 and "ahead" in decoded.reasons[0]
