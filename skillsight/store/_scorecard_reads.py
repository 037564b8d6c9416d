"""Scorecards and the gate's rows read from the read models of migration 0012.

A window's days are read as :func:`~skillsight.store._window_plan.window_plan` says: *clean*
days (their newest refresh began after their newest mark) from ``scorecard_days``, a few rows
each; a day marked since, its hours not marked since from ``scorecard_hours`` and the others
from ``scorecard_rows``, where a day of a skill is one contiguous range; the window's first day
(partial: the window starts inside it) likewise, the hour it starts in from the rows. The gate
and the usage charts read every day that is not clean whole from the rows. The parts are summed
here into the same rows as the raw scorecard query (``_scorecards.SCORECARD``); a test compares
the two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from skillsight.store._day_aggregates import CURRENT_ROWS, DAY_AGGREGATES, EVERY_ROW, USAGE_SUMS
from skillsight.store._day_states import DayState
from skillsight.store._sql import micros
from skillsight.store._window_plan import WindowPlan, window_plan

if TYPE_CHECKING:
    from skillsight.store._store import Store

# A clean day's rows of its newest refresh (its marker row carries that refresh's stamp).
_OF_NEWEST_REFRESH = """day IN {clean:Array(Date)}
      AND (day, refreshed_at) IN (
        SELECT day, max(refreshed_at) FROM scorecard_days
        WHERE project_id = {project:String} AND skill_name = {skill:String} AND kind = 0
          AND day IN {clean:Array(Date)}
        GROUP BY day)"""

# The rows of a day's newest refresh.
_NEWEST_REFRESH = f"""
    SELECT day, kind, skill_version, evaluator, activations, scored, not_evaluated, passed,
           score_sum, score_min, first_started, last_started
    FROM scorecard_days
    WHERE project_id = {{project:String}} AND skill_name = {{skill:String}} AND kind IN (1, 2)
      AND {_OF_NEWEST_REFRESH}
    ORDER BY day, kind, skill_version, evaluator
    LIMIT 1 BY day, kind, skill_version, evaluator"""


# Some hours of some days (``WindowPlan.hours``), of each day's newest refresh, and that
# refresh's marker row in the hour rollups (kind 0: the hours are all there).
_DAY_HOURS = """day IN {hour_days:Array(Date)}
      AND (toUInt32(day) * 24 + hour IN {hours:Array(UInt32)} OR kind = 0)
      AND (day, refreshed_at) IN (
        SELECT day, max(refreshed_at) FROM scorecard_days
        WHERE project_id = {project:String} AND skill_name = {skill:String} AND kind = 0
          AND day IN {hour_days:Array(Date)}
        GROUP BY day)"""

_NEWEST_HOURS = f"""
    SELECT day, kind, skill_version, evaluator, activations, scored, not_evaluated, passed,
           score_sum, score_min, first_started, last_started
    FROM scorecard_hours
    WHERE project_id = {{project:String}} AND skill_name = {{skill:String}} AND kind IN (0, 1, 2)
      AND {_DAY_HOURS}
    ORDER BY day, hour, kind, skill_version, evaluator
    LIMIT 1 BY day, hour, kind, skill_version, evaluator"""


def _parts(clean: bool, raw: bool, hours: bool) -> str:
    """The per-day rows of the clean days (aggregates), of the hours read from the hour
    rollups and of the rest (copied rows); a part with no days is left out (an empty ``IN`` set
    would still read the skill's every row)."""
    sources = (
        ([_NEWEST_REFRESH] if clean else [])
        + ([_NEWEST_HOURS] if hours else [])
        + ([DAY_AGGREGATES] if raw else [])
    )
    return f"""
SELECT toString(day) AS day, kind, skill_version, evaluator, activations, scored,
       not_evaluated, passed, score_sum, score_min,
       toUnixTimestamp64Micro(first_started) AS first_us,
       toUnixTimestamp64Micro(last_started) AS last_us
FROM ({" UNION ALL ".join(sources)})
WHERE kind = 0 OR {{version:String}} = '' OR skill_version = {{version:String}}
ORDER BY day, kind, skill_version, evaluator"""


# Clean days holding a current row of the evaluator (and version) scoring under the bound.
_DAYS_BELOW = f"""
SELECT DISTINCT toString(day) AS day FROM ({_NEWEST_REFRESH})
WHERE kind = 2 AND scored > 0 AND score_min < {{below:Float64}}
  AND ({{evaluator:String}} = '' OR evaluator = {{evaluator:String}})
  AND ({{version:String}} = '' OR skill_version = {{version:String}})"""

_BELOW_IN_DAYS = f"""
SELECT activation_id, evaluator, evaluator_version, skill_version, score, passed, label,
       toUnixTimestamp64Micro(started_at) AS started_at_us,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM ({CURRENT_ROWS})
WHERE ({{version:String}} = '' OR skill_version = {{version:String}})
  AND score IS NOT NULL AND score < {{below:Float64}}
ORDER BY started_at_us DESC, activation_id, evaluator
LIMIT {{limit:UInt32}}"""

# The session of each activation as the scorecard's join finds it (its newest rebuild).
_SESSIONS = """
SELECT activation_id, session_id FROM activations
WHERE project_id = {project:String} AND skill_name = {skill:String}
  AND activation_id IN {ids:Array(String)}
  AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
  AND started_at BETWEEN fromUnixTimestamp64Micro({first:Int64}, 'UTC')
                     AND fromUnixTimestamp64Micro({last:Int64}, 'UTC')
ORDER BY started_at, activation_id, rebuilt_at DESC
LIMIT 1 BY activation_id"""


def _plan(states: Sequence[DayState], since: datetime | None, *, hours: bool) -> WindowPlan:
    """The window's plan over the skill's day states (:func:`window_plan`)."""
    return window_plan(states, micros(since) if since is not None else 0, hours=hours)


class _Sums:
    __slots__ = (
        "activations",
        "first",
        "last",
        "not_evaluated",
        "passed",
        "score_min",
        "score_sum",
        "scored",
    )

    def __init__(self) -> None:
        self.activations = self.scored = self.not_evaluated = self.passed = 0
        self.score_sum = 0.0
        self.score_min: float | None = None
        self.first: int | None = None
        self.last: int | None = None

    def add(self, row: Mapping[str, Any]) -> None:
        self.activations += int(row["activations"])
        scored = int(row["scored"])
        self.scored += scored
        self.not_evaluated += int(row["not_evaluated"])
        self.passed += int(row["passed"])
        if scored:
            self.score_sum += float(row["score_sum"])
            low = float(row["score_min"])
            self.score_min = low if self.score_min is None else min(self.score_min, low)
        first, last = int(row["first_us"]), int(row["last_us"])
        self.first = first if self.first is None else min(self.first, first)
        self.last = last if self.last is None else max(self.last, last)

    def started(self) -> dict[str, Any]:
        return {"first_started_us": self.first, "last_started_us": self.last}

    def scores(self) -> dict[str, Any]:
        return {
            "evaluations": self.activations,
            "scored": self.scored,
            "not_evaluated": self.not_evaluated,
            "passed": self.passed,
            "mean_score": self.score_sum / self.scored if self.scored else None,
            "min_score": self.score_min if self.score_min is not None else 0.0,
        }


def combine(parts: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per-day parts summed into the scorecard's four sets, ordered as the raw query orders
    them: versions and per-version rows newest activation first, the trends by day."""
    versions: dict[str, _Sums] = {}
    by_version: dict[tuple[str, str], _Sums] = {}
    trend: dict[tuple[str, str], _Sums] = {}
    version_trend: dict[tuple[str, str, str], _Sums] = {}
    for row in parts:
        version, evaluator, day = str(row["skill_version"]), str(row["evaluator"]), str(row["day"])
        if int(row["kind"]) == 1:
            versions.setdefault(version, _Sums()).add(row)
            continue
        by_version.setdefault((version, evaluator), _Sums()).add(row)
        trend.setdefault((day, evaluator), _Sums()).add(row)
        version_trend.setdefault((day, version, evaluator), _Sums()).add(row)

    def newest_first(key: tuple[str, ...], sums: _Sums) -> tuple[int, tuple[str, ...]]:
        return (-(sums.last or 0), key)

    return {
        "versions": [
            {"skill_version": v, "activations": s.activations, **s.started()}
            for v, s in sorted(versions.items(), key=lambda i: newest_first((i[0],), i[1]))
        ],
        "by_version": [
            {
                "skill_version": v,
                "evaluator": e,
                "activations": s.activations,
                **s.started(),
                **s.scores(),
            }
            for (v, e), s in sorted(by_version.items(), key=lambda i: newest_first(i[0], i[1]))
        ],
        "trend": [
            {"day": d, "evaluator": e, "activations": s.activations, **s.scores()}
            for (d, e), s in sorted(trend.items())
        ],
        "version_trend": [
            {
                "day": d,
                "skill_version": v,
                "evaluator": e,
                "activations": s.activations,
                **s.scores(),
            }
            for (d, v, e), s in sorted(version_trend.items())
        ],
    }


def scorecard_rows(
    store: Store,
    states: Sequence[DayState],
    project_id: str,
    skill: str,
    *,
    version: str,
    since: datetime | None,
) -> dict[str, list[dict[str, Any]]]:
    """``Scorecards.rows`` from the read models (``states``: the skill's day states)."""

    def parts(hours: bool) -> list[dict[str, Any]] | None:
        """The parts, or None when hours were read and a day's marker was not among them (a
        refresh's hours not all on this replica yet)."""
        plan = _plan(states, since, hours=hours)
        if not plan.clean and not plan.reads_rows and not plan.hour_days:
            return []
        params = {
            "project": project_id,
            "skill": skill,
            "version": version,
            **EVERY_ROW,
            "since": micros(since),
            **plan.params,
        }
        rows = store.query(_parts(bool(plan.clean), plan.reads_rows, bool(plan.hour_days)), params)
        kept = [row for row in rows if int(row["kind"]) != 0]
        return kept if len(rows) - len(kept) == len(plan.hour_days) else None

    found = parts(hours=True)
    return combine(found if found is not None else parts(hours=False) or [])


def rows_below(
    store: Store,
    states: Sequence[DayState],
    project_id: str,
    skill: str,
    below: float,
    *,
    evaluator: str,
    version: str,
    since: datetime | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The gate's rows (``Scorecards.below`` without texts) from the read models: the days
    that may hold one, newest first, read a few at a time until ``limit`` rows are found (the
    window's first day from the rows, whole)."""
    plan = _plan(states, since, hours=False)
    clean, raw = plan.clean, plan.raw
    params: dict[str, Any] = {
        "project": project_id,
        "skill": skill,
        "version": version,
        "evaluator": evaluator,
        "below": float(below),
        "since": micros(since),
        "limit": limit,
        "raw_hours": [],
    }
    hits = []
    if clean:
        hits = [str(r["day"]) for r in store.query(_DAYS_BELOW, {**params, "clean": clean})]
    days = sorted(set(hits) | set(raw), reverse=True)
    found: list[dict[str, Any]] = []
    taken, chunk = 0, 1
    while taken < len(days) and len(found) < limit:
        batch = days[taken : taken + chunk]
        taken += len(batch)
        chunk *= 2
        found += store.query(_BELOW_IN_DAYS, {**params, "days": batch})
    found = found[:limit]
    if found:
        sessions = {
            str(r["activation_id"]): str(r["session_id"])
            for r in store.query(
                _SESSIONS,
                {
                    **params,
                    "ids": sorted({str(r["activation_id"]) for r in found}),
                    # the page's starts bound the rows to read (a rebuild keeps a start)
                    "first": min(int(r["started_at_us"]) for r in found),
                    "last": max(int(r["started_at_us"]) for r in found),
                },
            )
        }
        for row in found:
            row["session_id"] = sessions.get(str(row["activation_id"]), "")
    return found


# What a skill's production activations cost per day and skill version (the web UI's usage
# charts): the clean days' kind 4 rows (their newest refresh), and the other days (the window's
# first, partial, and those written since their last refresh) from the activations' newest rows.
# A rebuild keeps an activation's sort key (its skill and start), so FINAL keeps exactly the
# newest rebuild row of each, as LIMIT 1 BY would, and never merges across the monthly
# partitions (a key lives in one); the key columns are filtered in PREWHERE, before it merges.
_USAGE_CLEAN = f"""
SELECT toString(rollup_day) AS day, skill_version, activations, cost_usd, tokens,
       duration_ms, tool_calls
FROM (
    SELECT day AS rollup_day, skill_version, activations, cost_usd, tokens, duration_ms,
           tool_calls
    FROM scorecard_days
    WHERE project_id = {{project:String}} AND skill_name = {{skill:String}} AND kind = 4
      AND {_OF_NEWEST_REFRESH}
    ORDER BY rollup_day, skill_version
    LIMIT 1 BY rollup_day, skill_version
)"""

USAGE_ROWS = f"""
SELECT toString(toDate(started_at)) AS day, skill_version, count() AS activations, {USAGE_SUMS}
FROM activations FINAL
PREWHERE project_id = {{project:String}} AND skill_name = {{skill:String}}
  AND ({{all_days:Bool}} OR toDate(started_at) IN {{days:Array(Date)}})
  AND started_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
WHERE rerun_id = ''
GROUP BY day, skill_version
ORDER BY day, skill_version
SETTINGS do_not_merge_across_partitions_select_final = 1"""


def usage_rows(
    store: Store,
    states: Sequence[DayState],
    project_id: str,
    skill: str,
    *,
    since: datetime | None,
) -> list[dict[str, Any]]:
    """``Scorecards.usage`` from the read models (``states``: the skill's day states; every
    day with activations is among them once the activation read model is ready). The window's
    first day comes from the rows, whole: one skill's day of activations is a short read, and
    its hour rollups measured slower (an extra table in the query)."""
    plan = _plan(states, since, hours=False)
    clean, raw = plan.clean, plan.raw
    params = {"project": project_id, "skill": skill, "since": micros(since), "all_days": False}
    rows: list[dict[str, Any]] = []
    if clean:  # an empty IN set would still read every row
        rows += store.query(_USAGE_CLEAN, {**params, "clean": clean})
    if raw:
        rows += store.query(USAGE_ROWS, {**params, "days": raw})
    return sorted(rows, key=lambda r: (str(r["day"]), str(r["skill_version"])))
