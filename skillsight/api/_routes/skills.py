"""The skill catalogue, skill scorecards and the gate's list of low scores."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from skillsight.api._deps import ProjectId, StoreDep
from skillsight.errors import SkillsightError
from skillsight.reports import (
    DEFAULT_WINDOW,
    ScorecardOut,
    ScoredActivationOut,
    SkillOut,
    scorecard,
    scored_activation,
    window_start,
)

router = APIRouter()

SkillName = Annotated[str, Path(max_length=256)]
Window = Annotated[
    str,
    Query(max_length=16, description="activations started within this span: 24h, 7d, 4w, or all"),
]
Version = Annotated[str, Query(max_length=128, description="only this skill version")]
Since = Annotated[
    datetime | None,
    Query(description="activations started at or after (ISO 8601; naive = UTC); overrides window"),
]


def _since(window: str, since: datetime | None) -> datetime | None:
    if since is not None:
        return since
    try:
        return window_start(window)
    except SkillsightError as exc:
        raise HTTPException(400, str(exc)) from exc


@router.get("/api/v1/skills", response_model=list[SkillOut], tags=["skills"])
async def skills(
    project_id: ProjectId,
    store: StoreDep,
    name: Annotated[str, Query(max_length=256)] = "",
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[SkillOut]:
    """The project's skill catalogue: every recorded version, newest scan first per skill."""
    rows = await asyncio.to_thread(store.skills.find, project_id, name, limit=limit)
    return [SkillOut.model_validate(row) for row in rows]


@router.get(
    "/api/v1/skills/{name}/scorecard",
    response_model=ScorecardOut,
    responses={400: {"description": "a malformed window"}},
    tags=["evaluations"],
)
async def skill_scorecard(
    project_id: ProjectId,
    store: StoreDep,
    name: SkillName,
    window: Window = DEFAULT_WINDOW,
    version: Version = "",
    since: Since = None,
) -> ScorecardOut:
    """A skill's evaluations: activation count, pass rate and mean score per evaluator,
    overall and per skill version, with a per-day trend."""
    start = _since(window, since)
    return await asyncio.to_thread(
        scorecard,
        store,
        project_id,
        name,
        window="since" if since is not None else window,
        since=start,
        version=version,
    )


@router.get(
    "/api/v1/skills/{name}/evaluations",
    response_model=list[ScoredActivationOut],
    responses={400: {"description": "a malformed window"}},
    tags=["evaluations"],
)
async def skill_evaluations(
    project_id: ProjectId,
    store: StoreDep,
    name: SkillName,
    below: Annotated[
        float, Query(ge=0, le=1.000001, description="scores strictly under this")
    ] = 1.0,
    evaluator: Annotated[str, Query(max_length=128)] = "",
    window: Window = DEFAULT_WINDOW,
    version: Version = "",
    since: Since = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> list[ScoredActivationOut]:
    """The skill's current evaluations scoring under ``below`` (what ``skillsight gate``
    prints), with their cited steps and findings, newest activation first."""
    start = _since(window, since)
    rows = await asyncio.to_thread(
        store.scorecards.below,
        project_id,
        name,
        below,
        evaluator=evaluator,
        version=version,
        since=start,
        limit=limit,
    )
    return [scored_activation(r) for r in rows]
