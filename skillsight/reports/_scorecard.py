"""Scorecards and scored activations, from store rows to the API's shapes.

Shared by the REST routes and the CLI (which reads the store directly with ``--data`` /
``--clickhouse``), so both print the same numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from skillsight.errors import SkillsightError
from skillsight.evaluators import DETERMINISTIC
from skillsight.reports._records import (
    EvaluatorScoreOut,
    EvidenceOut,
    FindingOut,
    ScorecardOut,
    ScoredActivationOut,
    TrendPointOut,
    VersionScoreOut,
)

if TYPE_CHECKING:  # the store is loaded by whoever hands one in
    from skillsight.store import Store

DEFAULT_WINDOW = "30d"
_WINDOW = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def window_start(window: str, now: datetime | None = None) -> datetime | None:
    """``"7d"`` -> the moment 7 days ago; ``"all"`` -> None (no bound)."""
    text = window.strip().lower()
    if text == "all":
        return None
    match = _WINDOW.match(text)
    if match is None or int(match.group(1)) <= 0:
        raise SkillsightError(
            f"window {window!r} is not a positive count of m, h, d or w (e.g. 24h, 7d), or 'all'"
        )
    delta = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    return (now or datetime.now(UTC)) - delta


def iso_us(micros: int) -> str:
    moment = datetime.fromtimestamp(int(micros) / 1_000_000, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def evaluator_order(name: str) -> tuple[int, str]:
    return (DETERMINISTIC.index(name) if name in DETERMINISTIC else len(DETERMINISTIC), name)


def _score(row: Mapping[str, Any]) -> EvaluatorScoreOut:
    scored = int(row["scored"])
    return EvaluatorScoreOut(
        evaluator=str(row["evaluator"]),
        activations=int(row["activations"]),
        scored=scored,
        not_evaluated=int(row.get("not_evaluated", 0)),
        passed=int(row["passed"]),
        pass_rate=round(int(row["passed"]) / scored, 6) if scored else None,
        mean_score=round(float(row["mean_score"]), 6) if scored else None,
        min_score=round(float(row["min_score"]), 6) if scored else None,
    )


def _combined(evaluator: str, rows: Sequence[Mapping[str, Any]]) -> EvaluatorScoreOut:
    """One evaluator over several versions' rows (an activation has a single version)."""
    scored = sum(int(r["scored"]) for r in rows)
    total = sum(float(r["mean_score"]) * int(r["scored"]) for r in rows if int(r["scored"]))
    return _score(
        {
            "evaluator": evaluator,
            "activations": sum(int(r["activations"]) for r in rows),
            "scored": scored,
            "not_evaluated": sum(int(r.get("not_evaluated", 0)) for r in rows),
            "passed": sum(int(r["passed"]) for r in rows),
            "mean_score": total / scored if scored else 0.0,
            "min_score": min((float(r["min_score"]) for r in rows if int(r["scored"])), default=0),
        }
    )


def build_scorecard(
    skill: str,
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    window: str,
    since: datetime | None,
    version: str = "",
) -> ScorecardOut:
    """A :class:`ScorecardOut` from ``Store.scorecards.rows``."""
    by_version: dict[str, list[Mapping[str, Any]]] = {}
    by_evaluator: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows["by_version"]:
        by_version.setdefault(str(row["skill_version"]), []).append(row)
        by_evaluator.setdefault(str(row["evaluator"]), []).append(row)
    versions = [
        VersionScoreOut(
            version=str(v["skill_version"]),
            activations=int(v["activations"]),
            first_started=iso_us(v["first_started_us"]),
            last_started=iso_us(v["last_started_us"]),
            evaluators=sorted(
                (_score(r) for r in by_version.get(str(v["skill_version"]), [])),
                key=lambda s: evaluator_order(s.evaluator),
            ),
        )
        for v in rows["versions"]
    ]
    trend = [
        TrendPointOut(
            day=str(r["day"]),
            evaluator=str(r["evaluator"]),
            activations=int(r["activations"]),
            scored=int(r["scored"]),
            pass_rate=round(int(r["passed"]) / int(r["scored"]), 6) if int(r["scored"]) else None,
            mean_score=round(float(r["mean_score"]), 6) if int(r["scored"]) else None,
        )
        for r in sorted(
            rows["trend"], key=lambda r: (str(r["day"]), evaluator_order(str(r["evaluator"])))
        )
    ]
    return ScorecardOut(
        skill=skill,
        window=window,
        since=_iso(since),
        version=version,
        activations=sum(v.activations for v in versions),
        evaluators=[
            _combined(n, by_evaluator[n]) for n in sorted(by_evaluator, key=evaluator_order)
        ],
        versions=versions,
        trend=trend,
    )


def scorecard(
    store: Store,
    project_id: str,
    skill: str,
    *,
    window: str = DEFAULT_WINDOW,
    since: datetime | None = None,
    version: str = "",
) -> ScorecardOut:
    """The skill's scorecard over ``window`` (or from ``since`` when given)."""
    if since is None:
        since = window_start(window)
    rows = store.scorecards.rows(project_id, skill, version=version, since=since)
    return build_scorecard(skill, rows, window=window, since=since, version=version)


def _findings(text: str) -> list[FindingOut]:
    return [FindingOut(**f) for f in json.loads(text or "[]")]


def scored_activation(row: Mapping[str, Any]) -> ScoredActivationOut:
    """A row of ``Store.scorecards.below``."""
    score = row.get("score")
    passed = row.get("passed")
    return ScoredActivationOut(
        activation_id=str(row["activation_id"]),
        session_id=str(row["session_id"]),
        started_at=iso_us(row["started_at_us"]),
        skill_version=str(row["skill_version"]),
        evaluator=str(row["evaluator"]),
        version=str(row["evaluator_version"]),
        score=None if score is None else float(score),
        passed=None if passed is None else bool(passed),
        label=str(row["label"]),
        reason=str(row["reason"]),
        evidence=EvidenceOut(
            step_ids=[int(s) for s in row["evidence_step_ids"]],
            tool_call_ids=[str(c) for c in row["evidence_tool_call_ids"]],
        ),
        findings=_findings(str(row["findings"])),
    )
