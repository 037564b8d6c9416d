-- Read models that keep scorecards and the gate fast over millions of activations
-- (docs/performance.md, "Scorecard queries"). Four tables, all written by the store alone:
--
-- scorecard_rows   the narrow columns of every evaluation row a scorecard reads, with the start
--                  of the activation it scored, in start order: a window of a skill is a range
--                  of this table, where the same rows in `evaluations` (ordered by activation
--                  id) are spread over the whole skill. Written with every evaluation row.
-- scorecard_marks  (project, skill, UTC start day) whose rows changed, and when: written after
--                  the rows, so a day marked before a refresh began is in that refresh.
-- scorecard_days   per (project, skill, day): per skill version the distinct activations scored,
--                  and per version and evaluator the counts and sums of the current rows. Every
--                  refresh of a day writes all of its rows and a marker row (kind 0) with one
--                  stamp; readers take the rows of a day's newest stamp, so a (version,
--                  evaluator) that a refresh no longer finds is not read.
-- read_models      which read models hold every row of their source ('scorecards', of every
--                  project, once the rows written before this migration have been copied).
--
-- started_at is a function of the activation, so partitions by it never separate two rows of
-- one key (ReplacingMergeTree replaces within a partition only).
CREATE TABLE IF NOT EXISTS scorecard_rows
(
    project_id         LowCardinality(String),
    skill_name         LowCardinality(String),
    started_at         DateTime64(6, 'UTC'),
    activation_id      String,
    evaluator          LowCardinality(String),
    evaluator_version  LowCardinality(String),
    skill_version      LowCardinality(String),
    score              Nullable(Float64),
    passed             Nullable(Bool),
    label              LowCardinality(String),
    evaluated_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(evaluated_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (project_id, skill_name, started_at, activation_id, evaluator);

CREATE TABLE IF NOT EXISTS scorecard_marks
(
    project_id   LowCardinality(String),
    skill_name   LowCardinality(String),
    day          Date,
    marked_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(marked_at)
ORDER BY (project_id, skill_name, day);

CREATE TABLE IF NOT EXISTS scorecard_days
(
    project_id     LowCardinality(String),
    skill_name     LowCardinality(String),
    day            Date,
    -- 0: the refresh's marker; 1: per skill version; 2: per skill version and evaluator
    kind           UInt8,
    skill_version  LowCardinality(String),
    evaluator      LowCardinality(String),
    -- kind 1: distinct activations; kind 2: current rows (one per activation)
    activations    UInt64,
    scored         UInt64,
    not_evaluated  UInt64,
    passed         UInt64,
    score_sum      Float64,
    score_min      Float64,
    first_started  DateTime64(6, 'UTC'),
    last_started   DateTime64(6, 'UTC'),
    refreshed_at   DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(refreshed_at)
ORDER BY (project_id, skill_name, day, kind, skill_version, evaluator);

CREATE TABLE IF NOT EXISTS read_models
(
    -- '' for a read model of every project
    project_id  LowCardinality(String),
    name        LowCardinality(String),
    ready_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(ready_at)
ORDER BY (project_id, name);
