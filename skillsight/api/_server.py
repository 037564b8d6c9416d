"""``skillsight serve``: API, OTLP/HTTP and OTLP/gRPC in one process around its services.

Shutdown order matters for "nothing acknowledged is lost": on SIGTERM/SIGINT the HTTP servers
stop accepting and finish in-flight requests, gRPC stops with a grace period, then the services
stop in the order :func:`skillsight.runtime.build_services` entered them (the collector drains
its write queue into ClickHouse, the finalizer's last pass rebuilds, the scheduler scores it),
and only then is the store closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Generator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Literal

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from skillsight.api._app import create_app
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
        servers = [
            _Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
            for app, _, lifespan in apps
        ]
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
        endpoints = Endpoints(
            api=f"http://{shown}:{ports[0]}",
            otlp_http=f"http://{shown}:{ports[1]}" if len(ports) > 1 else "",
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
