"""The home page (failure clusters, ranked) and a cluster's page; status changes and promotion
to a golden set as form posts."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from skillsight.api._deps import StoreDep
from skillsight.api.ui._auth import PageProject, SameSite, form_of, safe_next
from skillsight.api.ui._charts import bars, sparkline
from skillsight.api.ui._pages_activity import PAGE, PageNo, since_of
from skillsight.api.ui._render import render
from skillsight.api.ui._timeline import timeline
from skillsight.errors import SkillsightError
from skillsight.goldens import promote_cluster
from skillsight.reports import (
    ClusterNotFound,
    cluster_detail,
    list_clusters,
    set_cluster_status,
    with_evaluations,
)
from skillsight.store import Store

router = APIRouter(include_in_schema=False)

OPEN = ("new", "acknowledged", "regressed")
STATUS_CHOICES = ("open", "new", "acknowledged", "regressed", "resolved", "all")
EXEMPLARS_SHOWN = 2
MEMBERS_PER_PAGE = 25
ClusterId = Annotated[str, Path(max_length=128)]


def _statuses(choice: str) -> tuple[str, ...]:
    if choice == "open":
        return OPEN
    return () if choice == "all" else (choice,)


def _daily_series(store: Store, project: str) -> dict[str, list[int]]:
    """Per cluster, members per day over the window (one read of the clusters table)."""
    return {row["cluster_id"]: list(row["daily"]) for row in store.clusters.get(project)}


@router.get("/")
async def clusters_page(
    request: Request,
    project: PageProject,
    store: StoreDep,
    status: Annotated[str, Query(pattern="^(open|new|acknowledged|regressed|resolved|all)$")] = (
        "open"
    ),
    skill: Annotated[str, Query(max_length=256)] = "",
    window: Annotated[str, Query(max_length=16)] = "14d",
    page: PageNo = 1,
) -> Response:
    since = since_of(window)
    found = await asyncio.to_thread(
        list_clusters,
        store,
        project,
        status=_statuses(status),
        skill=skill,
        since=since,
        limit=page * PAGE + 1,
    )
    shown = found[(page - 1) * PAGE : page * PAGE]
    daily = await asyncio.to_thread(_daily_series, store, project) if shown else {}
    sparks = {
        c.cluster_id: sparkline(
            daily.get(c.cluster_id, []) or [0], label=f"members per day: {c.label}"
        )
        for c in shown
    }
    run = await asyncio.to_thread(store.clusters.latest_run, project)
    return render(
        request,
        "clusters.html",
        title="Failure clusters",
        nav="clusters",
        clusters=shown,
        sparks=sparks,
        status=status,
        statuses=STATUS_CHOICES,
        skill=skill,
        window=window,
        page=page,
        more=len(found) > page * PAGE,
        clustered=run is not None,
    )


def _hours(count: int) -> list[str]:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    return [(now - timedelta(hours=count - 1 - i)).strftime("%H:00") for i in range(count)]


def _days(count: int) -> list[str]:
    today = datetime.now(UTC).date()
    return [(today - timedelta(days=count - 1 - i)).isoformat() for i in range(count)]


@router.get("/clusters/{cluster_id}")
async def cluster_page(
    request: Request,
    project: PageProject,
    store: StoreDep,
    cluster_id: ClusterId,
    page: PageNo = 1,
) -> Response:
    try:
        cluster = await asyncio.to_thread(
            cluster_detail,
            store,
            project,
            cluster_id,
            limit=MEMBERS_PER_PAGE + 1,
            offset=(page - 1) * MEMBERS_PER_PAGE,
        )
    except ClusterNotFound:
        return render(
            request, "missing.html", status_code=404, title="No such cluster",
            what=f"cluster {cluster_id}",
        )  # fmt: skip
    found = []
    for activation_id in cluster.exemplar_activation_ids[:EXEMPLARS_SHOWN]:
        activation = await asyncio.to_thread(store.activations.get, project, activation_id)
        if activation is not None:
            found.append(activation)
    exemplars = await asyncio.to_thread(with_evaluations, store, project, found)
    return render(
        request,
        "cluster.html",
        title=cluster.label,
        nav="clusters",
        c=cluster,
        members=cluster.members[:MEMBERS_PER_PAGE],
        more=len(cluster.members) > MEMBERS_PER_PAGE,
        page=page,
        exemplars=[(a, timeline(a)) for a in exemplars],
        hourly=bars(cluster.hourly, _hours(len(cluster.hourly)), title="members per hour, 48 h"),
        daily=bars(cluster.daily, _days(len(cluster.daily)), title="members per day", every=2),
        promoted=request.query_params.get("promoted", ""),
    )


def _back(request: Request, form: dict[str, str], default: str) -> str:
    return safe_next(form.get("next", "") or default)


@router.post("/clusters/{cluster_id}/status", dependencies=[SameSite])
async def change_status(
    request: Request, project: PageProject, store: StoreDep, cluster_id: ClusterId
) -> Response:
    """Acknowledge, resolve or reopen a cluster, and (re)assign it; answers JSON to the page's
    script, or sends a form post back where it came from."""
    form = await form_of(request)
    status = form.get("status", "")
    assignee = form.get("assignee")
    note = form.get("note")
    try:
        changed = await asyncio.to_thread(
            set_cluster_status,
            store,
            project,
            cluster_id,
            status,
            assignee=assignee.strip() if assignee is not None else None,
            note=note if note else None,
        )
    except ClusterNotFound as exc:
        return JSONResponse({"detail": str(exc)}, status_code=404)
    except SkillsightError as exc:
        return JSONResponse({"detail": str(exc)}, status_code=400)
    if "application/json" in request.headers.get("accept", ""):
        body: dict[str, Any] = {"cluster_id": cluster_id, "status": changed.status}
        body["assignee"] = changed.assignee
        return JSONResponse(body)
    return RedirectResponse(_back(request, form, f"/clusters/{cluster_id}"), status_code=303)


@router.post("/clusters/{cluster_id}/promote", dependencies=[SameSite])
async def promote(
    request: Request, project: PageProject, store: StoreDep, cluster_id: ClusterId
) -> Response:
    """Draft golden cases from the cluster's exemplars and latest members."""
    try:
        done = await asyncio.to_thread(promote_cluster, store, project, cluster_id)
    except SkillsightError as exc:
        return JSONResponse({"detail": str(exc)}, status_code=400)
    target = f"/clusters/{cluster_id}?promoted={done.golden.set_id}:{len(done.added)}"
    return RedirectResponse(target, status_code=303)
