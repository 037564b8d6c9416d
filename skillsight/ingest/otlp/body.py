"""Request bodies: size limits, gzip, and which encoding a content type names."""

from __future__ import annotations

import zlib

from skillsight.errors import DecodeError, PayloadTooLarge

PROTOBUF = "protobuf"
JSON = "json"


def encoding_of(content_type: str | None) -> str:
    """``protobuf`` or ``json`` for an OTLP content type; :class:`DecodeError` otherwise."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in ("application/x-protobuf", "application/protobuf", "application/octet-stream"):
        return PROTOBUF
    if media == "application/json":
        return JSON
    raise DecodeError(
        f"unsupported content type {content_type!r}: send application/x-protobuf or "
        "application/json"
    )


def decompress(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    """The body with any gzip/deflate removed, refusing to inflate past ``max_bytes``.

    Inflation is bounded as it happens, so a gzip bomb costs at most ``max_bytes`` of memory.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding == "gzip":
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflater = zlib.decompressobj()
    else:
        raise DecodeError(f"unsupported content encoding {content_encoding!r}: use gzip")
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise DecodeError(f"body is not valid {encoding}: {exc}") from exc
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise PayloadTooLarge(
            f"body inflates past {max_bytes} bytes (SKILLSIGHT_MAX_DECOMPRESSED_BYTES)"
        )
    if not inflater.eof:
        raise DecodeError(f"{encoding} body is truncated")
    return out
