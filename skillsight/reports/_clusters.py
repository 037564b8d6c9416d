"""Failure clusters as the on-call list, the cluster page and the activation page show them.

The facts come from the project's latest clustering run (its ``clusters`` rows), with what
online assignment added since counted on top (the members that joined between runs), the
status from the lifecycle log, and the trend computed against now. Ranked by size times trend times
severity weight, largest first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from skillsight.clustering import (
    HOUR_US,
    HOURS,
    OPEN,
    ClusterState,
    Trend,
    bucket_counts,
    rank_score,
    set_status,
    trend_of,
)
from skillsight.errors import SkillsightError
from skillsight.reports._records import ClusterRefOut, Status

if TYPE_CHECKING:  # the store is loaded by whoever hands one in
    from skillsight.store import ClusterRow, OnlineCounts, StatusRow, Store


class ClusterNotFound(SkillsightError):
    """No cluster with that id in the project."""


class ClusterTrendOut(BaseModel):
    direction: str = Field(description="new, rising, steady, falling or quiet")
    last_24h: int = Field(description="members that started in the last 24 hours")
    previous_24h: int = Field(description="members that started in the 24 hours before")
    per_hour: float = Field(description="last_24h / 24")
    ratio: float = Field(description="(last_24h + 1) / (previous_24h + 1)")


class ClusterOut(BaseModel):
    """One failure cluster, as the on-call list shows it."""

    cluster_id: str = Field(description="stable across runs")
    label: str = Field(description="dominant evaluator · finding kind · c-TF-IDF terms · skill")
    status: Status
    severity: str = Field(description="critical (security), high, medium or low")
    size: int = Field(description="members: failing activations in the window")
    sessions: int
    skills: list[str]
    versions: list[str] = Field(description="skill versions affected, the earliest first")
    first_bad_version: str = Field(description="the version of the earliest member")
    first_seen: str = Field(description="ISO 8601, UTC: the earliest member's start")
    last_seen: str
    trend: ClusterTrendOut
    exemplar_activation_ids: list[str] = Field(description="medoids: the most typical members")
    evaluator: str = Field(description="the dominant failing evaluator")
    kind: str = Field(description="its dominant finding kind")
    terms: list[str]
    assignee: str = ""
    note: str = ""
    active: bool = Field(description="false once a run no longer finds it (the id stays valid)")
    split_from: str = ""
    merged_into: str = ""
    rank: float = Field(description="size times trend times severity weight: what orders the list")
    run_id: str


class ClusterMemberOut(BaseModel):
    activation_id: str
    session_id: str
    skill_name: str
    skill_version: str
    started_at: str
    assigned_by: str = Field(description="run, or online (joined between runs)")
    distance: float = Field(description="cosine distance to the cluster (centre or exemplar)")


class ClusterAdviceOut(BaseModel):
    """A judge model's advice on the cluster (when one is configured)."""

    label: str = Field(description="the pattern in a sentence")
    fix: str
    layer: str = Field(
        description="skill_description, skill_body, allowed_tools, agent_prompt or integration"
    )
    cited_activation: str = Field(description="the exemplar the citation is from")
    cited_steps: list[int] = Field(description="steps of that exemplar (only existing ones)")
    model: str
    error: str = Field(description="why there is no advice, when the call failed")
    created_at: str


class ClusterDetailOut(ClusterOut):
    """A cluster with a page of its members and what fails in them."""

    members: list[ClusterMemberOut]
    evaluators: dict[str, int] = Field(description="members per failing evaluator")
    kinds: dict[str, int] = Field(description="members per evaluator:finding kind")
    hourly: list[int] = Field(description="members per hour over the last 48 hours, oldest first")
    daily: list[int] = Field(description="members per day over the window, oldest first")
    suggested_fix: str | None = Field(
        default=None, description="the judge model's fix; null without one (or before it ran)"
    )
    advice: ClusterAdviceOut | None = None


