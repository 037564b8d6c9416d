"""The FastAPI application: REST API, OTLP/HTTP on the same port, health.

:func:`create_app` serves the services it is given (``skillsight serve`` builds them with
:func:`skillsight.runtime.build_services` and shares them with its other listeners). Given none,
it builds them itself for its lifespan from ``settings`` (and an injected ``store``), which is how
tests and embedders run the whole service in one ASGI app.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from skillsight.api._routes import ROUTERS
from skillsight.api.ui import install_ui
from skillsight.config import Settings
from skillsight.ingest.collector import Collector
from skillsight.ingest.receivers import otlp_http_routes
from skillsight.runtime import Services, build_services
from skillsight.store import Store


def create_app(
    services: Services | None = None,
    *,
    settings: Settings | None = None,
    store: Store | None = None,
) -> FastAPI:
    """The app over ``services``; or, given none, over services it builds from ``settings``
    (default: the environment) around ``store`` (default: the one the settings name)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if services is not None:
            app.state.services = services
            yield
            return
        async with build_services(settings or Settings.load(), store=store) as built:
            app.state.services = built
            yield

    app = FastAPI(
        title="skillsight",
        summary="OpenTelemetry ingest and evaluation of agent skills",
        version="0.1.0",
        lifespan=lifespan,
    )
    for router in ROUTERS:
        app.include_router(router)
    install_ui(app)  # the web UI's pages at /, its assets under /ui/static

    def collector() -> Collector | None:
        running: Services | None = getattr(app.state, "services", None)
        return running.collector if running is not None else None

    # OTLP/HTTP is served on the API port too, so one URL is enough for small set-ups.
    app.router.routes.extend(otlp_http_routes(collector))
    return app
