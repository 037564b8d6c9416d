"""``skillsight serve``: API, OTLP/HTTP and OTLP/gRPC in one process around its services.

Shutdown order matters for "nothing acknowledged is lost": on SIGTERM/SIGINT the HTTP servers
stop accepting and finish in-flight requests, gRPC stops with a grace period, then the services
stop in the order :func:`skillsight.runtime.build_services` entered them (the collector drains
its write queue into ClickHouse, the finalizer's last pass rebuilds, the scheduler scores it),
and only then is the store closed.

Every listener has the same bounds (:mod:`._protocol`: header size and count, read timeouts,
open connections) and, with ``SKILLSIGHT_TLS_CERTFILE``/``_KEYFILE``, speaks TLS (gRPC too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable, Generator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Literal

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from skillsight.api._app import create_app
from skillsight.api._protocol import ListenerLimits, bounded_protocol
from skillsight.config import Settings
from skillsight.ingest.receivers import GrpcReceiver, otlp_http_routes
from skillsight.runtime import Role, build_services, stop_on_signals

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoints:
    api: str
    otlp_http: str
    otlp_grpc: str


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to :func:`serve`, which stops both servers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _uvicorn_config(
    app: ASGIApp, settings: Settings, lifespan: Literal["on", "off"]
) -> uvicorn.Config:
    """One listener's configuration: bounded HTTP/1.1, TLS when configured."""
    limits = ListenerLimits(
        max_header_bytes=settings.max_header_bytes,
        max_headers=settings.max_headers,
        read_timeout_s=settings.read_timeout_s,
        request_read_timeout_s=settings.request_read_timeout_s,
    )
    tls: dict[str, object] = {}
    if settings.tls:
        tls = {"ssl_certfile": settings.tls_certfile, "ssl_keyfile": settings.tls_keyfile}
        if settings.tls_client_ca:
            tls.update(ssl_ca_certs=settings.tls_client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return uvicorn.Config(
        app,
        log_level="warning",
        lifespan=lifespan,
        http=bounded_protocol(limits),
        limit_concurrency=settings.max_connections,
        **tls,  # type: ignore[arg-type]
    )


def _warn_if_exposed(settings: Settings, host: str) -> None:
    if settings.api_keys and not settings.tls and host not in ("127.0.0.1", "::1", "localhost"):
        log.warning(
            "API keys travel in plain text on %s: set SKILLSIGHT_TLS_CERTFILE and "
            "SKILLSIGHT_TLS_KEYFILE, or keep a TLS-terminating proxy in front "
            "(docs/reliability.md)",
            host,
        )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


async def serve(
    settings: Settings,
    *,
    role: Role | str = "all",
    on_ready: Callable[[Endpoints], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until SIGTERM/SIGINT (or ``stop`` is set), then shut down gracefully.

    The API listens in every role; the OTLP listeners only where the role ingests.
    """
    host = settings.bind_host
    _warn_if_exposed(settings, host)
    stop = stop or asyncio.Event()
    stop_on_signals(stop)
    async with AsyncExitStack() as stack:
        services = await stack.enter_async_context(
            build_services(settings, role=role, warm_up=True)
        )
        collector = services.collector
        apps: list[tuple[ASGIApp, socket.socket, Literal["on", "off"]]] = [
            (create_app(services), _bind(host, settings.port), "on")
        ]
        grpc_port: int | None = None
        if collector is not None:
            grpc_receiver = await stack.enter_async_context(
                GrpcReceiver(collector, host, settings.otlp_grpc_port)
            )
            grpc_port = grpc_receiver.port
            otlp_app = Starlette(routes=otlp_http_routes(lambda: collector))
            apps.append((otlp_app, _bind(host, settings.otlp_http_port), "off"))
        servers = [_Server(_uvicorn_config(app, settings, lifespan)) for app, _, lifespan in apps]
        tasks = [
            asyncio.create_task(server.serve(sockets=[sock]))
            for server, (_, sock, _) in zip(servers, apps, strict=True)
        ]
        while not all(s.started for s in servers):
            if any(t.done() for t in tasks):
                break
            await asyncio.sleep(0.02)
        shown = "[" + host + "]" if ":" in host else host
        ports = [sock.getsockname()[1] for _, sock, _ in apps]
        scheme = "https" if settings.tls else "http"
        endpoints = Endpoints(
            api=f"{scheme}://{shown}:{ports[0]}",
            otlp_http=f"{scheme}://{shown}:{ports[1]}" if len(ports) > 1 else "",
            otlp_grpc=f"{shown}:{grpc_port}" if grpc_port is not None else "",
        )
        if on_ready is not None and all(s.started for s in servers):
            on_ready(endpoints)
        stopper = asyncio.create_task(stop.wait())
        await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        stopper.cancel()
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    log.info("skillsight stopped; every acknowledged row was written")
