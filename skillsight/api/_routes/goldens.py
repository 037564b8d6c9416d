"""Golden sets, promotion into them, and paired rerun reports."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, Field

from skillsight.api._deps import ProjectId, ServicesDep, StoreDep
from skillsight.errors import GoldenSetError, RerunError
from skillsight.evaluators.judges import JudgeClient, judge_settings
from skillsight.goldens import (
    GoldenCase,
    Promotion,
    import_cases,
    parse_cases,
    promote,
    promote_cluster,
)
from skillsight.reports import (
    GoldenSetOut,
    GoldenSetSummaryOut,
    RunNotFound,
    RunSummaryOut,
    golden_set,
    golden_sets,
    run_report,
    runs,
)
from skillsight.reruns import RerunReport

router = APIRouter()

SetId = Annotated[str, Path(max_length=64)]


class PromotionOut(BaseModel):
    set_id: str
    version: int
    added: list[GoldenCase]
    skipped: list[str] = Field(description="activations already promoted into the set")


class PromoteIn(BaseModel):
    activation_ids: list[str] = Field(min_length=1, max_length=1000)
    set_id: str = Field(default="", max_length=64)
    skill: str = Field(default="", max_length=256)


class ClusterPromoteIn(BaseModel):
    set_id: str = Field(default="", max_length=64)
    skill: str = Field(default="", max_length=256)
    limit: int = Field(default=10, ge=1, le=1000)


class GoldenSetIn(BaseModel):
    """Cases to store: a new set, or the next version of ``set_id``; or promoted activations."""

    document: dict[str, object] | list[dict[str, object]] | None = Field(
        default=None,
        description="an evals.json (BenchFlow/ACES or skill-creator) or trigger evals",
    )
    format: Literal["", "aces", "skill-creator", "trigger"] = ""
    skill: str = Field(default="", max_length=256)
    set_id: str = Field(default="", max_length=64)
    note: str = Field(default="", max_length=2000)
    activation_ids: list[str] = Field(default_factory=list, max_length=1000)


def _judge(services: ServicesDep) -> JudgeClient | None:
    """The judge model that drafts expected behaviour, when one is configured."""
    settings = services.settings
    return JudgeClient(judge_settings(settings)) if settings.judge_model else None


def _promoted(done: Promotion) -> PromotionOut:
    return PromotionOut(
        set_id=done.golden.set_id,
        version=done.golden.version,
        added=done.added,
        skipped=done.skipped,
    )


@router.get("/api/v1/golden-sets", response_model=list[GoldenSetSummaryOut], tags=["goldens"])
async def list_golden_sets(
    project_id: ProjectId,
    store: StoreDep,
    skill: Annotated[str, Query(max_length=256, description="only this skill's sets")] = "",
) -> list[GoldenSetSummaryOut]:
    """Golden sets (each at its newest version) with their composition: the share of cases
    that passed in production (the seed advises 60-70%)."""
    return await asyncio.to_thread(golden_sets, store, project_id, skill=skill)


@router.post(
    "/api/v1/golden-sets",
    response_model=GoldenSetSummaryOut | PromotionOut,
    status_code=201,
    responses={400: {"description": "malformed cases, or an unknown set or activation"}},
    tags=["goldens"],
)
async def create_golden_set(
    project_id: ProjectId, store: StoreDep, services: ServicesDep, body: GoldenSetIn
) -> GoldenSetSummaryOut | PromotionOut:
    """Store cases: import an evals.json document as a new set (or the next version of
    ``set_id``), or promote ``activation_ids`` into the skill's set."""
    try:
        if body.activation_ids:
            done = await asyncio.to_thread(
                promote, store, project_id, body.activation_ids, set_id=body.set_id,
                skill=body.skill, judge=_judge(services),
            )  # fmt: skip
            return _promoted(done)
        if body.document is None:
            raise GoldenSetError("send a 'document' (evals.json) or 'activation_ids'")
        imported = parse_cases(body.document, skill=body.skill, fmt=body.format)
        golden = await asyncio.to_thread(
            import_cases, store, project_id, imported, set_id=body.set_id, note=body.note
        )
        shown = await asyncio.to_thread(golden_set, store, project_id, golden.set_id)
    except GoldenSetError as exc:
        raise HTTPException(400, str(exc)) from exc
    return shown.summary


@router.get(
    "/api/v1/golden-sets/{set_id}",
    response_model=GoldenSetOut,
    responses={404: {"description": "no such set (or version) in this project"}},
    tags=["goldens"],
)
async def get_golden_set(
    project_id: ProjectId,
    store: StoreDep,
    set_id: SetId,
    version: Annotated[int, Query(ge=0, description="this version; 0 = the newest")] = 0,
) -> GoldenSetOut:
    """One version of a golden set with its cases, composition and version list."""
    try:
        return await asyncio.to_thread(golden_set, store, project_id, set_id, version)
    except GoldenSetError as exc:
        raise HTTPException(404, str(exc)) from exc


@router.post(
    "/api/v1/clusters/{cluster_id}/promote",
    response_model=PromotionOut,
    status_code=201,
    responses={404: {"description": "no such cluster, or no member to promote"}},
    tags=["goldens"],
)
async def promote_a_cluster(
    project_id: ProjectId,
    store: StoreDep,
    services: ServicesDep,
    cluster_id: Annotated[str, Path(max_length=64)],
    body: ClusterPromoteIn | None = None,
) -> PromotionOut:
    """Promote a failure cluster (its exemplars first, then its latest members, up to
    ``limit``) into the skill's golden set, drafting a case from each."""
    options = body or ClusterPromoteIn()
    try:
        done = await asyncio.to_thread(
            promote_cluster, store, project_id, cluster_id, set_id=options.set_id,
            skill=options.skill, limit=options.limit, judge=_judge(services),
        )  # fmt: skip
    except GoldenSetError as exc:
        raise HTTPException(404, str(exc)) from exc
    return _promoted(done)


@router.get("/api/v1/runs", response_model=list[RunSummaryOut], tags=["goldens"])
async def list_runs(
    project_id: ProjectId,
    store: StoreDep,
    skill: Annotated[str, Query(max_length=256)] = "",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[RunSummaryOut]:
    """Paired reruns, newest first."""
    return await asyncio.to_thread(runs, store, project_id, skill=skill, limit=limit)


@router.get(
    "/api/v1/runs/{run_id}",
    response_model=RerunReport,
    responses={404: {"description": "no such run in this project"}},
    tags=["goldens"],
)
async def get_run(
    project_id: ProjectId, store: StoreDep, run_id: Annotated[str, Path(max_length=128)]
) -> RerunReport:
    """A paired rerun's report: Skill Lift per metric with its normal and bootstrap 95%
    intervals, pass@k, utility, security, cost, triggering, flips, the evidence inventory and
    every attempt with its sessions and activations."""
    try:
        return await asyncio.to_thread(run_report, store, project_id, run_id)
    except (RunNotFound, RerunError, GoldenSetError) as exc:
        raise HTTPException(404, str(exc)) from exc
