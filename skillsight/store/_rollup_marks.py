"""The statements of the scorecard read models' write path: each evaluation row written copied
narrow, with its activation's start, into ``scorecard_rows``, then its (skill, start day, hour)
marked; each production activation a rebuild writes marked the same; whole days marked
(``ScorecardRollups.mark``, the days of activations never refreshed). ``_rollups`` runs them."""

from __future__ import annotations

import pyarrow as pa

_STR = pa.string()
COPY = pa.schema(
    [
        ("project_id", _STR),
        ("skill_name", _STR),
        ("started_us", pa.int64()),
        ("started_text", _STR),
        ("activation_id", _STR),
        ("evaluator", _STR),
        ("evaluator_version", _STR),
        ("skill_version", _STR),
        ("score", pa.float64()),
        ("passed", pa.bool_()),
        ("label", _STR),
        ("evaluated_at_us", pa.int64()),
    ]
)
# The columns taken as they are from an ``evaluations`` batch.
COPIED = frozenset(COPY.names) - {"project_id", "started_us", "started_text"}
COPY_COLUMNS = [
    "project_id",
    "skill_name",
    "started_at",
    "activation_id",
    "evaluator",
    "evaluator_version",
    "skill_version",
    "score",
    "passed",
    "label",
    "evaluated_at",
]
# The start as the activations table stores it: the record's text, parsed the same way
# (_rebuild_rows.py), else the start looked up there.
_STARTED = (
    "if(started_text != '', parseDateTime64BestEffortOrZero(started_text, 6, 'UTC'), "
    "fromUnixTimestamp64Micro(started_us, 'UTC'))"
)
COPY_SELECT = (
    f"project_id, skill_name, {_STARTED}, activation_id, "
    "evaluator, evaluator_version, skill_version, score, passed, label, "
    "fromUnixTimestamp64Micro(evaluated_at_us, 'UTC')"
)
# A mark per (skill, start day, hour) of the rows (the table keeps one per hour; the rows of a
# batch name a few dozen: DISTINCT spares writing and merging thousands), ``now64`` being one
# moment for the whole statement.
MARK_COLUMNS = ["project_id", "skill_name", "day", "hour", "marked_at"]
MARK_SELECT = f"DISTINCT project_id, skill_name, toDate({_STARTED}), toHour({_STARTED}), now64(6)"
COPY_STRUCTURE = (
    "project_id String, skill_name String, started_us Int64, started_text String, "
    "activation_id String, "
    "evaluator String, evaluator_version String, skill_version String, "
    "score Nullable(Float64), passed Nullable(Bool), label String, evaluated_at_us Int64"
)

# The start of each activation as the scorecard joins it: the activation's earliest stored
# start (a rebuild keeps it; see _scorecards.py).
STARTS = """
SELECT activation_id, toUnixTimestamp64Micro(min(started_at)) AS started_us
FROM activations
WHERE project_id = {project:String} AND skill_name IN {skills:Array(String)}
  AND activation_id IN {ids:Array(String)}
GROUP BY activation_id"""

MARK_DAYS = """
INSERT INTO scorecard_marks (project_id, skill_name, day, marked_at)
SELECT {project:String}, {skill:String}, arrayJoin({days:Array(Date)}), now64(6)"""

# The (skill, start day, hour) of every activation row written, from a rebuild's batch.
_ACTIVATION_START = "parseDateTime64BestEffortOrZero(started_at, 6, 'UTC')"
ACTIVATION_MARK_SELECT = (
    f"DISTINCT project_id, skill_name, toDate({_ACTIVATION_START}), "
    f"toHour({_ACTIVATION_START}), now64(6)"
)
ACTIVATION_MARK_STRUCTURE = "project_id String, skill_name String, started_at String"
# Every (project, skill, start day) of the activations table never refreshed (a day refreshed
# in an older format is refreshed again anyway).
MARK_UNREFRESHED_ACTIVATION_DAYS = """
INSERT INTO scorecard_marks (project_id, skill_name, day, marked_at)
SELECT project_id, skill_name, day, now64(6)
FROM (SELECT DISTINCT project_id, skill_name, toDate(started_at) AS day FROM activations)
WHERE (project_id, skill_name, day) NOT IN (
    SELECT project_id, skill_name, day FROM scorecard_days WHERE kind = 0)"""
