"""Skill activations with their evaluations, and session trajectories in ATIF."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Response

from skillsight.api._deps import ProjectId, StoreDep
from skillsight.reports import ActivationDetailOut, with_evaluations

router = APIRouter()


@router.get(
    "/api/v1/activations",
    response_model=list[ActivationDetailOut],
    response_model_exclude_unset=True,
    tags=["activations"],
)
async def activations(
    project_id: ProjectId,
    store: StoreDep,
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
        store.activations.find,
        project_id,
        skill=skill,
        session_id=session_id,
        since=since,
        limit=limit,
    )
    return await asyncio.to_thread(with_evaluations, store, project_id, found)


@router.get(
    "/api/v1/activations/{activation_id}",
    response_model=ActivationDetailOut,
    response_model_exclude_unset=True,
    responses={404: {"description": "no such activation in this project"}},
    tags=["activations"],
)
async def activation(
    project_id: ProjectId, store: StoreDep, activation_id: Annotated[str, Path(max_length=256)]
) -> ActivationDetailOut:
    """One skill activation by id, with its evaluations (also as OTel GenAI evaluation
    events)."""
    found = await asyncio.to_thread(store.activations.get, project_id, activation_id)
    if found is None:
        raise HTTPException(404, f"no activation {activation_id!r} in this project")
    detail = await asyncio.to_thread(with_evaluations, store, project_id, [found])
    return detail[0]


@router.get(
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
    project_id: ProjectId, store: StoreDep, session_id: Annotated[str, Path(max_length=256)]
) -> Response:
    """A session's trajectory in ATIF-v1.7, as stored at its latest rebuild."""
    document = await asyncio.to_thread(store.trajectories.get, project_id, session_id)
    if document is None:
        raise HTTPException(404, f"no trajectory for session {session_id!r} in this project")
    return Response(document, media_type="application/json")
