"""Normalized spans and log events, as stored."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query

from skillsight.api._deps import ProjectId, StoreDep
from skillsight.reports import EventOut, SpanOut, event_out, span_out

router = APIRouter()


@router.get("/api/v1/spans", response_model=list[SpanOut], tags=["spans"])
async def spans(
    project_id: ProjectId,
    store: StoreDep,
    trace_id: Annotated[str, Query(max_length=64)] = "",
    session_id: Annotated[str, Query(max_length=256)] = "",
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[SpanOut]:
    """Normalized spans, oldest first; filter by trace or session."""
    rows = await asyncio.to_thread(
        store.spans.find,
        project_id,
        trace_id=trace_id.lower(),
        session_id=session_id,
        limit=limit,
    )
    return [span_out(r) for r in rows]


@router.get("/api/v1/events", response_model=list[EventOut], tags=["events"])
async def events(
    project_id: ProjectId,
    store: StoreDep,
    session_id: Annotated[str, Query(max_length=256)] = "",
    trace_id: Annotated[str, Query(max_length=64)] = "",
    event_name: Annotated[str, Query(max_length=256)] = "",
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[EventOut]:
    """Normalized log events (Claude Code's skill, tool and API events among them)."""
    rows = await asyncio.to_thread(
        store.events.find,
        project_id,
        session_id=session_id,
        trace_id=trace_id.lower(),
        event_name=event_name,
        limit=limit,
    )
    return [event_out(r) for r in rows]
