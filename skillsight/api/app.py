"""The FastAPI application: REST API, OTLP/HTTP routes, health.

:func:`create_app` takes its collaborators (settings, store, collector) so tests and the server
inject them; whatever it is not given it creates and owns for the app's lifespan.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request, Response

from skillsight.api.evaluation_models import ActivationDetailOut
from skillsight.api.evaluations import evaluation_router, wire_scheduler, with_evaluations
from skillsight.api.models import (
    EventOut,
    SkillOut,
    SpanOut,
    event_out,
    span_out,
)
from skillsight.collector.receivers import otlp_http_routes
from skillsight.collector.service import Collector
from skillsight.collector.store import Store, open_store
from skillsight.collector.tenancy import Unauthenticated, project_for
from skillsight.config import Settings
from skillsight.evaluators.scheduler import EvaluationScheduler


def _project(request: Request) -> str:
    """The caller's project, from its API key (``default`` when no keys are configured)."""
    settings: Settings = request.app.state.settings
    try:
        return project_for(settings.api_keys, request.headers)
    except Unauthenticated as exc:
        raise HTTPException(401, str(exc)) from exc


ProjectId = Annotated[str, Depends(_project)]


class _Holder:
    """The app's collaborators, set when its lifespan starts."""

    store: Store
    collector: Collector
    scheduler: EvaluationScheduler | None = None


