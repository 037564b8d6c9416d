"""Failure clusters: the ranked on-call list, one cluster, its lifecycle, and a run on demand."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, Field

from skillsight.api._deps import ProjectId, ServicesDep, StoreDep
from skillsight.clustering import run_clustering, run_options
from skillsight.errors import SkillsightError
from skillsight.evaluators import default_embedder
from skillsight.reports import (
    ClusterDetailOut,
    ClusterNotFound,
    ClusterOut,
    cluster_detail,
    list_clusters,
    set_cluster_status,
)

router = APIRouter()
ClusterIdPath = Annotated[str, Path(max_length=64, description="a cluster id (cl_…)")]


class StatusIn(BaseModel):
    status: Literal["new", "acknowledged", "resolved"]
    assignee: str | None = Field(default=None, max_length=256, description="replaces the owner")
    note: str | None = Field(default=None, max_length=10_000, description="replaces the note")


class ClusterRunOut(BaseModel):
    """What a clustering run did."""

    project_id: str
    run_id: str
    started_at_us: int
    failures: int = Field(description="failing activations in the window")
    clusters: int
    novel: int = Field(description="failures in no cluster (HDBSCAN's noise)")
    new_clusters: int
    kept_share: float = Field(
        description="of the members that had a cluster before and still fail, the share that "
        "kept its cluster id"
    )
    matched: dict[str, int] = Field(description="clusters by how they got their id")
    merged: int
    retired: int
    regressed: int
    dims: int = Field(description="dimensions HDBSCAN clustered (after any PCA)")
    seconds: dict[str, float]


@router.get("/api/v1/clusters", response_model=list[ClusterOut], tags=["clusters"])
async def clusters(
    project_id: ProjectId,
    store: StoreDep,
    status: Annotated[
        list[Literal["new", "acknowledged", "resolved", "regressed"]] | None,
        Query(description="only these statuses (repeat the parameter for several)"),
    ] = None,
    skill: Annotated[str, Query(max_length=256, description="only clusters of this skill")] = "",
    since: Annotated[
        datetime | None, Query(description="last seen at or after (ISO 8601; naive = UTC)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    inactive: Annotated[
        bool, Query(description="also clusters the latest run no longer found")
    ] = False,
) -> list[ClusterOut]:
    """Failure clusters ranked by size, trend and severity (their product), largest first."""
    return await asyncio.to_thread(
        list_clusters,
        store,
        project_id,
        status=status or (),
        skill=skill,
        since=since,
        limit=limit,
        include_inactive=inactive,
    )


@router.get(
    "/api/v1/clusters/{cluster_id}",
    response_model=ClusterDetailOut,
    responses={404: {"description": "no such cluster in this project"}},
    tags=["clusters"],
)
async def cluster(
    project_id: ProjectId,
    store: StoreDep,
    cluster_id: ClusterIdPath,
    limit: Annotated[int, Query(ge=1, le=1000, description="members per page")] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> ClusterDetailOut:
    """One cluster: its facts, a page of member activation ids, evaluators and kinds."""
    try:
        return await asyncio.to_thread(
            cluster_detail, store, project_id, cluster_id, limit=limit, offset=offset
        )
    except ClusterNotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@router.post(
    "/api/v1/clusters/{cluster_id}/status",
    response_model=ClusterOut,
    responses={404: {"description": "no such cluster in this project"}},
    tags=["clusters"],
)
async def cluster_status(
    project_id: ProjectId, store: StoreDep, cluster_id: ClusterIdPath, change: StatusIn
) -> ClusterOut:
    """Acknowledge, resolve or reopen a cluster (regressed is the clusterer's to set)."""
    try:
        return await asyncio.to_thread(
            set_cluster_status,
            store,
            project_id,
            cluster_id,
            change.status,
            assignee=change.assignee,
            note=change.note,
        )
    except ClusterNotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@router.post("/api/v1/clusters/run", response_model=ClusterRunOut, tags=["clusters"])
async def cluster_now(project_id: ProjectId, services: ServicesDep) -> dict[str, Any]:
    """Cluster the project's failures now (after any run in progress) and say what changed."""
    try:
        if services.clusterer is not None:
            summary = await services.clusterer.run_now(project_id)
        else:  # a process without a clusterer (the api role) runs it itself
            summary = await asyncio.to_thread(
                run_clustering,
                services.store,
                project_id,
                embedder=default_embedder(),
                options=run_options(services.settings),
            )
    except SkillsightError as exc:
        raise HTTPException(503, f"the clustering run failed: {exc}") from exc
    return summary.to_dict()
