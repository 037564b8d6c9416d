"""The service a rerun hosts for its agents: the runtime's services and an OTLP/HTTP listener.

A rerun's agents export their telemetry to this listener on 127.0.0.1, so each run goes through
the same collector, finalizer and online evaluators as live traffic. The services are built by
:func:`skillsight.runtime.build_services` on the rerun's store; the listener serves the OTLP
routes of :mod:`skillsight.ingest.receivers` with uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass

import uvicorn
from starlette.applications import Starlette

from skillsight.config import Settings
from skillsight.errors import RerunError
from skillsight.ingest.receivers import otlp_http_routes
from skillsight.runtime import Services, build_services
from skillsight.store import Store


@dataclass(frozen=True)
class Hosted:
    services: Services
    endpoint: str
    """OTLP/HTTP base URL (``http://127.0.0.1:PORT``)."""

    def drained(self) -> bool:
        """Every row the collector took is committed (its write queue holds none)."""
        collector = self.services.collector
        return collector is None or collector.queue.held_rows == 0


class _Server(uvicorn.Server):
    """uvicorn without signal handlers: the rerun decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@contextlib.asynccontextmanager
async def hosted_service(settings: Settings, store: Store) -> AsyncIterator[Hosted]:
    """Run the services and the listener while the block runs; on leaving, the listener stops
    first and the services drain (the writer's queue, the finalizer's last pass) in order."""
    async with build_services(settings, role="all", store=store) as services:
        collector = services.collector
        if collector is None:
            raise RerunError("the hosted service has no collector")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        app = Starlette(routes=otlp_http_routes(lambda: collector))
        server = _Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():
                    task.result()
                    raise RerunError("the OTLP listener stopped before it started")
                await asyncio.sleep(0.02)
            port = sock.getsockname()[1]
            yield Hosted(services, f"http://127.0.0.1:{port}")
        finally:
            server.should_exit = True
            await asyncio.gather(task, return_exceptions=True)
            sock.close()
