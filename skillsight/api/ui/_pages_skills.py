"""The skills page (every skill, how it ran) and a skill's page (per-version lines over time)."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime
from pathlib import Path as FilePath
from types import SimpleNamespace
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from skillsight.api._deps import StoreDep
from skillsight.api.ui._auth import PageProject
from skillsight.api.ui._charts import Series, bars, line_chart, sparkline
from skillsight.api.ui._pages_activity import PAGE, PageNo, since_of
from skillsight.api.ui._render import render
from skillsight.evaluators import deterministic_registry
from skillsight.reports import (
    DEFAULT_WINDOW,
    SkillOut,
    SkillPageOut,
    UsagePointOut,
    skill_page,
    skill_usage_points,
    skills_overview,
)
from skillsight.skills import scan

router = APIRouter(include_in_schema=False)

Window = Annotated[str, Query(max_length=16)]
FAILING_SHOWN = 20
# The skills list opens on the last week (docs/ui.md: 7 and 30 days cost about the same, ~120
# ms for the store's read at 10M activations, the window's first day from the hour rollups).
OVERVIEW_WINDOW = "7d"


@functools.cache
def thresholds() -> dict[str, float]:
    """Each deterministic evaluator's pass threshold: what the gate holds a mean score to by
    default."""
    return {e.name: e.threshold for e in deterministic_registry()}


@router.get("/skills")
async def skills_list(
    request: Request,
    project: PageProject,
    store: StoreDep,
    q: Annotated[str, Query(max_length=256)] = "",
    window: Window = OVERVIEW_WINDOW,
    page: PageNo = 1,
) -> Response:
    since_of(window)
    found = await asyncio.to_thread(skills_overview, store, project, window=window, name=q)
    shown = found[(page - 1) * PAGE : page * PAGE]
    sparks = {
        s.name: sparkline(
            [d.activations for d in s.days],
            marked=[d.failing for d in s.days],
            label=f"{s.name}: activations per day, failing ones in red",
        )
        for s in shown
    }
    return render(
        request,
        "skills.html",
        title="Skills",
        nav="skills",
        skills=shown,
        sparks=sparks,
        q=q,
        window=window,
        page=page,
        more=len(found) > page * PAGE,
        total=len(found),
    )


def _violations(entry: SkillOut | None) -> tuple[list[Any], str]:
    """The scan violations of the skill's folder when this service can read it."""
    if entry is None or not entry.source_uri.startswith("file://"):
        return [], "the skill's folder is not known to this service"
    folder = FilePath(unquote(urlsplit(entry.source_uri).path))
    if not folder.exists():
        return [], f"{folder} is not readable from this service"
    return list(scan([folder]).violations), ""


def _charts(page: SkillPageOut, metric: str) -> list[dict[str, Any]]:
    """One chart per evaluator: a line per skill version over the days of the window."""
    versions = [v.version for v in page.scorecard.versions]
    days = sorted({p.day for p in page.version_trend})
    limits = thresholds()
    charts = []
    for score in page.scorecard.evaluators:
        points = {
            (p.version, p.day): p for p in page.version_trend if p.evaluator == score.evaluator
        }
        series = [
            Series(
                name=version or "(unknown)",
                title=f"version {version[:12] or '(unknown)'}",
                values=[
                    getattr(points[version, day], metric) if (version, day) in points else None
                    for day in days
                ],
            )
            for version in versions
            if any(v == version for v, _ in points)
        ]
        threshold = limits.get(score.evaluator) if metric == "mean_score" else None
        what = "mean score" if metric == "mean_score" else "pass rate"
        charts.append(
            {
                "score": score,
                "series": [s.name for s in series],
                "svg": line_chart(
                    series,
                    days,
                    title=f"{score.evaluator}: {what} per day, one line per skill version",
                    threshold=threshold,
                    threshold_label=f"gate minimum {threshold}" if threshold is not None else "",
                ),
                "threshold": threshold,
            }
        )
    return charts


