"""Read models the web UI browses by: the skills overview, a skill's per-version trend, and a
page of a session's ATIF steps.

Each is one or two queries whatever the number of skills, versions or steps (no query per row),
so a page costs the same at ten activations or ten million once the store's aggregates are fast.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from skillsight.reports._records import EvaluatorScoreOut, ScorecardOut
from skillsight.reports._scorecard import (
    DEFAULT_WINDOW,
    build_scorecard,
    evaluator_order,
    iso_us,
    window_start,
)
from skillsight.reports._telemetry import SkillOut

if TYPE_CHECKING:  # the store is loaded by whoever hands one in
    from skillsight.store import Store

__all__ = [
    "DayCountOut",
    "SessionStepsOut",
    "SkillPageOut",
    "SkillSummaryOut",
    "UsagePointOut",
    "VersionTrendPointOut",
    "session_steps",
    "skill_page",
    "skill_usage_points",
    "skills_overview",
]


class DayCountOut(BaseModel):
    day: str = Field(description="UTC day the activations started, YYYY-MM-DD")
    activations: int
    failing: int = Field(description="activations with a current evaluation that failed")


class SkillSummaryOut(BaseModel):
    """One skill on the skills page: its catalogue entry and how it ran in the window."""

    name: str
    activations: int
    failing: int = Field(description="activations with at least one failing current evaluation")
    unscored: int = Field(description="activations no evaluator has scored (yet)")
    first_started: str | None
    last_started: str | None
    evaluators: list[EvaluatorScoreOut]
    days: list[DayCountOut]
    catalogue: SkillOut | None = Field(description="the latest scanned version, if scanned")
    versions: int = Field(description="versions recorded in the catalogue")


class VersionTrendPointOut(BaseModel):
    """One evaluator's scores of one skill version on one UTC day."""

    day: str
    version: str
    evaluator: str
    activations: int
    scored: int
    not_evaluated: int
    pass_rate: float | None = Field(description="null when nothing was scored that day")
    mean_score: float | None


class UsagePointOut(BaseModel):
    """What one skill version's activations cost on one UTC day, per activation."""

    day: str
    version: str
    activations: int
    cost_usd: float = Field(description="mean per activation")
    tokens: float = Field(description="mean per activation: input, output and cache tokens")
    duration_ms: float = Field(description="mean per activation")
    tool_calls: float = Field(description="mean internal tool calls per activation")


class SkillPageOut(BaseModel):
    """A skill's scorecard with its per-version trends (scores, and cost and tokens)."""

    scorecard: ScorecardOut
    version_trend: list[VersionTrendPointOut]
    usage: list[UsagePointOut]
    catalogue: list[SkillOut] = Field(description="every recorded version, the latest first")


class SessionStepsOut(BaseModel):
    """A page of a session's ATIF trajectory (or of a subagent trajectory embedded in it)."""

    session_id: str
    trajectory_id: str
    schema_version: str
    agent: dict[str, Any]
    final_metrics: dict[str, Any] | None
    notes: str | None
    total_steps: int
    offset: int
    steps: list[dict[str, Any]]
    subagents: list[tuple[str, int]] = Field(description="(trajectory_id, steps) embedded")
    document_bytes: int


def _rate(passed: int, scored: int) -> float | None:
    return round(passed / scored, 6) if scored else None


def _score(row: Mapping[str, Any]) -> EvaluatorScoreOut:
    scored = int(row["scored"])
    return EvaluatorScoreOut(
        evaluator=str(row["evaluator"]),
        activations=int(row["activations"]),
        scored=scored,
        not_evaluated=int(row["not_evaluated"]),
        passed=int(row["passed"]),
        pass_rate=_rate(int(row["passed"]), scored),
        mean_score=round(float(row["mean_score"]), 6) if scored else None,
        min_score=round(float(row["min_score"]), 6) if scored else None,
    )


