"""Keep every usable item of an OTLP protobuf request that protobuf cannot parse as a whole.

protobuf refuses a whole request for one string with bad UTF-8 or one attribute nested past its
recursion limit. Here the request is walked at the wire level instead: each item (span or log
record) is parsed on its own, and an item that still fails is rebuilt field by field, repairing
what can be repaired (text decoded with replacement characters, over-deep values cut) and
dropping only what cannot. Only a body that is not a protobuf message at all — truncated or
garbage — is refused, with :class:`~skillsight.errors.DecodeError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from skillsight.errors import DecodeError
from skillsight.ingest.otlp._result import Decoded
from skillsight.store.values import DEPTH_MARK, Limits

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("protobuf body is truncated (inside a varint)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("protobuf body has a varint longer than 10 bytes")


def fields(buf: bytes) -> Iterator[tuple[int, int, Any, bytes]]:
    """(field number, wire type, value, raw encoding of tag+value) of each field in ``buf``."""
    pos = 0
    end = len(buf)
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise DecodeError("protobuf body has a field numbered 0")
        value: Any
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
        elif wire == _I64:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == _I32:
            value, pos = buf[pos : pos + 4], pos + 4
        elif wire == _LEN:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
        else:
            raise DecodeError(f"protobuf body has unsupported wire type {wire}")
        if pos > end:
            raise DecodeError("protobuf body is truncated")
        yield number, wire, value, buf[start:pos]


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _lenient_value(raw: bytes, depth: int, limits: Limits) -> AnyValue:
    """An AnyValue rebuilt from its wire bytes, text repaired and depth capped."""
    value = AnyValue()
    if depth >= limits.max_depth:
        value.string_value = DEPTH_MARK.format(d=limits.max_depth)
        return value
    # only length-delimited fields are text or nested values; any other wire type is left to
    # protobuf, which keeps a field of an unexpected wire type as an unknown field
    for number, wire, field, encoded in fields(raw):
        if number == 1 and wire == _LEN:
            value.string_value = _text(field)
        elif number == 5 and wire == _LEN:
            items = [
                _lenient_value(item, depth + 1, limits)
                for n, w, item, _e in fields(field)
                if n == 1 and w == _LEN
            ]
            value.array_value.values.extend(items)
        elif number == 6 and wire == _LEN:
            value.kvlist_value.values.extend(
                _lenient_kv(item, depth + 1, limits)
                for n, w, item, _e in fields(field)
                if n == 1 and w == _LEN
            )
        else:
            value.MergeFromString(encoded)
    return value


def _lenient_kv(raw: bytes, depth: int, limits: Limits) -> KeyValue:
    kv = KeyValue()
    for number, wire, field, _encoded in fields(raw):
        if number == 1 and wire == _LEN:
            kv.key = _text(field)
        elif number == 2 and wire == _LEN:
            kv.value.CopyFrom(_lenient_value(field, depth, limits))
    return kv


def _rebuild(message_type: Any, raw: bytes, limits: Limits) -> Any:
    """Parse ``raw`` field by field; repair text, attributes and the messages holding them.

    A broken status, event or link is rebuilt the same way rather than dropped: a span must not
    lose its error status or its exception event to one bad byte in their text.
    """
    message = message_type()
    for number, wire, field, encoded in fields(raw):
        # parse each field into a scratch message first: a failed MergeFromString can leave
        # half of the broken field behind (e.g. an attribute nested past protobuf's depth limit)
        scratch = message_type()
        try:
            scratch.MergeFromString(encoded)
        except ProtobufDecodeError:
            pass
        else:
            message.MergeFrom(scratch)
            continue
        descriptor = message.DESCRIPTOR.fields_by_number.get(number)
        if descriptor is None or wire != _LEN:
            continue  # a broken field this message does not know: dropped, the item is kept
        target = getattr(message, descriptor.name)
        if descriptor.type == descriptor.TYPE_STRING:
            if isinstance(target, str):
                setattr(message, descriptor.name, _text(field))
            else:
                target.append(_text(field))
        elif descriptor.message_type is KeyValue.DESCRIPTOR:
            target.append(_lenient_kv(field, 0, limits))
        elif descriptor.message_type is AnyValue.DESCRIPTOR:
            target.CopyFrom(_lenient_value(field, 0, limits))
        elif descriptor.message_type is not None:
            part = target.add() if hasattr(target, "add") else target  # repeated or singular
            part.MergeFrom(_rebuild(type(part), field, limits))
    return message


def _parse_item(message_type: Any, raw: bytes, limits: Limits, decoded: Decoded, what: str) -> Any:
    try:
        return message_type.FromString(raw)
    except ProtobufDecodeError:
        pass
    try:
        item = _rebuild(message_type, raw, limits)
    except (DecodeError, ProtobufDecodeError) as exc:
        decoded.reject(f"{what}: {exc}")
        return None
    decoded.note(f"{what} {getattr(item, 'name', '')[:60]!r} repaired (bad UTF-8 or nesting)")
    return item


def trace_request(body: bytes, decoded: Decoded, limits: Limits) -> ExportTraceServiceRequest:
    """A trace request rebuilt from a body protobuf refused as a whole."""
    request = ExportTraceServiceRequest()
    for number, wire, rs_raw, _ in fields(body):
        if number != 1 or wire != _LEN:
            continue
        resource_spans = request.resource_spans.add()
        for n, w, raw, _e in fields(rs_raw):
            if n == 1 and w == _LEN:
                resource = _parse_item(Resource, raw, limits, decoded, "resource")
                if resource is not None:
                    resource_spans.resource.CopyFrom(resource)
            elif n == 2 and w == _LEN:
                _scope_spans(resource_spans.scope_spans.add(), raw, decoded, limits)
    return request


def _scope_spans(target: ScopeSpans, raw: bytes, decoded: Decoded, limits: Limits) -> None:
    for n, w, item, _e in fields(raw):
        if n == 1 and w == _LEN:
            scope = _parse_item(InstrumentationScope, item, limits, decoded, "scope")
            if scope is not None:
                target.scope.CopyFrom(scope)
        elif n == 2 and w == _LEN:
            span = _parse_item(Span, item, limits, decoded, "span")
            if span is not None:
                target.spans.append(span)


def logs_request(body: bytes, decoded: Decoded, limits: Limits) -> ExportLogsServiceRequest:
    """A logs request rebuilt from a body protobuf refused as a whole."""
    request = ExportLogsServiceRequest()
    for number, wire, rl_raw, _ in fields(body):
        if number != 1 or wire != _LEN:
            continue
        resource_logs: ResourceLogs = request.resource_logs.add()
        for n, w, raw, _e in fields(rl_raw):
            if n == 1 and w == _LEN:
                resource = _parse_item(Resource, raw, limits, decoded, "resource")
                if resource is not None:
                    resource_logs.resource.CopyFrom(resource)
            elif n == 2 and w == _LEN:
                _scope_logs(resource_logs.scope_logs.add(), raw, decoded, limits)
    return request


def _scope_logs(target: ScopeLogs, raw: bytes, decoded: Decoded, limits: Limits) -> None:
    for n, w, item, _e in fields(raw):
        if n == 1 and w == _LEN:
            scope = _parse_item(InstrumentationScope, item, limits, decoded, "scope")
            if scope is not None:
                target.scope.CopyFrom(scope)
        elif n == 2 and w == _LEN:
            record = _parse_item(LogRecord, item, limits, decoded, "log record")
            if record is not None:
                target.log_records.append(record)
