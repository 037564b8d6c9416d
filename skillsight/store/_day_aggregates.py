"""The statements a scorecard rollup is computed with: the current rows of some start days of
a skill, their per-day aggregates (read by scorecards as they are), and the refresh's per-hour
aggregates with the skills list's failing and activation counts beside them (the day rows a
refresh writes are their sums: ``_rollup_rows``).

``_rollups`` keeps the rollups exact with them; ``_scorecard_reads`` reads the same aggregates
from raw rows for the days that are not clean.
"""

from __future__ import annotations

# CURRENT_ROWS' parameters that keep every row of the days named.
EVERY_ROW = {"since": 0, "evaluator": "", "raw_hours": []}

# The copied rows of some start days and hours (counted from the epoch: ``WindowPlan``).
DAYS_AND_HOURS = """(toDate(started_at) IN {days:Array(Date)}
           OR intDiv(toUnixTimestamp64Micro(started_at), 3600000000) IN {raw_hours:Array(Int64)})"""

# The current row of each (activation, evaluator) of some start days of a skill. The table's
# key is (skill, start, activation, evaluator) and its version evaluated_at, so FINAL keeps the
# newest row of each (an activation has one start): 5x cheaper than sorting the rows for
# LIMIT 1 BY. Only key columns are filtered before FINAL merges the rows.
CURRENT_ROWS = f"""
    SELECT activation_id, evaluator, evaluator_version, skill_version, score, passed, label,
           started_at, evaluated_at
    FROM scorecard_rows FINAL
    WHERE project_id = {{project:String}} AND skill_name = {{skill:String}}
      AND {DAYS_AND_HOURS}
      AND started_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
      AND ({{evaluator:String}} = '' OR evaluator = {{evaluator:String}})"""


def _day_aggregates(
    extra: str = "", rows: str = CURRENT_ROWS, *, per_skill_hour: bool = False
) -> str:
    """Per day (``per_skill_hour``: per skill and hour of each day, ``skill_name`` before and
    ``hour`` after ``day``) the kind 1 and 2 rows."""
    head = (
        "skill_name, toDate(started_at) AS day, toHour(started_at) AS hour"
        if per_skill_hour
        else "toDate(started_at) AS day"
    )
    bucket = "skill_name, day, hour" if per_skill_hour else "day"
    return f"""
SELECT {head}, if(grouping(evaluator) = 1, 1, 2) AS kind,
       skill_version, evaluator, if(kind = 1, uniqExact(activation_id), count()) AS activations,
       countIf(score IS NOT NULL) AS scored,
       countIf(score IS NULL AND label != 'not_applicable') AS not_evaluated,
       countIf(passed = true) AS passed,
       sumIf(assumeNotNull(score), score IS NOT NULL) AS score_sum,
       minIf(assumeNotNull(score), score IS NOT NULL) AS score_min,
       min(started_at) AS first_started, max(started_at) AS last_started{extra}
FROM ({rows})
GROUP BY GROUPING SETS (({bucket}, skill_version), ({bucket}, skill_version, evaluator))"""


# Per day: per skill version the distinct activations (kind 1), per version and evaluator the
# counts and sums of the current rows (kind 2).
DAY_AGGREGATES = _day_aggregates()

ROLLUP_FORMAT = 4
"""What a refresh writes, carried in its marker row's ``activations``: 1 adds, per day and
skill version, the distinct activations with a failing current row (kind 3, the skills list's
failing count); 2 adds, per day and skill version, the current production activations, scored
or not, and their first and last start (kind 4, from the ``activations`` table); 3 adds to
kind 4 the sums of their cost, tokens, duration and internal tool calls (the skill page's
usage charts, migration 0021); 4 writes the same rows per hour of each day into
``scorecard_hours`` (migration 0022), under the same stamp, before the day's rows. A day
refreshed in a format older than :data:`CLEAN_FORMAT` is not clean: it is read from the rows
and refreshed again."""

CLEAN_FORMAT = 3
"""The oldest format whose day rows readers take (format 4 added hours, not day rows, so a day
refreshed in format 3 stays clean; only its hours are missing: :data:`HOURLY_FORMAT`)."""

HOURLY_FORMAT = 4
"""The oldest format whose refresh wrote the day's hour rows (``scorecard_hours``)."""

# A refresh's cells: (skill, start day) pairs of a project, each named by the skill's name and
# the day's ISO text, which is always 10 characters long, so no two pairs share a name; and
# (skill, start day, hour) triples, named the same with the hour's two digits after.
CELL = "concat(skill_name, toString(toDate(started_at)))"
HOUR_CELL = f"concat({CELL}, leftPad(toString(toHour(started_at)), 2, '0'))"
# The rows of some cells: the skills and the cells' days and hours (DAYS_AND_HOURS: ``days``,
# ``raw_hours``) filter the key before FINAL, the names pick the cells among them.
_CELLS = f"""skill_name IN {{skills:Array(String)}} AND {DAYS_AND_HOURS}
      AND ({CELL} IN {{cells:Array(String)}} OR {HOUR_CELL} IN {{hour_cells:Array(String)}})"""

