"""Golden sets (per skill, versioned, promoted from production) and paired rerun reports."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from skillsight.api._deps import StoreDep
from skillsight.api.ui._auth import PageProject
from skillsight.api.ui._render import render
from skillsight.errors import SkillsightError
from skillsight.reports import RunNotFound, golden_set, golden_sets, run_report, runs

router = APIRouter(include_in_schema=False)

Skill = Annotated[str, Query(max_length=256)]
Id = Annotated[str, Path(max_length=256)]


@router.get("/goldens")
async def goldens_page(
    request: Request, project: PageProject, store: StoreDep, skill: Skill = ""
) -> Response:
    sets = await asyncio.to_thread(golden_sets, store, project, skill=skill)
    found = await asyncio.to_thread(runs, store, project, skill=skill, limit=100)
    return render(
        request, "goldens.html", title="Golden sets", nav="goldens", sets=sets, runs=found,
        skill=skill,
    )  # fmt: skip


@router.get("/goldens/{set_id}")
async def golden_page(
    request: Request,
    project: PageProject,
    store: StoreDep,
    set_id: Id,
    version: Annotated[int, Query(ge=0)] = 0,
) -> Response:
    try:
        found = await asyncio.to_thread(golden_set, store, project, set_id, version)
    except SkillsightError:
        return render(
            request, "missing.html", status_code=404, title="No such golden set",
            what=f"golden set {set_id}",
        )  # fmt: skip
    return render(
        request, "golden.html", title=f"golden set {found.summary.name}", nav="goldens",
        g=found,
    )  # fmt: skip


@router.get("/runs/{run_id}")
async def run_page(request: Request, project: PageProject, store: StoreDep, run_id: Id) -> Response:
    try:
        report = await asyncio.to_thread(run_report, store, project, run_id)
    except (RunNotFound, SkillsightError):
        return render(
            request, "missing.html", status_code=404, title="No such rerun", what=f"run {run_id}"
        )
    return render(request, "run.html", title=f"rerun {run_id[:12]}", nav="goldens", r=report)