def create_app(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    collector: Collector | None = None,
    scheduler: EvaluationScheduler | None = None,
) -> FastAPI:
    """Build the app. Given no store/collector, it opens and owns them for its lifespan
    (and, when evaluation is enabled, an evaluation scheduler fed by the collector's
    finalizer); a given collector comes with the ``scheduler`` its owner wired to it."""
    settings = settings or Settings.load()
    holder = _Holder()
    holder.scheduler = scheduler

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if collector is not None:
                holder.collector = collector
                holder.store = collector.store
            else:
                if store is None:
                    holder.store = await asyncio.to_thread(open_store, settings)
                    stack.callback(holder.store.close)
                else:
                    holder.store = store
                owned = Collector(holder.store, settings)
                holder.scheduler = await wire_scheduler(stack, holder.store, settings, owned)
                holder.collector = await stack.enter_async_context(owned)
            yield

    app = FastAPI(
        title="skillsight",
        summary="OpenTelemetry ingest and evaluation of agent skills",
        version="0.1.0",
        lifespan=lifespan,
    )

    app.state.settings = settings

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, object]:
        """Liveness and the write path's state (queue fill, rows written, last store error)."""
        ok = await asyncio.to_thread(holder.store.ping)
        evaluation = holder.scheduler.health() if holder.scheduler else {"enabled": False}
        return {"ok": ok, **holder.collector.health(), "evaluation": evaluation}

    @app.get("/api/v1/stats", tags=["service"])
    async def stats(project_id: ProjectId) -> dict[str, dict[str, int]]:
        """Rows stored for the project: physical rows and distinct spans / events."""
        spans_count = await asyncio.to_thread(holder.store.count_spans, project_id)
        events_count = await asyncio.to_thread(holder.store.count_events, project_id)
        return {"spans": spans_count, "events": events_count}

    @app.get("/api/v1/spans", response_model=list[SpanOut], tags=["spans"])
    async def spans(
        project_id: ProjectId,
        trace_id: Annotated[str, Query(max_length=64)] = "",
        session_id: Annotated[str, Query(max_length=256)] = "",
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    ) -> list[SpanOut]:
        """Normalized spans, oldest first; filter by trace or session."""
        rows = await asyncio.to_thread(
            holder.store.list_spans,
            project_id,
            trace_id=trace_id.lower(),
            session_id=session_id,
            limit=limit,
        )
        return [span_out(r) for r in rows]

    @app.get("/api/v1/events", response_model=list[EventOut], tags=["events"])
    async def events(
        project_id: ProjectId,
        session_id: Annotated[str, Query(max_length=256)] = "",
        trace_id: Annotated[str, Query(max_length=64)] = "",
        event_name: Annotated[str, Query(max_length=256)] = "",
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    ) -> list[EventOut]:
        """Normalized log events (Claude Code's skill, tool and API events among them)."""
        rows = await asyncio.to_thread(
            holder.store.list_events,
            project_id,
            session_id=session_id,
            trace_id=trace_id.lower(),
            event_name=event_name,
            limit=limit,
        )
        return [event_out(r) for r in rows]

    @app.get("/api/v1/skills", response_model=list[SkillOut], tags=["skills"])
    async def skills(
        project_id: ProjectId,
        name: Annotated[str, Query(max_length=256)] = "",
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    ) -> list[SkillOut]:
        """The project's skill catalogue: every recorded version, newest scan first per skill."""
        rows = await asyncio.to_thread(holder.store.list_skills, project_id, name, limit=limit)
        return [SkillOut(**row) for row in rows]

    @app.get(
        "/api/v1/activations",
        response_model=list[ActivationDetailOut],
        response_model_exclude_unset=True,
        tags=["activations"],
    )
    async def activations(
        project_id: ProjectId,
        skill: Annotated[str, Query(max_length=256, description="only this skill")] = "",
        session_id: Annotated[str, Query(max_length=256)] = "",
        since: Annotated[
            datetime | None, Query(description="started at or after (ISO 8601; naive = UTC)")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[ActivationDetailOut]:
        """Skill activations rebuilt from completed sessions, newest first, with their
        evaluations."""
        found = await asyncio.to_thread(
            holder.store.list_activations,
            project_id,
            skill=skill,
            session_id=session_id,
            since=since,
            limit=limit,
        )
        return await asyncio.to_thread(with_evaluations, holder.store, project_id, found)

    @app.get(
        "/api/v1/activations/{activation_id}",
        response_model=ActivationDetailOut,
        response_model_exclude_unset=True,
        responses={404: {"description": "no such activation in this project"}},
        tags=["activations"],
    )
    async def activation(
        project_id: ProjectId, activation_id: Annotated[str, Path(max_length=256)]
    ) -> ActivationDetailOut:
        """One skill activation by id, with its evaluations (also as OTel GenAI evaluation
        events)."""
        found = await asyncio.to_thread(holder.store.get_activation, project_id, activation_id)
        if found is None:
            raise HTTPException(404, f"no activation {activation_id!r} in this project")
        detail = await asyncio.to_thread(with_evaluations, holder.store, project_id, [found])
        return detail[0]

    app.include_router(evaluation_router(lambda: holder.store, _project))

    @app.get(
        "/api/v1/trajectories/{session_id}",
        responses={
            200: {
                "description": "the session's ATIF-v1.7 document",
                "content": {"application/json": {}},
            },
            404: {"description": "no rebuilt trajectory for this session in this project"},
        },
        tags=["trajectories"],
    )
    async def trajectory(
        project_id: ProjectId, session_id: Annotated[str, Path(max_length=256)]
    ) -> Response:
        """A session's trajectory in ATIF-v1.7, as stored at its latest rebuild."""
        document = await asyncio.to_thread(holder.store.get_trajectory, project_id, session_id)
        if document is None:
            raise HTTPException(404, f"no trajectory for session {session_id!r} in this project")
        return Response(document, media_type="application/json")

    # OTLP/HTTP is served on the API port too, so one URL is enough for small set-ups.
    for route in otlp_http_routes(_CollectorProxy(holder)):  # type: ignore[arg-type]
        app.router.routes.append(route)
    return app


class _CollectorProxy:
    """Lets routes be built before the lifespan has made the collector."""

    def __init__(self, holder: _Holder) -> None:
        self._holder = holder

    def __getattr__(self, name: str) -> object:
        return getattr(self._holder.collector, name)