def list_clusters(
    store: Store,
    project_id: str,
    *,
    status: Sequence[str] = (),
    skill: str = "",
    since: datetime | None = None,
    limit: int = 50,
    include_inactive: bool = False,
    now_us: int | None = None,
) -> list[ClusterOut]:
    """The project's clusters, ranked (largest rank first), filtered by status, skill and
    last seen."""
    now = now_us if now_us is not None else time.time_ns() // 1000
    run = store.clusters.latest_run(project_id)
    if run is None:
        return []
    rows = store.clusters.get(project_id)
    statuses = store.clusters.statuses(project_id)
    online = store.clusters.online(project_id, run)
    since_us = int(since.timestamp() * 1_000_000) if since else 0
    out = []
    for row in rows:
        if not (row["active"] or include_inactive or row["cluster_id"] in online):
            continue
        cluster = _cluster_out(
            row, statuses.get(row["cluster_id"]), online.get(row["cluster_id"]), now
        )
        if status and cluster.status not in status:
            continue
        if skill and skill not in cluster.skills:
            continue
        if since_us and _us(cluster.last_seen) < since_us:
            continue
        out.append(cluster)
    out.sort(key=lambda c: (-c.rank, c.cluster_id))
    return out[:limit]


def cluster_detail(
    store: Store,
    project_id: str,
    cluster_id: str,
    *,
    limit: int = 50,
    offset: int = 0,
    now_us: int | None = None,
) -> ClusterDetailOut:
    """One cluster with a page of its current members, the latest started first."""
    now = now_us if now_us is not None else time.time_ns() // 1000
    found = store.clusters.get(project_id, [cluster_id])
    if not found:
        raise ClusterNotFound(f"no cluster {cluster_id!r} in this project")
    row = found[0]
    run = store.clusters.latest_run(project_id)
    online = store.clusters.online(project_id, run).get(cluster_id)
    status = store.clusters.statuses(project_id, [cluster_id]).get(cluster_id)
    cluster = _cluster_out(row, status, online, now)
    members = store.clusters.members(project_id, cluster_id, run, limit=limit, offset=offset)
    advice = store.clusters.advice(project_id, [cluster_id]).get(cluster_id)
    advised = (
        ClusterAdviceOut(
            label=advice["label"],
            fix=advice["fix"],
            layer=advice["layer"],
            cited_activation=advice["cited_activation"],
            model=advice["model"],
            error=advice["error"],
            cited_steps=list(advice["cited_steps"]),
            created_at=iso_us(advice["created_at"]),
        )
        if advice
        else None
    )
    return ClusterDetailOut(
        **cluster.model_dump(),
        members=[
            ClusterMemberOut(
                activation_id=m["activation_id"],
                session_id=m["session_id"],
                skill_name=m["skill_name"],
                skill_version=m["skill_version"],
                started_at=iso_us(m["started_at"]),
                assigned_by=m["assigned_by"],
                distance=round(float(m["distance"]), 4),
            )
            for m in members
        ],
        evaluators=json.loads(row["evaluators"] or "{}"),
        kinds=json.loads(row["kinds"] or "{}"),
        hourly=_hourly(row, online, now),
        daily=list(row["daily"]),
        suggested_fix=advised.fix if advised and advised.fix else None,
        advice=advised,
    )


def set_cluster_status(
    store: Store,
    project_id: str,
    cluster_id: str,
    status: str,
    *,
    assignee: str | None = None,
    note: str | None = None,
    now_us: int | None = None,
) -> ClusterOut:
    """A person moves a cluster to ``new``, ``acknowledged`` or ``resolved``."""
    now = now_us if now_us is not None else time.time_ns() // 1000
    found = store.clusters.get(project_id, [cluster_id])
    if not found:
        raise ClusterNotFound(f"no cluster {cluster_id!r} in this project")
    current = store.clusters.statuses(project_id, [cluster_id]).get(cluster_id)
    state = ClusterState.of(current) if current else ClusterState()
    changed = set_status(state, status, now, assignee=assignee, note=note)
    store.clusters.write_status(project_id, [changed.row(cluster_id)])
    run = store.clusters.latest_run(project_id)
    online = store.clusters.online(project_id, run).get(cluster_id)
    return _cluster_out(found[0], changed.row(cluster_id), online, now)  # type: ignore[arg-type]


