"""Skill scorecards and the CI gate's rows, aggregated inside ClickHouse.

Both read the *current* row of each (activation, evaluator) of one skill: the newest evaluation,
whatever evaluator version wrote it, joined to the activation's start (the newest rebuild of it)
so windows and trends follow when the skill ran, not when it was scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from skillsight.store._rollups import ScorecardRollups
from skillsight.store._scorecard_reads import USAGE_ROWS, rows_below, scorecard_rows, usage_rows
from skillsight.store._skills_overview import skills_overview
from skillsight.store._sql import SCORE_AGGREGATES as _SCORE_AGGREGATES
from skillsight.store._sql import micros

if TYPE_CHECKING:
    from skillsight.store._store import Store

# -- scorecards and the CI gate (skillsight/api/scorecard.py, skillsight gate) --------------------
#
# The current row of each (activation, evaluator) of one skill: the newest evaluation, whatever
# evaluator version wrote it, joined to the activation's start (the newest rebuild of it) so
# windows and trends follow when the skill ran, not when it was scored. Only the columns the
# scorecard and the gate use go through the deduplication. A window is applied to both sides
# before deduplicating: a rebuild keeps an activation's start (the id is its trace's and start
# call's, the start that call's time), so no rebuild row of an activation is in a window that
# another is not. Production traffic only: a paired rerun's activations (rerun_id, migration
# 0017) are left out, as the read models never copy their rows.
_SKILL_EVALUATIONS = """
    SELECT e.activation_id AS activation_id, e.evaluator AS evaluator,
           e.evaluator_version AS evaluator_version, e.skill_version AS skill_version,
           e.score AS score, e.passed AS passed, e.label AS label,
           e.evaluated_at AS evaluated_at, a.session_id AS session_id, a.started_at AS started_at
    FROM (
        SELECT activation_id, evaluator, evaluator_version, skill_version, score, passed, label,
               evaluated_at
        FROM evaluations
        WHERE project_id = {project:String} AND skill_name = {skill:String}
          AND ({version:String} = '' OR skill_version = {version:String})
          AND ({since:Int64} = 0 OR activation_id IN (
            SELECT activation_id FROM activations
            WHERE project_id = {project:String} AND skill_name = {skill:String}
              AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')))
        ORDER BY activation_id, evaluator, evaluated_at DESC
        LIMIT 1 BY activation_id, evaluator
    ) AS e
    INNER JOIN (
        SELECT activation_id, session_id, started_at FROM activations
        WHERE project_id = {project:String} AND skill_name = {skill:String}
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND rerun_id = ''
        ORDER BY started_at, activation_id, rebuilt_at DESC
        LIMIT 1 BY activation_id
    ) AS a ON e.activation_id = a.activation_id"""

# The whole scorecard in one pass over the current rows (three queries read them three times):
# three grouping sets, told apart by `grouping()` (a bit per grouping column the set leaves
# out, as in standard SQL). Per skill version (SCORECARD_VERSIONS); per version and evaluator
# (SCORECARD_BY_VERSION); per UTC day the activations started on and evaluator
# (SCORECARD_TREND). In a set that names the evaluator an activation has one current row, so
# the row count is the activation count there.
SCORECARD_VERSIONS = 3
SCORECARD_BY_VERSION = 1
SCORECARD_TREND = 4
SCORECARD_VERSION_TREND = 0
SCORECARD = f"""
SELECT grouping(skill_version, evaluator, day) AS grouping_set,
       skill_version, evaluator, toString(toDate(started_at)) AS day,
       if(grouping_set = {SCORECARD_VERSIONS}, uniqExact(activation_id), count()) AS activations,
       toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us, {_SCORE_AGGREGATES}
FROM ({_SKILL_EVALUATIONS})
GROUP BY GROUPING SETS ((skill_version), (skill_version, evaluator), (day, evaluator),
                        (day, skill_version, evaluator))
ORDER BY grouping_set, day,
         if(grouping_set IN ({SCORECARD_TREND}, {SCORECARD_VERSION_TREND}), 0, last_started_us)
         DESC, skill_version, evaluator"""

# The current evaluations of a skill scoring below a bound (the gate's failing activations),
# newest activation first, without their texts: EVALUATION_TEXTS reads those for the few rows
# kept, rather than carrying every row's reason and findings through the deduplication.
_SKILL_EVALUATIONS_BELOW = f"""
SELECT activation_id, session_id, evaluator, evaluator_version, skill_version, score, passed,
       label, toUnixTimestamp64Micro(started_at) AS started_at_us,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM ({_SKILL_EVALUATIONS})
WHERE ({{evaluator:String}} = '' OR evaluator = {{evaluator:String}})
  AND score IS NOT NULL AND score < {{below:Float64}}
ORDER BY started_at_us DESC, activation_id, evaluator
LIMIT {{limit:UInt32}}"""

# Reason, evidence and findings of some evaluation rows of a skill, by their activations; the
# caller picks each row by (activation, evaluator, version, evaluated_at).
_EVALUATION_TEXTS = """
SELECT activation_id, evaluator, evaluator_version,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us, reason, evidence_step_ids,
       evidence_tool_call_ids, findings
FROM evaluations
WHERE project_id = {project:String} AND skill_name = {skill:String}
  AND activation_id IN {activations:Array(String)}
LIMIT 1 BY activation_id, evaluator, evaluator_version, evaluated_at"""

# Which part of a scorecard each grouping set of SCORECARD is, and its columns.
_SCORECARD_SETS = {
    SCORECARD_VERSIONS: "versions",
    SCORECARD_BY_VERSION: "by_version",
    SCORECARD_TREND: "trend",
    SCORECARD_VERSION_TREND: "version_trend",
}
_AGGREGATES = ("evaluations", "scored", "not_evaluated", "passed", "mean_score", "min_score")
_SCORECARD_COLUMNS: dict[str, tuple[str, ...]] = {
    "versions": ("skill_version", "activations", "first_started_us", "last_started_us"),
    "by_version": (
        "skill_version",
        "evaluator",
        "activations",
        "first_started_us",
        "last_started_us",
        *_AGGREGATES,
    ),
    "trend": ("day", "evaluator", "activations", *_AGGREGATES),
    "version_trend": ("day", "skill_version", "evaluator", "activations", *_AGGREGATES),
}
# Columns of an evaluations_below row, before and after its texts.
_BELOW_HEAD: tuple[str, ...] = (
    *("activation_id", "session_id", "evaluator", "evaluator_version", "skill_version"),
    *("score", "passed", "label"),
)
_BELOW_TEXTS = ("reason", "evidence_step_ids", "evidence_tool_call_ids", "findings")


def _evaluation_key(row: Mapping[str, Any]) -> tuple[str, str, str, int]:
    return (
        str(row["activation_id"]),
        str(row["evaluator"]),
        str(row["evaluator_version"]),
        int(row["evaluated_at_us"]),
    )


class Scorecards:
    """Aggregates over a skill's current evaluations."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.rollups = ScorecardRollups(store)
        """The read models (migration 0012) that :meth:`rows` and :meth:`below` read."""

    def rows(
        self, project_id: str, skill: str, *, version: str = "", since: datetime | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """A skill's scores aggregated in ClickHouse: ``versions`` (activations per skill
        version), ``by_version`` (per version and evaluator), ``trend`` (per UTC day and
        evaluator) and ``version_trend`` (per UTC day, version and evaluator: the web UI's
        per-version lines), over activations started since ``since``; each
        count/pass/mean/min. Read from the per-day read models once they hold every row
        (:mod:`._scorecard_reads`), else from the raw rows (:meth:`raw_rows`): the same rows."""
        if self.rollups.ready():
            states = self.rollups.day_states(project_id, skill, since_us=micros(since))
            return scorecard_rows(
                self._store, states, project_id, skill, version=version, since=since
            )
        return self.raw_rows(project_id, skill, version=version, since=since)

    def raw_rows(
        self, project_id: str, skill: str, *, version: str = "", since: datetime | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """:meth:`rows` computed from the ``evaluations`` and ``activations`` rows themselves
        (the definition the read models are tested against)."""
        params = {"project": project_id, "skill": skill, "version": version, "since": micros(since)}
        out: dict[str, list[dict[str, Any]]] = {
            "versions": [],
            "by_version": [],
            "trend": [],
            "version_trend": [],
        }
        for row in self._store.query(SCORECARD, params):
            kind = _SCORECARD_SETS[int(row["grouping_set"])]
            out[kind].append({column: row[column] for column in _SCORECARD_COLUMNS[kind]})
        return out

    def overview(
        self, project_id: str, *, since: datetime | None = None, read_models: bool | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """Every skill that ran since ``since``: ``skills`` (activations, failing ones, first and
        last start), ``evaluators`` (per skill and evaluator: count/pass/mean/min; the
        evaluator '' counts activations nobody scored) and ``days`` (per skill and UTC day:
        activations and failing ones). ``read_models``: read them (True) or the raw rows
        (False); None reads them once they are ready."""
        ready = self.rollups.ready() if read_models is None else read_models
        return skills_overview(self._store, project_id, micros(since), ready)

    def usage(
        self,
        project_id: str,
        skill: str,
        *,
        since: datetime | None = None,
        read_models: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Per UTC day and skill version, oldest first: a skill's production activations
        (the newest rebuild of each) and the sums of their cost (USD), tokens (input, output
        and cache), duration (ms) and internal tool calls. ``read_models``: read the day
        rollups (True) or the activations (False); None reads the rollups once they are ready.
        Either way the activations are read from their table until every day of it is marked
        or refreshed (``ScorecardRollups.activations_ready``). The same rows either way."""
        rollups = self.rollups
        ready = rollups.ready() if read_models is None else read_models
        if ready and rollups.activations_ready():
            states = rollups.day_states(project_id, skill, since_us=micros(since))
            return usage_rows(self._store, states, project_id, skill, since=since)
        params = {
            "project": project_id,
            "skill": skill,
            "since": micros(since),
            "all_days": True,
            "days": [],
        }
        return self._store.query(USAGE_ROWS, params)

    def below(
        self,
        project_id: str,
        skill: str,
        below: float,
        *,
        evaluator: str = "",
        version: str = "",
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """A skill's current evaluations scoring under ``below``, newest activation first
        (the gate's failing rows, with their reasons, cited steps and findings)."""
        if not self.rollups.ready():
            return self.raw_below(
                project_id,
                skill,
                below,
                evaluator=evaluator,
                version=version,
                since=since,
                limit=limit,
            )
        found = rows_below(
            self._store,
            self.rollups.day_states(project_id, skill, since_us=micros(since)),
            project_id,
            skill,
            below,
            evaluator=evaluator,
            version=version,
            since=since,
            limit=limit,
        )
        return self._with_texts(project_id, skill, found)

    def raw_below(
        self,
        project_id: str,
        skill: str,
        below: float,
        *,
        evaluator: str = "",
        version: str = "",
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """:meth:`below` computed from the raw rows themselves."""
        found = self._store.query(
            _SKILL_EVALUATIONS_BELOW,
            {
                "project": project_id,
                "skill": skill,
                "version": version,
                "since": micros(since),
                "evaluator": evaluator,
                "below": float(below),
                "limit": limit,
            },
        )
        return self._with_texts(project_id, skill, found)

    def _with_texts(
        self, project_id: str, skill: str, found: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        if not found:
            return []
        texts = {
            _evaluation_key(t): t
            for t in self._store.query(
                _EVALUATION_TEXTS,
                {
                    "project": project_id,
                    "skill": skill,
                    "activations": sorted({str(r["activation_id"]) for r in found}),
                },
            )
        }
        out = []
        for row in found:
            # a row rescored (and merged away) between the two reads has no texts left: the
            # next read shows its successor
            text = texts.get(_evaluation_key(row))
            if text is None:
                continue
            out.append(
                {
                    **{k: row[k] for k in _BELOW_HEAD},
                    **{k: text[k] for k in _BELOW_TEXTS},
                    "started_at_us": row["started_at_us"],
                    "evaluated_at_us": row["evaluated_at_us"],
                }
            )
        return out