def skills_overview(
    store: Store,
    project_id: str,
    *,
    window: str = DEFAULT_WINDOW,
    name: str = "",
    read_models: bool | None = None,
) -> list[SkillSummaryOut]:
    """Every skill that is in the catalogue or ran in ``window``, busiest first; ``name``
    keeps those whose name contains it (case-insensitive). ``read_models`` picks the store's
    path (None: the read models once ready; the tests compare both)."""
    rows = store.scorecards.overview(
        project_id, since=window_start(window), read_models=read_models
    )
    catalogue = store.skills.versions(project_id)
    evaluators: dict[str, list[EvaluatorScoreOut]] = {}
    unscored: dict[str, int] = {}
    for row in rows["evaluators"]:
        skill = str(row["skill_name"])
        if row["evaluator"]:
            evaluators.setdefault(skill, []).append(_score(row))
        else:
            unscored[skill] = int(row["activations"])
    days: dict[str, list[DayCountOut]] = {}
    for row in rows["days"]:
        days.setdefault(str(row["skill_name"]), []).append(
            DayCountOut(
                day=str(row["day"]),
                activations=int(row["activations"]),
                failing=int(row["failing"]),
            )
        )
    ran = {str(row["skill_name"]): row for row in rows["skills"]}
    out = []
    for skill in sorted(set(ran) | set(catalogue)):
        if name and name.lower() not in skill.lower():
            continue
        summary = ran.get(skill)
        versions = catalogue.get(skill, [])
        out.append(
            SkillSummaryOut(
                name=skill,
                activations=int(summary["activations"]) if summary else 0,
                failing=int(summary["failing"]) if summary else 0,
                unscored=unscored.get(skill, 0),
                first_started=iso_us(summary["first_started_us"]) if summary else None,
                last_started=iso_us(summary["last_started_us"]) if summary else None,
                evaluators=sorted(
                    evaluators.get(skill, []), key=lambda e: evaluator_order(e.evaluator)
                ),
                days=sorted(days.get(skill, []), key=lambda d: d.day),
                catalogue=SkillOut.model_validate(versions[0]) if versions else None,
                versions=len(versions),
            )
        )
    out.sort(key=lambda s: (-s.activations, s.name))
    return out


def skill_page(
    store: Store,
    project_id: str,
    skill: str,
    *,
    window: str = DEFAULT_WINDOW,
    since: datetime | None = None,
    usage: bool = True,
) -> SkillPageOut:
    """The skill's scorecard, its per-version daily scores, its catalogue versions and (unless
    ``usage`` is false) its per-version daily cost and tokens."""
    start = since if since is not None else window_start(window)
    rows = store.scorecards.rows(project_id, skill, since=start)
    card = build_scorecard(skill, rows, window=window, since=start)
    trend = [
        VersionTrendPointOut(
            day=str(r["day"]),
            version=str(r["skill_version"]),
            evaluator=str(r["evaluator"]),
            activations=int(r["activations"]),
            scored=int(r["scored"]),
            not_evaluated=int(r["not_evaluated"]),
            pass_rate=_rate(int(r["passed"]), int(r["scored"])),
            mean_score=round(float(r["mean_score"]), 6) if int(r["scored"]) else None,
        )
        for r in rows["version_trend"]
    ]
    trend.sort(key=lambda p: (evaluator_order(p.evaluator), p.version, p.day))
    points = skill_usage_points(store, project_id, skill, since=start) if usage else []
    versions = store.skills.versions(project_id).get(skill, [])
    return SkillPageOut(
        scorecard=card,
        version_trend=trend,
        usage=points,
        catalogue=[SkillOut.model_validate(v) for v in versions],
    )


def _json(text: str, default: Any) -> Any:
    try:
        return json.loads(text) if text else default
    except json.JSONDecodeError:
        return default


def session_steps(
    store: Store,
    project_id: str,
    session_id: str,
    *,
    offset: int = 0,
    limit: int = 100,
    trajectory_id: str = "",
) -> SessionStepsOut | None:
    """Steps ``offset``..``offset+limit`` of the session's trajectory (or of its subagent
    trajectory ``trajectory_id``); None when the session was never rebuilt."""
    page = store.trajectories.page(
        project_id, session_id, offset=offset, limit=limit, trajectory_id=trajectory_id
    )
    if page is None:
        return None
    notes = _json(page.notes, None)
    return SessionStepsOut(
        session_id=session_id,
        trajectory_id=trajectory_id or page.trajectory_id,
        schema_version=page.schema_version,
        agent=_json(page.agent, {}) or {},
        final_metrics=_json(page.final_metrics, None),
        notes=notes if isinstance(notes, str) else None,
        total_steps=page.total,
        offset=offset,
        steps=[_json(step, {}) for step in page.steps],
        subagents=list(page.subagents),
        document_bytes=page.document_bytes,
    )


def skill_usage_points(
    store: Store,
    project_id: str,
    skill: str,
    *,
    window: str = DEFAULT_WINDOW,
    since: datetime | None = None,
) -> list[UsagePointOut]:
    """Per UTC day and skill version, what an activation cost on average."""
    start = since if since is not None else window_start(window)
    out = []
    for r in store.scorecards.usage(project_id, skill, since=start):
        count = max(int(r["activations"]), 1)
        out.append(
            UsagePointOut(
                day=str(r["day"]),
                version=str(r["skill_version"]),
                activations=int(r["activations"]),
                cost_usd=float(r["cost_usd"]) / count,
                tokens=float(r["tokens"]) / count,
                duration_ms=float(r["duration_ms"]) / count,
                tool_calls=float(r["tool_calls"]) / count,
            )
        )
    return out
