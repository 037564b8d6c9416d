"""Read queries of the collector. Every one filters on project_id (tenancy) and deduplicates
with ``LIMIT 1 BY`` rather than ``FINAL``, which stays fast on large tables."""

from __future__ import annotations

SPAN_COLUMNS = """
    trace_id, span_id, parent_span_id, name, kind,
    toUnixTimestamp64Nano(start_time) AS start_time_unix_nano,
    toUnixTimestamp64Nano(end_time) AS end_time_unix_nano,
    status_code, status_message, service_name, scope_name, source_convention, operation,
    session_id, agent, model, tool_name, tool_call_id, skill_name, input, output,
    input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
    attributes, resource_attributes, span_events, links"""

LIST_SPANS = f"""
SELECT {SPAN_COLUMNS}
FROM (
    SELECT * FROM spans
    WHERE project_id = {{project:String}}
      AND ({{trace:String}} = '' OR trace_id = {{trace:String}})
      AND ({{session:String}} = '' OR session_id = {{session:String}})
    ORDER BY ingested_at DESC
    LIMIT 1 BY trace_id, span_id
)
ORDER BY start_time, span_id
LIMIT {{limit:UInt32}}"""

EVENT_COLUMNS = """
    record_id, toUnixTimestamp64Nano(timestamp) AS time_unix_nano, trace_id, span_id,
    severity_number, severity_text, event_name, body, service_name, scope_name,
    source_convention, session_id, prompt_id, skill_name, tool_name, tool_call_id, model,
    input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
    attributes, resource_attributes"""

LIST_EVENTS = f"""
SELECT {EVENT_COLUMNS}
FROM (
    SELECT * FROM events
    WHERE project_id = {{project:String}}
      AND ({{session:String}} = '' OR session_id = {{session:String}})
      AND ({{trace:String}} = '' OR trace_id = {{trace:String}})
      AND ({{event:String}} = '' OR event_name = {{event:String}})
    ORDER BY ingested_at DESC
    LIMIT 1 BY session_id, timestamp, record_id
)
ORDER BY time_unix_nano, record_id
LIMIT {{limit:UInt32}}"""

COUNT_SPANS = """
SELECT count() AS rows, uniqExact(trace_id, span_id) AS spans
FROM spans WHERE project_id = {project:String}"""

COUNT_EVENTS = """
SELECT count() AS rows, uniqExact(session_id, timestamp, record_id) AS events
FROM events WHERE project_id = {project:String}"""

# -- rebuilt activations and trajectories (collector/finalizer.py) -------------------------------
#
# A session's visible rebuild is the one with its newest trajectory stamp; activation rows of any
# other stamp are stale (see migration 0004) and every read below filters them out.

# Sessions (a session id, else the trace id) that got span or event rows since a point on the
# store's clock; a span without a session id joins the session of its trace when another span of
# that trace names one. Used by the finalizer, the only reader that spans projects.
TOUCHED_SESSIONS = """
SELECT t.project_id AS project,
       if(t.session_id != '', t.session_id,
          if(ts.trace_session != '', ts.trace_session, t.trace_id)) AS session_key,
       toUnixTimestamp64Micro(max(t.ingested_at)) AS last_ingested_us
FROM (
    SELECT project_id, trace_id, session_id, ingested_at
    FROM spans
    WHERE ingested_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC')
    UNION ALL
    SELECT project_id, trace_id, session_id, ingested_at
    FROM events
    WHERE ingested_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC')
) AS t
LEFT JOIN (
    SELECT project_id, trace_id, any(session_id) AS trace_session
    FROM spans
    WHERE session_id != '' AND trace_id IN (
        SELECT trace_id FROM spans
        WHERE ingested_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND session_id = ''
    )
    GROUP BY project_id, trace_id
) AS ts ON t.project_id = ts.project_id AND t.trace_id = ts.trace_id
GROUP BY project, session_key
HAVING session_key != ''
ORDER BY last_ingested_us"""