# The current row of each (activation, evaluator) of some cells, as CURRENT_ROWS reads one
# skill's days.
_CELL_ROWS = f"""
    SELECT skill_name, activation_id, evaluator, evaluator_version, skill_version, score, passed,
           label, started_at, evaluated_at
    FROM scorecard_rows FINAL
    WHERE project_id = {{project:String}} AND {_CELLS}"""

# The refresh's kind 1 and 2 rows with, beside each kind 1 row, its kind 3 row (one pass over
# the rows).
_FAILING = ", uniqExactIf(activation_id, failed) AS failing"
_FAILED_ROWS = f"SELECT *, ifNull(passed = false, false) AS failed FROM ({_CELL_ROWS})"
# The usage sums' columns, 0 on every row but kind 4's (the first SELECT of a UNION names its
# columns).
_USAGE_NAMES = (
    "toFloat64(0) AS cost_usd, toUInt64(0) AS tokens, toFloat64(0) AS duration_ms, "
    "toUInt64(0) AS tool_calls"
)


_REFRESH_AGGREGATES = f"""
SELECT skill_name, toString(day) AS day, hour, kind_row.1 AS row_kind, skill_version, evaluator,
       kind_row.2 AS row_activations, if(row_kind = 3, 0, scored) AS row_scored,
       if(row_kind = 3, 0, not_evaluated) AS row_not_evaluated,
       if(row_kind = 3, 0, passed) AS row_passed, if(row_kind = 3, 0, score_sum) AS row_score_sum,
       if(row_kind = 3, 0, score_min) AS row_score_min,
       toUnixTimestamp64Micro(first_started) AS first_us,
       toUnixTimestamp64Micro(last_started) AS last_us, {_USAGE_NAMES}
FROM ({_day_aggregates(_FAILING, _FAILED_ROWS, per_skill_hour=True)})
ARRAY JOIN if(kind = 1, [(1, activations), (3, failing)], [(2, activations)]) AS kind_row"""


# What a skill's production activations cost per day and skill version, from a selection of
# their newest rows: the skill page's usage charts, read from kind 4 rows or from the rows.
USAGE_SUMS = """sum(cost_usd) AS cost_usd,
       sum(input_tokens + output_tokens + cache_read_tokens + cache_creation_tokens) AS tokens,
       sum(duration_ms) AS duration_ms, sum(tool_call_count) AS tool_calls"""


# Per skill, hour and skill version of some cells: the production activations (their newest row
# each: FINAL, the key holds the start, which a rebuild keeps), scored or not, and what they
# cost (kind 4).
_ACTIVATION_HOURS = f"""
SELECT skill_name, toString(toDate(started_at)) AS day, toHour(started_at) AS hour, 4,
       skill_version, '', count(), 0, 0, 0, 0, 0, toUnixTimestamp64Micro(min(started_at)),
       toUnixTimestamp64Micro(max(started_at)), {USAGE_SUMS}
FROM activations FINAL
WHERE project_id = {{project:String}} AND {_CELLS} AND rerun_id = ''
GROUP BY skill_name, day, hour, skill_version
SETTINGS do_not_merge_across_partitions_select_final = 1"""

# What a refresh computes: per skill and hour of some cells of a project (whole days, or some
# hours of them), their rows of every kind but the marker (the day rows are their sums:
# ``_rollup_rows``).
REFRESH_HOURS = f"""
{_REFRESH_AGGREGATES}
UNION ALL
SELECT * FROM ({_ACTIVATION_HOURS})"""

# The hour rows of some refreshes (each named by skill, day and stamp in µs), the marker rows
# with them: a refresh of some hours of a day takes the others from its newest refresh.
STAMPED_HOURS = """
SELECT skill_name, toString(day) AS day, hour, kind AS row_kind, skill_version, evaluator,
       activations AS row_activations, scored AS row_scored, not_evaluated AS row_not_evaluated,
       passed AS row_passed, score_sum AS row_score_sum, score_min AS row_score_min,
       toUnixTimestamp64Micro(first_started) AS first_us,
       toUnixTimestamp64Micro(last_started) AS last_us, cost_usd, tokens, duration_ms, tool_calls
FROM (
    SELECT * FROM scorecard_hours
    WHERE project_id = {project:String} AND skill_name IN {skills:Array(String)}
      AND day IN {days:Array(Date)}
      AND concat(skill_name, toString(day), toString(toUnixTimestamp64Micro(refreshed_at)))
          IN {stamped:Array(String)}
    LIMIT 1 BY skill_name, day, hour, kind, skill_version, evaluator
)"""

# A refresh row's columns as REFRESH_HOURS names them, in the order of the rollup tables'.
REFRESH_COLUMNS = (
    "skill_name",
    "day",
    "hour",
    "row_kind",
    "skill_version",
    "evaluator",
    "row_activations",
    "row_scored",
    "row_not_evaluated",
    "row_passed",
    "row_score_sum",
    "row_score_min",
    "first_us",
    "last_us",
    "cost_usd",
    "tokens",
    "duration_ms",
    "tool_calls",
)
ROLLUP_SUMS = (
    "row_activations",
    "row_scored",
    "row_not_evaluated",
    "row_passed",
    "tokens",
    "tool_calls",
)
ROLLUP_FLOAT_SUMS = ("row_score_sum", "cost_usd", "duration_ms")
"""A rollup row's counts and float sums (besides its key, ``score_min``, ``first_us`` and
``last_us``): a day's are its hours' sums."""
