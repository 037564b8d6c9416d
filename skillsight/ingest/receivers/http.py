"""OTLP/HTTP: ``POST /v1/traces`` and ``POST /v1/logs``, protobuf or JSON, gzip or not.

Answers follow the OTLP/HTTP specification: 200 with an Export response (``partial_success``
when some items were turned away) in the request's encoding, sent only once the request's rows
are durable (``SKILLSIGHT_ACK``); 400 with a ``google.rpc.Status`` for an undecodable body; 401
without a known key, 403 for a key that may not ingest; 413 past the size limits; 415 for an
unknown content type; 429 (queue full, project rate limit or quota) or 503 (store failing,
shutting down, not durable in time) with ``Retry-After``, which OTLP exporters honour.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Callable, Mapping

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from skillsight.errors import DecodeError, Overloaded, PayloadTooLarge
from skillsight.ingest import otlp
from skillsight.ingest.collector import Collector, Unavailable
from skillsight.ingest.limits import RateLimited
from skillsight.ingest.otlp import responses
from skillsight.tenancy import INGEST, Forbidden, Unauthenticated, project_for

log = logging.getLogger(__name__)

# Uncompressed protobuf trace requests up to this size are ingested on the event loop when the
# fast path takes them: for them the hop to a worker thread and back (the pool's queue, the
# loop's wake-up) costs about as much CPU as the work, a screen of ~1 ms. Everything the Python
# decoder handles, and compressed bodies (whose inflated size is bounded only by
# SKILLSIGHT_MAX_DECOMPRESSED_BYTES), take the thread.
INLINE_MAX_BYTES = 512 * 1024


def _error(
    status: int, code: int, message: str, encoding: str, headers: Mapping[str, str] | None = None
) -> Response:
    body, media = responses.encode(responses.status(code, message), encoding)
    return Response(body, status_code=status, media_type=media, headers=dict(headers or {}))


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"body of {declared} bytes is past {limit} (SKILLSIGHT_MAX_REQUEST_BYTES)"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"body is past {limit} bytes (SKILLSIGHT_MAX_REQUEST_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def refusal_status(collector: Collector, exc: Overloaded) -> int:
    """429 for what the client can fix by slowing down (queue full, its project's rate or
    quota); 503 while the service cannot take anyone's rows (store failing, stopping)."""
    if isinstance(exc, RateLimited):
        return 429
    if isinstance(exc, Unavailable) or not collector.writer.healthy or collector.queue.closed:
        return 503
    return 429


def otlp_http_routes(collector_of: Callable[[], Collector | None]) -> list[Route]:
    """The two OTLP/HTTP export routes, bound to the collector ``collector_of`` gives when a
    request comes (None: this process does not ingest, and says so with a 404)."""

    async def export(request: Request, signal: str) -> Response:
        try:
            encoding = otlp.encoding_of(request.headers.get("content-type"))
        except DecodeError as exc:
            return _error(415, responses.INVALID_ARGUMENT, str(exc), otlp.JSON)
        collector = collector_of()
        if collector is None:
            message = "this process does not take OTLP (its role has no collector)"
            return _error(404, responses.NOT_FOUND, message, encoding)
        try:
            project = project_for(collector.settings.api_keys, request.headers, INGEST)
            body = await _read_body(request, collector.settings.max_request_bytes)
            content_encoding = request.headers.get("content-encoding")
            ingest = functools.partial(
                collector.ingest,
                signal,
                body,
                encoding=encoding,
                project_id=project,
                content_encoding=content_encoding,
            )
            if (
                collector.fast is not None
                and signal == otlp.TRACES
                and encoding == otlp.PROTOBUF
                and len(body) <= INLINE_MAX_BYTES
                and content_encoding in (None, "", "identity")
            ):
                receipt = ingest()
            else:
                receipt = await asyncio.to_thread(ingest)
            await collector.acknowledge(receipt)
        except Unauthenticated as exc:
            return _error(401, responses.UNAUTHENTICATED, str(exc), encoding)
        except Forbidden as exc:
            return _error(403, responses.PERMISSION_DENIED, str(exc), encoding)
        except PayloadTooLarge as exc:
            return _error(413, responses.INVALID_ARGUMENT, str(exc), encoding)
        except DecodeError as exc:
            return _error(400, responses.INVALID_ARGUMENT, str(exc), encoding)
        except Overloaded as exc:
            status = refusal_status(collector, exc)
            retry_after = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
            return _error(
                status,
                responses.RESOURCE_EXHAUSTED if status == 429 else responses.UNAVAILABLE,
                str(exc),
                encoding,
                retry_after,
            )
        except ClientDisconnect:
            return Response(status_code=400)
        except Exception:
            # a bug, not the client's fault: answer in OTLP's shape, keep serving, log it
            log.exception("OTLP/HTTP export failed")
            return _error(500, responses.INTERNAL, "internal error; see server log", encoding)
        payload, media = responses.encode(responses.export_response(receipt.decoded), encoding)
        return Response(payload, status_code=200, media_type=media)

    async def traces(request: Request) -> Response:
        return await export(request, otlp.TRACES)

    async def logs(request: Request) -> Response:
        return await export(request, otlp.LOGS)

    return [
        Route("/v1/traces", traces, methods=["POST"]),
        Route("/v1/logs", logs, methods=["POST"]),
    ]