# The trace ids of some sessions, from their spans and events.
SESSION_TRACES = """
SELECT DISTINCT session_id, trace_id
FROM (
    SELECT session_id, trace_id FROM spans
    WHERE project_id = {project:String} AND session_id IN {sessions:Array(String)}
    UNION ALL
    SELECT session_id, trace_id FROM events
    WHERE project_id = {project:String} AND session_id IN {sessions:Array(String)}
      AND trace_id != ''
)
ORDER BY session_id, trace_id"""

# Rows of some sessions: by session id, by trace id (a sessionless trace is its own session),
# or through the traces SESSION_TRACES found.
SESSION_SPANS = f"""
SELECT {SPAN_COLUMNS}
FROM (
    SELECT * FROM spans
    WHERE project_id = {{project:String}}
      AND (session_id IN {{sessions:Array(String)}} OR trace_id IN {{sessions:Array(String)}}
           OR trace_id IN {{traces:Array(String)}})
    ORDER BY ingested_at DESC
    LIMIT 1 BY trace_id, span_id
)
ORDER BY start_time, span_id
LIMIT {{limit:UInt32}}"""

SESSION_EVENTS = f"""
SELECT {EVENT_COLUMNS}
FROM (
    SELECT * FROM events
    WHERE project_id = {{project:String}}
      AND (session_id IN {{sessions:Array(String)}} OR trace_id IN {{sessions:Array(String)}}
           OR (trace_id != '' AND trace_id IN {{traces:Array(String)}}))
    ORDER BY ingested_at DESC
    LIMIT 1 BY session_id, timestamp, record_id
)
ORDER BY time_unix_nano, record_id
LIMIT {{limit:UInt32}}"""

# Newest first. Candidates are narrowed to ids and stamps before any record is read, so a broad
# filter never decompresses more than `limit` records.
LIST_ACTIVATIONS = """
SELECT record
FROM activations
WHERE project_id = {project:String}
  AND (activation_id, rebuilt_at) IN (
    SELECT a.activation_id, a.rebuilt_at
    FROM (
        SELECT activation_id, session_id, started_at, rebuilt_at
        FROM activations
        WHERE project_id = {project:String}
          AND ({skill:String} = '' OR skill_name = {skill:String})
          AND ({session:String} = '' OR session_id = {session:String})
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
    ) AS a
    INNER JOIN (
        SELECT session_id, max(rebuilt_at) AS stamp
        FROM trajectories
        WHERE project_id = {project:String}
          AND ({session:String} = '' OR session_id = {session:String})
        GROUP BY session_id
    ) AS s ON a.session_id = s.session_id AND a.rebuilt_at = s.stamp
    ORDER BY a.started_at DESC, a.activation_id
    LIMIT 1 BY a.activation_id
    LIMIT {limit:UInt32}
  )
ORDER BY started_at DESC, activation_id
LIMIT 1 BY activation_id"""

GET_ACTIVATION = """
SELECT record
FROM activations
WHERE project_id = {project:String}
  AND activation_id = {id:String}
  AND (session_id, rebuilt_at) IN (
    SELECT session_id, max(rebuilt_at)
    FROM trajectories
    WHERE project_id = {project:String}
      AND session_id IN (
        SELECT session_id FROM activations
        WHERE project_id = {project:String} AND activation_id = {id:String}
      )
    GROUP BY session_id
  )
LIMIT 1"""

GET_TRAJECTORY = """
SELECT atif
FROM trajectories
WHERE project_id = {project:String} AND session_id = {session:String}
ORDER BY rebuilt_at DESC
LIMIT 1"""

# Sessions whose newest rows were ingested after their newest rebuild read them (or that were
# never rebuilt, or whose newest rebuild is unsettled: a service stopped without its final pass
# left it provisional): what a finalizer starting up, or a worker, still owes.
REBUILT_THROUGH = """
SELECT session_id,
       toUnixTimestamp64Micro(argMax(if(settled, ingested_through, toDateTime64(0, 6, 'UTC')),
                                     rebuilt_at)) AS through_us
FROM trajectories
WHERE project_id = {project:String} AND session_id IN {sessions:Array(String)}
GROUP BY session_id"""

