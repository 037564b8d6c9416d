"""What ClickHouse is told about the bytes it parses: a protobuf schema and a column structure.

The schema is our own copy of the OTLP trace messages, reduced to the fields the store keeps; the
field numbers are OTLP's, so ClickHouse reads unchanged export requests and skips every field the
copy leaves out. Each request travels inside an ``Envelope`` that adds its position in the batch
and its project. Wrapping, rather than appending fields to the request, keeps the client's bytes
out of reach: nothing inside a request body can overwrite the project it is filed under.
"""

from __future__ import annotations

ENVELOPE = "Envelope"

PROTO = """
syntax = "proto3";
message Envelope { uint32 index = 1; string project = 2; ExportTraceServiceRequest request = 3; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; repeated Event events = 11; repeated Link links = 13;
  Status status = 15;
}
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
message Link { bytes trace_id = 1; bytes span_id = 2; repeated KeyValue attributes = 4; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
    int32 string_value_strindex = 8;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
"""

# input_format_protobuf_oneof_presence fills an Enum element named after the oneof with the
# field that was set; the names must be the oneof's field names.
ONEOF_FIELDS = (
    "string_value",
    "bool_value",
    "int_value",
    "double_value",
    "array_value",
    "kvlist_value",
    "bytes_value",
    "string_value_strindex",
)
_ONEOF = "Enum8('none' = 0, " + ", ".join(f"'{n}' = {i}" for i, n in enumerate(ONEOF_FIELDS, 1))
_ONEOF += ")"
_SCALARS = (
    "string_value String, bool_value Bool, int_value Int64, double_value Float64, "
    "bytes_value String"
)


# An attribute value, and the items of an array or kvlist value. The structure has to be
# finite: items are read as scalars, and an item that is itself a structure still says so in its
# oneof column, which is how the renderer knows it cannot render it.
ITEM_TYPE = f"Tuple({_SCALARS}, value {_ONEOF})"
VALUE_TYPE = (
    f"Tuple({_SCALARS}, array_value Tuple(values Array({ITEM_TYPE})), "
    f"kvlist_value Tuple(values Array(Tuple(key String, value {ITEM_TYPE}))), value {_ONEOF})"
)


def _structure() -> str:
    kvs = f"Array(Tuple(key String, value {VALUE_TYPE}))"
    span = (
        "Tuple(trace_id String, span_id String, parent_span_id String, name String, "
        "kind Int32, start_time_unix_nano UInt64, end_time_unix_nano UInt64, "
        f"attributes {kvs}, "
        f"events Array(Tuple(time_unix_nano UInt64, name String, attributes {kvs})), "
        f"links Array(Tuple(trace_id String, span_id String, attributes {kvs})), "
        "status Tuple(message String, code Int32))"
    )
    resource_spans = (
        f"Tuple(resource Tuple(attributes {kvs}), "
        f"scope_spans Array(Tuple(scope Tuple(name String, version String), spans Array({span}))))"
    )
    return f"index UInt32, project String, request Tuple(resource_spans Array({resource_spans}))"


STRUCTURE = _structure()
"""The column structure of one ``Envelope`` row."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_INDEX_TAG = _varint(1 << 3 | 0)
_PROJECT_TAG = _varint(2 << 3 | 2)
_REQUEST_TAG = _varint(3 << 3 | 2)


def envelope(index: int, project: bytes, body: bytes) -> list[bytes]:
    """The pieces of one length-delimited ``Envelope`` (ClickHouse's ``Protobuf`` format).

    Pieces rather than one joined message, so the request body is never copied twice.
    """
    head = b"".join(
        (
            _INDEX_TAG,
            _varint(index),
            _PROJECT_TAG,
            _varint(len(project)),
            project,
            _REQUEST_TAG,
            _varint(len(body)),
        )
    )
    return [_varint(len(head) + len(body)), head, body]