def usage_versions(usage: list[UsagePointOut]) -> list[str]:
    """The versions, the most recently run first (the order of the page's versions table)."""
    last: dict[str, str] = {}
    for u in usage:
        last[u.version] = max(last.get(u.version, ""), u.day)
    return sorted(last, key=lambda v: (last[v], v), reverse=True)


def _usage_charts(usage: list[UsagePointOut]) -> list[dict[str, Any]]:
    versions = usage_versions(usage)
    days = sorted({u.day for u in usage})
    points = {(u.version, u.day): u for u in usage}
    out = []
    for field, title, percent in (
        ("activations", "activations per day", False),
        ("cost_usd", "cost per activation (USD)", False),
        ("tokens", "tokens per activation", False),
        ("duration_ms", "duration per activation (ms)", False),
    ):
        series = [
            Series(
                name=version or "(unknown)",
                title=f"version {version[:12] or '(unknown)'}",
                values=[
                    float(getattr(points[version, day], field))
                    if (version, day) in points
                    else None
                    for day in days
                ],
            )
            for version in versions
        ]
        top = max((v for s in series for v in s.values if v is not None), default=1.0)
        out.append(
            {
                "title": title,
                "svg": line_chart(
                    series, days, title=f"{title}, one line per skill version",
                    y_max=top * 1.1 or 1.0, percent=percent,
                ),
            }
        )  # fmt: skip
    return out


def _low_score(row: dict[str, Any]) -> SimpleNamespace:
    """A row of the low scores table: the gate's row without its findings (the activation's
    page shows them)."""
    started = datetime.fromtimestamp(int(row["started_at_us"]) / 1e6, UTC)
    return SimpleNamespace(
        activation_id=str(row["activation_id"]),
        started_at=started.isoformat(timespec="seconds"),
        evaluator=str(row["evaluator"]),
        score=row["score"],
        passed=row["passed"],
        label=str(row["label"]),
        error="",
        reason=str(row["reason"]),
        skill_version=str(row["skill_version"]),
    )


@router.get("/skills/{name}")
async def skill_detail(
    request: Request,
    project: PageProject,
    store: StoreDep,
    name: Annotated[str, Path(max_length=256)],
    window: Window = DEFAULT_WINDOW,
    metric: Annotated[str, Query(pattern="^(mean_score|pass_rate)$")] = "mean_score",
) -> Response:
    since = since_of(window)
    page = await asyncio.to_thread(skill_page, store, project, name, window=window, usage=False)
    failing = await asyncio.to_thread(
        store.scorecards.below, project, name, 1.0, since=since, limit=FAILING_SHOWN
    )
    latest = page.catalogue[0] if page.catalogue else None
    violations, unreadable = await asyncio.to_thread(_violations, latest)
    return render(
        request,
        "skill.html",
        title=f"skill {name}",
        nav="skills",
        name=name,
        page=page,
        latest=latest,
        violations=violations,
        unreadable=unreadable,
        charts=_charts(page, metric),
        failing=[_low_score(r) for r in failing],
        window=window,
        metric=metric,
        thresholds=thresholds(),
    )


@router.get("/skills/{name}/usage")
async def skill_usage(
    request: Request,
    project: PageProject,
    store: StoreDep,
    name: Annotated[str, Path(max_length=256)],
    window: Window = DEFAULT_WINDOW,
) -> Response:
    """The skill page's activity and cost charts, fetched after the page (one scan of the
    window's activations, the page's slowest part for a busy skill over all time)."""
    usage = await asyncio.to_thread(skill_usage_points, store, project, name, window=window)
    days = sorted({u.day for u in usage})
    per_day = dict.fromkeys(days, 0)
    for u in usage:
        per_day[u.day] += u.activations
    return render(
        request,
        "_usage.html",
        activity=bars([per_day[d] for d in days], days, title=f"{name}: activations per day"),
        usage=_usage_charts(usage),
        versions=usage_versions(usage),
    )
