"""Activation, session and raw-span pages, and the activations list."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import Response

from skillsight.api._deps import StoreDep
from skillsight.api.ui._auth import PageProject
from skillsight.api.ui._render import render
from skillsight.api.ui._timeline import timeline
from skillsight.errors import SkillsightError
from skillsight.reports import (
    DEFAULT_WINDOW,
    event_out,
    session_steps,
    span_out,
    window_start,
    with_evaluations,
)

router = APIRouter(include_in_schema=False)

PAGE = 50
STEPS_PER_PAGE = 100
SPANS_SHOWN = 2000

Id = Annotated[str, Path(max_length=256)]
PageNo = Annotated[int, Query(ge=1, le=100_000)]


def since_of(window: str) -> datetime | None:
    try:
        return window_start(window)
    except SkillsightError as exc:
        raise HTTPException(400, str(exc)) from exc


@router.get("/activations")
async def activations_page(
    request: Request,
    project: PageProject,
    store: StoreDep,
    skill: Annotated[str, Query(max_length=256)] = "",
    session: Annotated[str, Query(max_length=256)] = "",
    window: Annotated[str, Query(max_length=16)] = DEFAULT_WINDOW,
    page: PageNo = 1,
) -> Response:
    since = since_of(window)
    found = await asyncio.to_thread(
        store.activations.find,
        project,
        skill=skill,
        session_id=session,
        since=since,
        limit=PAGE + 1,
        offset=(page - 1) * PAGE,
    )
    rows = await asyncio.to_thread(with_evaluations, store, project, found[:PAGE])
    return render(
        request,
        "activations.html",
        title="Activations",
        nav="activations",
        rows=rows,
        skill=skill,
        session=session,
        window=window,
        page=page,
        more=len(found) > PAGE,
    )


@router.get("/activations/{activation_id}")
async def activation_page(
    request: Request, project: PageProject, store: StoreDep, activation_id: Id
) -> Response:
    found = await asyncio.to_thread(store.activations.get, project, activation_id)
    if found is None:
        return render(
            request,
            "missing.html",
            status_code=404,
            title="No such activation",
            what=f"activation {activation_id}",
        )
    (detail,) = await asyncio.to_thread(with_evaluations, store, project, [found])
    return render(
        request,
        "activation.html",
        title=f"{detail.skill_name} · activation {activation_id[:8]}",
        nav="activations",
        a=detail,
        tl=timeline(detail),
    )


@router.get("/sessions/{session_id}")
async def session_page(
    request: Request,
    project: PageProject,
    store: StoreDep,
    session_id: Id,
    trajectory: Annotated[str, Query(max_length=256)] = "",
    page: PageNo | None = None,
    step: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    if page is None:
        page = (step - 1) // STEPS_PER_PAGE + 1 if step else 1
    steps = await asyncio.to_thread(
        session_steps,
        store,
        project,
        session_id,
        offset=(page - 1) * STEPS_PER_PAGE,
        limit=STEPS_PER_PAGE,
        trajectory_id=trajectory,
    )
    if steps is None:
        return render(
            request,
            "missing.html",
            status_code=404,
            title="No such session",
            what=f"a rebuilt trajectory for session {session_id}",
        )
    found = await asyncio.to_thread(
        store.activations.find, project, session_id=session_id, limit=200
    )
    activations = await asyncio.to_thread(with_evaluations, store, project, found)
    marks: dict[int, list[str]] = {}
    for a in activations:
        if (a.trajectory_id or steps.trajectory_id) != steps.trajectory_id and trajectory:
            continue
        if a.trigger_step_id is not None:
            marks.setdefault(a.trigger_step_id, []).append(a.activation_id)
    pages = max((steps.total_steps + STEPS_PER_PAGE - 1) // STEPS_PER_PAGE, 1)
    return render(
        request,
        "session.html",
        title=f"session {session_id[:12]}",
        nav="activations",
        s=steps,
        session_id=session_id,
        trajectory=trajectory,
        activations=activations,
        marks=marks,
        page=page,
        pages=pages,
        per_page=STEPS_PER_PAGE,
        open_step=step,
    )


@router.get("/sessions/{session_id}/atif.json")
async def session_atif(project: PageProject, store: StoreDep, session_id: Id) -> Response:
    document = await asyncio.to_thread(store.trajectories.get, project, session_id)
    if document is None:
        raise HTTPException(404, f"no trajectory for session {session_id!r}")
    return Response(
        document,
        media_type="application/json",
        headers={"content-disposition": f'inline; filename="{session_id[:64]}.atif.json"'},
    )


@router.get("/traces/{trace_id}")
async def trace_page(
    request: Request,
    project: PageProject,
    store: StoreDep,
    trace_id: Annotated[str, Path(max_length=64)],
    session: Annotated[str, Query(max_length=256)] = "",
) -> Response:
    rows = await asyncio.to_thread(
        store.spans.find, project, trace_id=trace_id.lower(), limit=SPANS_SHOWN + 1
    )
    events = []
    if session:
        found = await asyncio.to_thread(
            store.events.find, project, session_id=session, limit=SPANS_SHOWN + 1
        )
        events = [event_out(e) for e in found[:SPANS_SHOWN]]
    spans = [span_out(r) for r in rows[:SPANS_SHOWN]]
    depth: dict[str, int] = {}
    for span in spans:
        depth[span.span_id] = depth.get(span.parent_span_id, -1) + 1
    return render(
        request,
        "trace.html",
        title=f"trace {trace_id[:12]}",
        nav="activations",
        trace_id=trace_id,
        session=session,
        spans=spans,
        events=events,
        depth=depth,
        cut=len(rows) > SPANS_SHOWN,
        limit=SPANS_SHOWN,
    )