# Every session key of a project (for `skillsight rebuild`).
LIST_SESSION_KEYS = """
SELECT DISTINCT if(trace_session != '', trace_session, trace_id) AS session_key
FROM (
    SELECT max(session_id) AS trace_session, trace_id FROM spans
    WHERE project_id = {project:String} GROUP BY trace_id
    UNION ALL
    SELECT session_id AS trace_session, trace_id FROM events WHERE project_id = {project:String}
)
WHERE session_key != ''
ORDER BY session_key
LIMIT {limit:UInt32}"""

# -- the skill catalogue (migration 0003) ---------------------------------------------------------

_SKILL_COLUMNS = """
    name, version, description, allowed_tools, allowed_tools_declared, scripts, source_uri,
    toUnixTimestamp64Micro(scanned_at) AS scanned_at_us"""

# Every (name, version) of a project's catalogue, newest scan first within a name.
LIST_SKILLS = f"""
SELECT {_SKILL_COLUMNS}
FROM (
    SELECT * FROM skills
    WHERE project_id = {{project:String}} AND ({{name:String}} = '' OR name = {{name:String}})
    ORDER BY scanned_at DESC
    LIMIT 1 BY name, version
)
ORDER BY name, scanned_at_us DESC, version
LIMIT {{limit:UInt32}}"""

# The most recently scanned version of each skill, with its procedure and frontmatter: the
# contract an activation is judged against when its own version is unknown.
SKILL_CONTRACTS = f"""
SELECT {_SKILL_COLUMNS}, body, frontmatter
FROM (
    SELECT * FROM skills
    WHERE project_id = {{project:String}}
    ORDER BY scanned_at DESC, version
    LIMIT 1 BY name
)
ORDER BY name"""

# Every recorded version of each skill, without the procedure: the catalogue a rebuild joins
# activations to by name and version. Within a name the latest comes first, as SKILL_CONTRACTS
# picks it (newest scan, then version).
SKILL_VERSIONS = f"""
SELECT {_SKILL_COLUMNS}
FROM (
    SELECT * FROM skills
    WHERE project_id = {{project:String}}
    ORDER BY scanned_at DESC, version
    LIMIT 1 BY name, version
)
ORDER BY name, scanned_at_us DESC, version"""

# -- evaluations (migration 0005) ---------------------------------------------------------------

# The newest row of each (evaluator, version) of one activation; reruns replaced older ones.
LIST_EVALUATIONS = """
SELECT project_id, activation_id, evaluator, evaluator_version, skill_name, skill_version,
       score, passed, label, reason, evidence_step_ids, evidence_tool_call_ids, findings, error,
       judge_model, tokens, cost_usd, latency_ms, activation_rebuilt_at,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM (
    SELECT * FROM evaluations
    WHERE project_id = {project:String} AND activation_id = {activation:String}
    ORDER BY evaluated_at DESC
    LIMIT 1 BY evaluator, evaluator_version
)
ORDER BY evaluator, evaluator_version"""

# What LLM judges spent since a moment, over every project (the daily spend cap is the
# service's). Replaced rows may be merged away, so this counts at least what was spent after them.
JUDGE_SPEND_SINCE = """
SELECT sum(cost_usd) AS spent
FROM evaluations
WHERE judge_model != '' AND evaluated_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')"""

