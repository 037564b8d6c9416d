"""``skillsight serve``: API, OTLP/HTTP and OTLP/gRPC in one process around one collector.

Shutdown order matters for "nothing acknowledged is lost": on SIGTERM/SIGINT the HTTP servers
stop accepting and finish in-flight requests, gRPC stops with a grace period, then the collector
drains its write queue into ClickHouse, and only then is the store closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Generator
from contextlib import AsyncExitStack
from dataclasses import dataclass

import uvicorn
from starlette.applications import Starlette

from skillsight.api.app import create_app
from skillsight.api.evaluations import wire_scheduler
from skillsight.collector.catalogue import register_skill_dirs, skill_dirs
from skillsight.collector.receivers import GrpcReceiver, otlp_http_routes
from skillsight.collector.service import Collector
from skillsight.collector.store import open_store
from skillsight.config import DEFAULT_PROJECT, Settings

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
    on_ready: Callable[[Endpoints], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until SIGTERM/SIGINT (or ``stop`` is set), then shut down gracefully."""
    host = settings.bind_host
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    store = await asyncio.to_thread(open_store, settings)
    if settings.skills_dirs:
        projects = sorted(set(settings.api_keys.values())) or [DEFAULT_PROJECT]
        report = await asyncio.to_thread(
            register_skill_dirs, store, skill_dirs(settings.skills_dirs), projects
        )
        log.info("catalogue: %d skills from %s", len(report.skills), settings.skills_dirs)
    try:
        async with AsyncExitStack() as stack:
            # the evaluation scheduler is entered first so it outlives the finalizer's flush
            collector = Collector(store, settings)
            scheduler = await wire_scheduler(stack, store, settings, collector, warm_up=True)
            await stack.enter_async_context(collector)
            grpc_receiver = await stack.enter_async_context(
                GrpcReceiver(collector, host, settings.otlp_grpc_port)
            )
            api_sock = _bind(host, settings.port)
            otlp_sock = _bind(host, settings.otlp_http_port)
            servers = [
                _Server(
                    uvicorn.Config(
                        create_app(settings, collector=collector, scheduler=scheduler),
                        log_level="warning",
                        lifespan="on",
                    )
                ),
                _Server(
                    uvicorn.Config(
                        Starlette(routes=otlp_http_routes(collector)),
                        log_level="warning",
                        lifespan="off",
                    )
                ),
            ]
            tasks = [
                asyncio.create_task(servers[0].serve(sockets=[api_sock])),
                asyncio.create_task(servers[1].serve(sockets=[otlp_sock])),
            ]
            while not all(s.started for s in servers):
                if any(t.done() for t in tasks):
                    break
                await asyncio.sleep(0.02)
            shown = "[" + host + "]" if ":" in host else host
            endpoints = Endpoints(
                api=f"http://{shown}:{api_sock.getsockname()[1]}",
                otlp_http=f"http://{shown}:{otlp_sock.getsockname()[1]}",
                otlp_grpc=f"{shown}:{grpc_receiver.port}",
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
    finally:
        await asyncio.to_thread(store.close)
        log.info("skillsight stopped; every acknowledged row was written")
