-- The hour rollups of the scorecard read models: per (project, skill, UTC start day, hour) the
-- same rows a refresh writes per day into scorecard_days (kinds 1-4, their usage sums included),
-- written by the same refresh, under the same stamp, just before the day's rows. A window that
-- starts inside a day reads that first day's later hours here and only the rest of the hour it
-- starts in from the copied rows, where it read the whole rest of the day before
-- (docs/performance.md, "Scorecard queries"). A kind 0 row per day (hour 0) marks each refresh,
-- so a reader can tell that the hours of a day's newest refresh are all here.
CREATE TABLE IF NOT EXISTS scorecard_hours
(
    project_id     LowCardinality(String),
    skill_name     LowCardinality(String),
    day            Date,
    hour           UInt8,
    kind           UInt8,
    skill_version  LowCardinality(String),
    evaluator      LowCardinality(String),
    activations    UInt64,
    scored         UInt64,
    not_evaluated  UInt64,
    passed         UInt64,
    score_sum      Float64,
    score_min      Float64,
    first_started  DateTime64(6, 'UTC'),
    last_started   DateTime64(6, 'UTC'),
    cost_usd       Float64,
    tokens         UInt64,
    duration_ms    Float64,
    tool_calls     UInt64,
    refreshed_at   DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(refreshed_at)
ORDER BY (project_id, skill_name, day, hour, kind, skill_version, evaluator);