def cluster_refs(
    store: Store, project_id: str, activation_ids: Sequence[str]
) -> dict[str, ClusterRefOut]:
    """Per activation that belongs to a cluster now, which one."""
    run = store.clusters.latest_run(project_id)
    if run is None or not activation_ids:
        return {}
    members = {
        a: m
        for a, m in store.clusters.members_of(project_id, activation_ids, run).items()
        if m["cluster_id"]
    }
    ids = sorted({m["cluster_id"] for m in members.values()})
    if not ids:
        return {}
    rows = {r["cluster_id"]: r for r in store.clusters.get(project_id, ids)}
    statuses = store.clusters.statuses(project_id, ids)
    out = {}
    for activation_id, member in members.items():
        row = rows.get(member["cluster_id"])
        if row is None:
            continue
        status = statuses.get(member["cluster_id"])
        out[activation_id] = ClusterRefOut(
            cluster_id=member["cluster_id"],
            label=row["label"],
            status=status["status"] if status else "new",  # type: ignore[arg-type]
            assigned_by=member["assigned_by"],
        )
    return out


def _cluster_out(
    row: ClusterRow, status: StatusRow | None, online: OnlineCounts | None, now: int
) -> ClusterOut:
    hourly = _hourly(row, online, now)
    size, sessions = row["size"], row["sessions"]
    first, last = row["first_seen"], row["last_seen"]
    skills, versions = list(row["skills"]), list(row["versions"])
    if online:
        size += online["members"]
        sessions += online["sessions"]
        first = (
            min(first, online["first_seen"]) if size > online["members"] else online["first_seen"]
        )
        last = max(last, online["last_seen"])
        skills += [s for s in online["skills"] if s not in skills]
        versions += [v for v in online["versions"] if v and v not in versions]
    trend = trend_of(hourly, first, now)
    return ClusterOut(
        cluster_id=row["cluster_id"],
        label=row["label"],
        status=status["status"] if status else "new",  # type: ignore[arg-type]
        severity=row["severity"],
        size=size,
        sessions=sessions,
        skills=skills,
        versions=versions,
        first_bad_version=row["first_bad_version"],
        first_seen=iso_us(first),
        last_seen=iso_us(last),
        trend=_trend_out(trend),
        exemplar_activation_ids=list(row["exemplar_activation_ids"]),
        evaluator=row["evaluator"],
        kind=row["kind"],
        terms=list(row["terms"]),
        assignee=status["assignee"] if status else "",
        note=status["note"] if status else "",
        active=bool(row["active"]) or bool(online),
        split_from=row["split_from"],
        merged_into=row["merged_into"],
        rank=round(rank_score(size, trend, row["severity"]), 3),
        run_id=row["run_id"],
    )


def _hourly(row: ClusterRow, online: OnlineCounts | None, now: int) -> list[int]:
    """The run's 48 hourly counts moved to end now, plus the members that came online."""
    shift = max(0, (now - row["counted_at"]) // HOUR_US)
    counts = list(row["hourly"])[-HOURS:]
    counts = [0] * (HOURS - len(counts)) + counts
    counts = (counts[shift:] + [0] * min(shift, HOURS))[-HOURS:] if shift else counts
    if online:
        extra = bucket_counts(online["started"], now, HOUR_US, HOURS)
        counts = [a + b for a, b in zip(counts, extra, strict=True)]
    return counts


def _trend_out(trend: Trend) -> ClusterTrendOut:
    return ClusterTrendOut(
        direction=trend.direction,
        last_24h=trend.last_24h,
        previous_24h=trend.previous_24h,
        per_hour=round(trend.per_hour, 3),
        ratio=trend.ratio,
    )


def iso_us(micros: int) -> str:
    """µs since the epoch as ISO 8601 in UTC."""
    moment = datetime.fromtimestamp(int(micros) / 1_000_000, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _us(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1_000_000)


__all__ = [
    "OPEN",
    "ClusterAdviceOut",
    "ClusterDetailOut",
    "ClusterMemberOut",
    "ClusterNotFound",
    "ClusterOut",
    "ClusterRefOut",
    "ClusterTrendOut",
    "cluster_detail",
    "cluster_refs",
    "list_clusters",
    "set_cluster_status",
]
