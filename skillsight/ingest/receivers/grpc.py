"""OTLP/gRPC: ``TraceService/Export`` and ``LogsService/Export`` on their own port.

Requests arrive as raw bytes (the servicer deserializer is the identity) so gRPC and HTTP share
one decoder, including its salvage of partly broken requests. Status codes follow the OTLP
specification: INVALID_ARGUMENT for undecodable bodies, RESOURCE_EXHAUSTED (retryable) when the
write queue is full, UNAVAILABLE while the store fails or the service stops, UNAUTHENTICATED for
an unknown API key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc import aio

from skillsight.errors import DecodeError, Overloaded, PayloadTooLarge
from skillsight.ingest import otlp
from skillsight.ingest.collector import Collector
from skillsight.ingest.otlp import responses
from skillsight.ingest.receivers.http import refusal_status
from skillsight.tenancy import INGEST, Forbidden, Unauthenticated, project_for

log = logging.getLogger(__name__)

_SERVICES = {
    otlp.TRACES: "opentelemetry.proto.collector.trace.v1.TraceService",
    otlp.LOGS: "opentelemetry.proto.collector.logs.v1.LogsService",
}


def _retry_metadata(code: int, message: str, retry_after_s: float) -> tuple[tuple[str, bytes], ...]:
    """Trailers telling exporters when to retry.

    Go exporters read ``RetryInfo`` from the status details; the Python SDK's reads only the
    ``google.rpc.retryinfo-bin`` trailer, so both are sent.
    """
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromTimedelta(timedelta(seconds=retry_after_s))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code, message=message, details=[detail])
    return (
        ("grpc-status-details-bin", bytes(status.SerializeToString())),
        ("google.rpc.retryinfo-bin", bytes(info.SerializeToString())),
    )


def _identity(data: bytes) -> bytes:
    return data


def _serialize(message: Any) -> bytes:
    return bytes(message.SerializeToString())


class GrpcReceiver:
    """Async context manager serving OTLP/gRPC on ``host:port`` (port 0 picks one)."""

    def __init__(self, collector: Collector, host: str, port: int) -> None:
        self.collector = collector
        self.host = host
        self.requested_port = port
        self.port = 0
        # gRPC refuses messages past its own limit with RESOURCE_EXHAUSTED, which exporters
        # retry; a larger transport limit lets the collector answer INVALID_ARGUMENT (final).
        settings = collector.settings
        limit = max(4 * settings.max_request_bytes, 64 * 1024 * 1024)
        self._server = aio.server(
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", 4 * 1024 * 1024),
                # metadata (HTTP/2 headers) past the limit is refused as it arrives, never
                # buffered whole: gRPC's counterpart of HTTP's 431
                ("grpc.max_metadata_size", settings.max_header_bytes),
                ("grpc.absolute_max_metadata_size", settings.max_header_bytes),
                ("grpc.max_concurrent_streams", 100),
                ("grpc.max_connection_idle_ms", 300_000),
            ],
            maximum_concurrent_rpcs=settings.max_connections,
        )
        handlers = {
            signal: grpc.method_handlers_generic_handler(
                service,
                {
                    "Export": grpc.unary_unary_rpc_method_handler(
                        self._handler(signal),
                        request_deserializer=_identity,
                        response_serializer=_serialize,
                    )
                },
            )
            for signal, service in _SERVICES.items()
        }
        self._server.add_generic_rpc_handlers(tuple(handlers.values()))

    def _handler(
        self, signal: str
    ) -> Callable[[bytes, aio.ServicerContext[Any, Any]], Awaitable[Any]]:
        collector = self.collector

        async def export(body: bytes, context: aio.ServicerContext[Any, Any]) -> Any:
            metadata = {
                k.lower(): v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)
            }
            try:
                project = project_for(collector.settings.api_keys, metadata, INGEST)
                receipt = await asyncio.to_thread(
                    collector.ingest, signal, body, encoding=otlp.PROTOBUF, project_id=project
                )
                await collector.acknowledge(receipt)
            except Unauthenticated as exc:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
            except Forbidden as exc:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
            except (DecodeError, PayloadTooLarge) as exc:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            except Overloaded as exc:
                code = (
                    grpc.StatusCode.RESOURCE_EXHAUSTED
                    if refusal_status(collector, exc) == 429
                    else grpc.StatusCode.UNAVAILABLE
                )
                # OTLP: RESOURCE_EXHAUSTED is retryable when the server says when, via RetryInfo
                context.set_trailing_metadata(
                    _retry_metadata(code.value[0], str(exc), exc.retry_after_s)
                )
                await context.abort(code, str(exc))
            except Exception:
                # a bug, not the client's fault: say so, keep serving, and leave a traceback
                log.exception("OTLP/gRPC export failed")
                await context.abort(grpc.StatusCode.INTERNAL, "internal error; see server log")
            return responses.export_response(receipt.decoded)

        return export

    async def __aenter__(self) -> GrpcReceiver:
        address = f"{self.host}:{self.requested_port}"
        settings = self.collector.settings
        if settings.tls:
            ca = Path(settings.tls_client_ca).read_bytes() if settings.tls_client_ca else None
            credentials = grpc.ssl_server_credentials(
                [
                    (
                        Path(settings.tls_keyfile).read_bytes(),
                        Path(settings.tls_certfile).read_bytes(),
                    )
                ],
                root_certificates=ca,
                require_client_auth=ca is not None,
            )
            self.port = self._server.add_secure_port(address, credentials)
        else:
            self.port = self._server.add_insecure_port(address)
        await self._server.start()
        log.info("OTLP/gRPC listening on %s:%d", self.host, self.port)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # let in-flight exports finish; new ones are refused
        await self._server.stop(grace=5.0)