# -- scorecards and the CI gate (skillsight/api/scorecard.py, skillsight gate) --------------------
#
# The current row of each (activation, evaluator) of one skill: the newest evaluation, whatever
# evaluator version wrote it, joined to the activation's start (the newest rebuild of it) so
# windows and trends follow when the skill ran, not when it was scored. Only the columns the
# scorecard and the gate use go through the deduplication. A window is applied to both sides
# before deduplicating: a rebuild keeps an activation's start (the id is its trace's and start
# call's, the start that call's time), so no rebuild row of an activation is in a window that
# another is not.
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
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
        ORDER BY started_at, activation_id, rebuilt_at DESC
        LIMIT 1 BY activation_id
    ) AS a ON e.activation_id = a.activation_id"""

_SCORE_AGGREGATES = """
       count() AS evaluations,
       countIf(score IS NOT NULL) AS scored,
       countIf(score IS NULL AND label != 'not_applicable') AS not_evaluated,
       countIf(passed = true) AS passed,
       avgIf(assumeNotNull(score), score IS NOT NULL) AS mean_score,
       minIf(assumeNotNull(score), score IS NOT NULL) AS min_score"""

# The whole scorecard in one pass over the current rows (three queries read them three times):
# three grouping sets, told apart by `grouping()` (a bit per grouping column the set leaves
# out, as in standard SQL). Per skill version (SCORECARD_VERSIONS); per version and evaluator
# (SCORECARD_BY_VERSION); per UTC day the activations started on and evaluator
# (SCORECARD_TREND). In a set that names the evaluator an activation has one current row, so
# the row count is the activation count there.
SCORECARD_VERSIONS = 3
SCORECARD_BY_VERSION = 1
SCORECARD_TREND = 4
SCORECARD = f"""
SELECT grouping(skill_version, evaluator, day) AS grouping_set,
       skill_version, evaluator, toString(toDate(started_at)) AS day,
       if(grouping_set = {SCORECARD_VERSIONS}, uniqExact(activation_id), count()) AS activations,
       toUnixTimestamp64Micro(min(started_at)) AS first_started_us,
       toUnixTimestamp64Micro(max(started_at)) AS last_started_us, {_SCORE_AGGREGATES}
FROM ({_SKILL_EVALUATIONS})
GROUP BY GROUPING SETS ((skill_version), (skill_version, evaluator), (day, evaluator))
ORDER BY grouping_set, day, if(grouping_set = {SCORECARD_TREND}, 0, last_started_us) DESC,
         skill_version, evaluator"""

# The current evaluations of a skill scoring below a bound (the gate's failing activations),
# newest activation first, without their texts: EVALUATION_TEXTS reads those for the few rows
# kept, rather than carrying every row's reason and findings through the deduplication.
SKILL_EVALUATIONS_BELOW = f"""
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
EVALUATION_TEXTS = """
SELECT activation_id, evaluator, evaluator_version,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us, reason, evidence_step_ids,
       evidence_tool_call_ids, findings
FROM evaluations
WHERE project_id = {project:String} AND skill_name = {skill:String}
  AND activation_id IN {activations:Array(String)}
LIMIT 1 BY activation_id, evaluator, evaluator_version, evaluated_at"""

# LIST_EVALUATIONS for several activations at once (a page of GET /api/v1/activations).
LIST_EVALUATIONS_OF = """
SELECT project_id, activation_id, evaluator, evaluator_version, skill_name, skill_version,
       score, passed, label, reason, evidence_step_ids, evidence_tool_call_ids, findings, error,
       judge_model, tokens, cost_usd, latency_ms, activation_rebuilt_at,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM (
    SELECT * FROM evaluations
    WHERE project_id = {project:String} AND activation_id IN {activations:Array(String)}
    ORDER BY evaluated_at DESC
    LIMIT 1 BY activation_id, evaluator, evaluator_version
)
ORDER BY activation_id, evaluator, evaluator_version"""

# Sessions whose settled rebuild was stored since a point on the stamps' clock, newest rebuild
# per session: what an evaluation worker (`skillsight eval worker`) owes scores. Like
# TOUCHED_SESSIONS it spans projects: it finds work, it serves no caller.
REBUILT_SESSIONS = """
SELECT project_id AS project, session_id,
       toUnixTimestamp64Micro(max(rebuilt_at)) AS rebuilt_us
FROM trajectories
WHERE rebuilt_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND settled
GROUP BY project_id, session_id
ORDER BY rebuilt_us"""
