"""The skills overview (the web UI's skills page): every skill that ran in a window, its
activations, failing activations and scores per evaluator, per day; one or two queries whatever
the number of skills.

Before the scorecard read models are ready it aggregates the current evaluations joined to the
activations; then it reads ``scorecard_rows`` (the newest row of each activation and evaluator,
FINAL inside the monthly partitions a start keeps a key in) and the activations table, one
narrow scan each and no join.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillsight.store._sql import SCORE_AGGREGATES as _SCORE_AGGREGATES

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
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
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

_OVERVIEW_SCORED = f"""
SELECT grouping(skill_name, evaluator, day) AS grouping_set,
       skill_name, evaluator, toString(toDate(started_at)) AS day,
       if(grouping_set = {OVERVIEW_EVALUATORS}, count(), uniqExact(activation_id)) AS activations,
       uniqExactIf(activation_id, failed) AS failing,
       toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us, {_SCORE_AGGREGATES}
FROM (
    SELECT skill_name, activation_id, evaluator, started_at, score, passed, label,
           ifNull(passed = false, false) AS failed
    FROM scorecard_rows FINAL
    WHERE project_id = {{project:String}}
      AND started_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
    SETTINGS do_not_merge_across_partitions_select_final = 1
)
GROUP BY GROUPING SETS ((skill_name), (skill_name, evaluator), (skill_name, day))
ORDER BY grouping_set, skill_name, day, evaluator"""

_OVERVIEW_ACTIVATIONS = """
SELECT grouping(skill_name, day) AS grouping_set, skill_name, toString(toDate(started_at)) AS day,
       count() AS activations, toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us
FROM activations FINAL
WHERE project_id = {project:String}
  AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
GROUP BY GROUPING SETS ((skill_name), (skill_name, day))
SETTINGS do_not_merge_across_partitions_select_final = 1"""


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
    ran: dict[tuple[str, str], dict[str, Any]] = {}
    for row in store.query(_OVERVIEW_ACTIVATIONS, params):
        day = "" if int(row["grouping_set"]) else str(row["day"])
        ran[str(row["skill_name"]), day] = row
    scored: dict[tuple[str, str], int] = {}
    for row in store.query(_OVERVIEW_SCORED, params):
        kind = _OVERVIEW_SETS[int(row["grouping_set"])]
        if kind == "evaluators":
            out[kind].append(row)
            continue
        day = str(row["day"]) if kind == "days" else ""
        scored[str(row["skill_name"]), day] = int(row["activations"])
        base = ran.get((str(row["skill_name"]), day))
        out[kind].append({**row, **({"activations": base["activations"]} if base else {})})
    for (skill, day), row in ran.items():
        if (skill, day) not in scored:  # ran, and nobody scored it: no failure known
            kind = "days" if day else "skills"
            out[kind].append({**row, "skill_name": skill, "day": day, "failing": 0})
        unscored = int(row["activations"]) - scored.get((skill, day), 0)
        if not day and unscored > 0:
            out["evaluators"].append(
                {"skill_name": skill, "evaluator": "", "activations": unscored}
            )
    return out
