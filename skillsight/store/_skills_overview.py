"""The skills overview (the web UI's skills page): every skill that ran in a window, its
activations, failing activations and scores per evaluator, per day; a fixed number of queries
whatever the number of skills.

Before the scorecard read models are ready it aggregates the current evaluations joined to the
activations. Then it reads them as a scorecard does (:mod:`._scorecard_reads`), for every skill
at once: clean days after the window's first from ``scorecard_days`` (per day, version and
evaluator; per day and version the activations scored, the failing ones and every production
activation, scored or not); from ``scorecard_hours`` the hours of a day some skill wrote to
since its last refresh that no skill marked since, and the window's first day's whole hours,
when every skill's newest refresh of that day wrote them; the other hours and days (the window's
first hour, the hours marked since) from ``scorecard_rows`` (FINAL inside the monthly
partitions) and the ``activations`` table; all summed here across versions, hours and days.
Until every day of the activations table is marked or refreshed
(``ScorecardRollups.activations_ready``: a store older than the rebuilds' marks) the window's
activations are counted in their table. Reads are
exact whether or not the refresher has caught up; ``tests/test_skills_overview_rollups.py``
compares them with the raw rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skillsight.store._day_aggregates import DAYS_AND_HOURS
from skillsight.store._day_states import DayState
from skillsight.store._sql import SCORE_AGGREGATES as _SCORE_AGGREGATES
from skillsight.store._window_plan import WindowPlan, window_plan

if TYPE_CHECKING:
    from skillsight.store._store import Store

# Every skill of a project that ran since a moment (the web UI's skills page), in one pass over
# the current rows: per skill (activations, failing ones, first and last start), per skill and
# evaluator (the scores), per skill and UTC day (activations, failing ones). Activations are the
# left side, so one nobody scored is counted (its evaluator column is '').
_PROJECT_ACTIVATIONS = """
    SELECT a.skill_name AS skill_name, a.activation_id AS activation_id,
           a.started_at AS started_at, e.evaluator AS evaluator, e.score AS score,
           e.passed AS passed, e.label AS label, ifNull(e.passed = false, false) AS failed
    FROM (
        SELECT skill_name, activation_id, started_at FROM activations
        WHERE project_id = {project:String}
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND rerun_id = ''
        ORDER BY skill_name, started_at, activation_id, rebuilt_at DESC
        LIMIT 1 BY activation_id
    ) AS a
    LEFT JOIN (
        SELECT activation_id, evaluator, score, passed, label
        FROM evaluations
        WHERE project_id = {project:String}
          AND ({since:Int64} = 0 OR activation_id IN (
            SELECT activation_id FROM activations
            WHERE project_id = {project:String}
              AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')))
        ORDER BY skill_name, activation_id, evaluator, evaluated_at DESC
        LIMIT 1 BY activation_id, evaluator
    ) AS e ON a.activation_id = e.activation_id"""

OVERVIEW_SKILLS = 3
OVERVIEW_EVALUATORS = 1
OVERVIEW_DAYS = 2
_OVERVIEW = f"""
SELECT grouping(skill_name, evaluator, day) AS grouping_set,
       skill_name, evaluator, toString(toDate(started_at)) AS day,
       if(grouping_set = {OVERVIEW_EVALUATORS}, count(), uniqExact(activation_id)) AS activations,
       uniqExactIf(activation_id, failed) AS failing,
       toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us, {_SCORE_AGGREGATES}
FROM ({_PROJECT_ACTIVATIONS})
GROUP BY GROUPING SETS ((skill_name), (skill_name, evaluator), (skill_name, day))
ORDER BY grouping_set, skill_name, day, evaluator"""
_OVERVIEW_SETS = {
    OVERVIEW_SKILLS: "skills",
    OVERVIEW_EVALUATORS: "evaluators",
    OVERVIEW_DAYS: "days",
}

# The newest refresh of some clean days of every skill of a project, summed per skill and
# evaluator (the current rows' counts and sums: kind 2) and per skill and day (the activations
# scored, kind 1, the failing ones, kind 3, and every activation with its first and last start,
# kind 4); each version's rows added up. ``markers`` counts the refresh's marker rows a part
# holds (the hour rollups' only: they tell that a refresh's hours are all there).
_CLEAN_SUMS = """
SELECT grouping(day) AS by_evaluator, skill_name, evaluator, toString(day) AS day,
       sumIf(n, kind = 2) AS evaluations, sumIf(n_scored, kind = 2) AS scored,
       sumIf(n_not_evaluated, kind = 2) AS not_evaluated, sumIf(n_passed, kind = 2) AS passed,
       sumIf(n_score_sum, kind = 2) AS score_sum,
       minIf(n_score_min, kind = 2 AND n_scored > 0) AS score_min,
       sumIf(n, kind = 1) AS scored_activations, sumIf(n, kind = 3) AS failing,
       toUnixTimestamp64Micro(minIf(first, kind = 1)) AS first_started_us,
       toUnixTimestamp64Micro(maxIf(last, kind = 1)) AS last_started_us,
       sumIf(n, kind = 4) AS activations,
       toUnixTimestamp64Micro(minIf(first, kind = 4)) AS first_run_us,
       toUnixTimestamp64Micro(maxIf(last, kind = 4)) AS last_run_us,
       countIf(kind = 0) AS markers
FROM (
    SELECT skill_name, day, kind, skill_version, evaluator, activations AS n,
           scored AS n_scored, not_evaluated AS n_not_evaluated, passed AS n_passed,
           score_sum AS n_score_sum, score_min AS n_score_min, first_started AS first,
           last_started AS last
    FROM {table}
    WHERE project_id = {{project:String}} AND {rows}
      AND (skill_name, day, refreshed_at) IN (
        SELECT skill_name, day, max(refreshed_at) FROM scorecard_days
        WHERE project_id = {{project:String}} AND kind = 0 AND day IN {days}
        GROUP BY skill_name, day)
    LIMIT 1 BY skill_name, day, {hour}kind, skill_version, evaluator
)
GROUP BY GROUPING SETS ((skill_name, evaluator), (skill_name, day))"""
_CLEAN_DAYS = _CLEAN_SUMS.format(
    table="scorecard_days",
    rows="kind IN (1, 2, 3, 4) AND day IN {clean:Array(Date)}",
    days="{clean:Array(Date)}",
    hour="",
)
# The same from the hour rollups of some hours of some days (``WindowPlan.hours``), and the
# marker row of each skill's newest refresh of each of those days.
_HOURS = _CLEAN_SUMS.format(
    table="scorecard_hours",
    rows="day IN {hour_days:Array(Date)}"
    " AND (toUInt32(day) * 24 + hour IN {hours:Array(UInt32)} OR kind = 0)",
    days="{hour_days:Array(Date)}",
    hour="hour, ",
)

# The same sums from the current rows of the other days (the window's first, partial, and
# those written since their last refresh), FINAL inside the monthly partitions. The days and the
# window's start filter key columns (every row of a key has the same), so PREWHERE drops rows
# before FINAL merges them: at 10M half the time of the window's first day.
_ROW_DAYS = f"""
SELECT grouping(day) AS by_evaluator, skill_name, evaluator, toString(toDate(started_at)) AS day,
       count() AS evaluations, countIf(score IS NOT NULL) AS scored,
       countIf(score IS NULL AND label != 'not_applicable') AS not_evaluated,
       countIf(passed = true) AS passed,
       sumIf(assumeNotNull(score), score IS NOT NULL) AS score_sum,
       minIf(assumeNotNull(score), score IS NOT NULL) AS score_min,
       uniqExact(activation_id) AS scored_activations,
       uniqExactIf(activation_id, failed) AS failing,
       toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us
FROM (
    SELECT skill_name, activation_id, evaluator, started_at, score, passed, label,
           ifNull(passed = false, false) AS failed
    FROM scorecard_rows FINAL
    PREWHERE project_id = {{project:String}} AND {DAYS_AND_HOURS}
      AND started_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
    SETTINGS do_not_merge_across_partitions_select_final = 1
)
GROUP BY GROUPING SETS ((skill_name, evaluator), (skill_name, day))"""

# The activations of the days read from the rows, per skill and day: newest row each (FINAL;
# key columns in PREWHERE, before FINAL, as above; rerun_id after it).
_ROW_ACTIVATIONS = f"""
SELECT skill_name, toString(toDate(started_at)) AS day,
       count() AS activations, toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us
FROM activations FINAL
PREWHERE project_id = {{project:String}} AND {DAYS_AND_HOURS}
  AND started_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
WHERE rerun_id = ''
GROUP BY skill_name, day
SETTINGS do_not_merge_across_partitions_select_final = 1"""

# The window's activations per skill and day, before every day of the activations table is
# marked or refreshed (a store older than the rebuilds' marks).
_WINDOW_ACTIVATIONS = """
SELECT skill_name, toString(toDate(started_at)) AS day,
       count() AS activations, toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us
FROM activations FINAL
WHERE project_id = {project:String}
  AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND rerun_id = ''
GROUP BY skill_name, day
SETTINGS do_not_merge_across_partitions_select_final = 1"""


class _Scores:
    """One skill and evaluator's sums over the window's days."""

    __slots__ = ("evaluations", "not_evaluated", "passed", "score_min", "score_sum", "scored")

    def __init__(self) -> None:
        self.evaluations = self.scored = self.not_evaluated = self.passed = 0
        self.score_sum = 0.0
        self.score_min: float | None = None

    def add(self, row: Mapping[str, Any]) -> None:
        self.evaluations += int(row["evaluations"])
        self.not_evaluated += int(row["not_evaluated"])
        self.passed += int(row["passed"])
        scored = int(row["scored"])
        if scored:
            self.scored += scored
            self.score_sum += float(row["score_sum"])
            low = float(row["score_min"])
            self.score_min = low if self.score_min is None else min(self.score_min, low)

    def row(self, skill: str, evaluator: str) -> dict[str, Any]:
        return {
            "skill_name": skill,
            "evaluator": evaluator,
            "activations": self.evaluations,
            "scored": self.scored,
            "not_evaluated": self.not_evaluated,
            "passed": self.passed,
            "mean_score": self.score_sum / self.scored if self.scored else None,
            "min_score": self.score_min if self.score_min is not None else 0.0,
        }


class _Span:
    """Activations and the first and last of their starts, summed over parts."""

    __slots__ = ("count", "first", "last")

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None

    def add(self, count: int, first: int, last: int) -> None:
        if count:
            self.count += count
            self.first = first if self.first is None else min(self.first, first)
            self.last = last if self.last is None else max(self.last, last)


class _Ran:
    """One skill's (or skill and day's) activations, the scored and the failing ones."""

    __slots__ = ("failing", "ran", "scored")

    def __init__(self) -> None:
        self.scored, self.ran = _Span(), _Span()
        self.failing = 0

    def add_scored(self, row: Mapping[str, Any]) -> None:
        self.failing += int(row["failing"])
        self.scored.add(
            int(row["scored_activations"]),
            int(row["first_started_us"]),
            int(row["last_started_us"]),
        )

    def add_ran(self, count: int, first: int, last: int) -> None:
        self.ran.add(count, first, last)

    def row(self, skill: str, day: str) -> dict[str, Any]:
        # activations nobody counted in their table (not stored): the scored ones stand in
        span = self.ran if self.ran.count else self.scored
        return {
            "skill_name": skill,
            "day": day,
            "activations": span.count,
            "failing": self.failing,
            "first_started_us": span.first,
            "last_started_us": span.last,
        }


def _rollup_parts(
    store: Store, params: Mapping[str, Any], plan: WindowPlan, states: Sequence[DayState]
) -> list[dict[str, Any]] | None:
    """The clean days' sums and the hours' in one query (an empty ``IN`` set would still read
    every row, so a part with no days is left out); None when the marker of some skill's newest
    refresh of a day whose hours were read is not among them."""
    sources = ([_CLEAN_DAYS] if plan.clean else []) + ([_HOURS] if plan.hour_days else [])
    if not sources:
        return []
    parts = store.query(" UNION ALL ".join(sources), {**params, **plan.params})
    if plan.hour_days:
        days = set(plan.hour_days)
        expected = {(state.skill_name, state.day) for state in states if state.day in days}
        found = {
            (str(row["skill_name"]), str(row["day"]))
            for row in parts
            if int(row["markers"]) and not int(row["by_evaluator"])
        }
        if found != expected:
            return None
    return parts


def skills_overview(
    store: Store, project_id: str, since_us: int, read_models: bool
) -> dict[str, list[dict[str, Any]]]:
    """``skills``, ``evaluators`` (evaluator '' = activations nobody scored) and ``days``."""
    params = {"project": project_id, "since": since_us}
    out: dict[str, list[dict[str, Any]]] = {"skills": [], "evaluators": [], "days": []}
    if not read_models:
        for row in store.query(_OVERVIEW, params):
            out[_OVERVIEW_SETS[int(row["grouping_set"])]].append(row)
        return out
    rollups = store.scorecards.rollups
    # a day clean for every skill is read alike for all: one state stands for it
    states = rollups.day_states(project_id, since_us=since_us, clean_days_once=True)
    plan = window_plan(states, since_us)
    parts = _rollup_parts(store, params, plan, states)
    if parts is None:  # a refresh's hours not all here yet (a lagging replica): days whole
        plan = window_plan(states, since_us, hours=False)
        parts = _rollup_parts(store, params, plan, states) or []
    counted = rollups.activations_ready()  # clean days' activations in their kind 4 rows
    if plan.reads_rows:
        parts += store.query(_ROW_DAYS, {**params, **plan.params})
    scores: dict[tuple[str, str], _Scores] = {}
    ran: dict[tuple[str, str], _Ran] = {}  # (skill, day) and (skill, '') for the window

    def add(skill: str, day: str) -> list[_Ran]:
        return [ran.setdefault((skill, day), _Ran()), ran.setdefault((skill, ""), _Ran())]

    for row in parts:
        skill = str(row["skill_name"])
        if int(row["by_evaluator"]):
            if row["evaluator"]:  # '': the per-version rows (kinds 1, 3 and 4)
                scores.setdefault((skill, str(row["evaluator"])), _Scores()).add(row)
            continue
        for sums in add(skill, str(row["day"])):
            sums.add_scored(row)
            if counted and "activations" in row:  # a clean day's
                sums.add_ran(
                    int(row["activations"]), int(row["first_run_us"]), int(row["last_run_us"])
                )
    if not counted:
        runs = store.query(_WINDOW_ACTIVATIONS, params)
    else:
        runs = store.query(_ROW_ACTIVATIONS, {**params, **plan.params}) if plan.reads_rows else []
    for row in runs:
        for sums in add(str(row["skill_name"]), str(row["day"])):
            sums.add_ran(
                int(row["activations"]),
                int(row["first_started_us"]),
                int(row["last_started_us"]),
            )
    for (skill, evaluator), score in scores.items():
        out["evaluators"].append(score.row(skill, evaluator))
    for (skill, day), sums in sorted(ran.items()):
        if not sums.ran.count and not sums.scored.count:
            continue
        out["days" if day else "skills"].append(sums.row(skill, day))
        unscored = sums.ran.count - sums.scored.count
        if not day and unscored > 0:  # ran, and nobody scored them: no failure known
            out["evaluators"].append(
                {"skill_name": skill, "evaluator": "", "activations": unscored}
            )
    return out
