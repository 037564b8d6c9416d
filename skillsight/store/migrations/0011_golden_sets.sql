-- Golden sets and paired reruns (docs/golden-sets.md). Four tables:
--
-- golden_sets   one row per version of a set: a set is versioned, every change writes version+1
-- golden_cases  the cases of each version (a version holds all of its cases, so a run can name
--               the version it replayed and read exactly those cases back)
-- runs          one row per paired rerun, replaced as it progresses (status, counts) and when
--               it finishes (its report as JSON)
-- run_results   one row per (run, case, condition, attempt), written as each run ends; a rerun
--               resumed after a kill skips the keys that have a row
--
-- Sets and runs are small (hundreds to thousands of rows per version or run), so no
-- partitioning; every sorting key starts with the project.
CREATE TABLE IF NOT EXISTS golden_sets
(
    project_id     LowCardinality(String),
    set_id         String,
    version        UInt32,
    skill_name     LowCardinality(String),
    name           String,
    description    String CODEC(ZSTD(3)),
    defaults       String CODEC(ZSTD(3)),
    note           String CODEC(ZSTD(3)),
    case_count     UInt32,
    created_at     DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (project_id, set_id, version);

CREATE TABLE IF NOT EXISTS golden_cases
(
    project_id            LowCardinality(String),
    set_id                String,
    version               UInt32,
    position              UInt32,
    case_id               String,
    status                LowCardinality(String),
    -- the case as JSON (question, ground truth, expectations, files, tags, provenance)
    record                String CODEC(ZSTD(3)),
    activation_id         String,
    cluster_id            String,
    created_at            DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (project_id, set_id, version, case_id);

CREATE TABLE IF NOT EXISTS runs
(
    project_id     LowCardinality(String),
    run_id         String,
    skill_name     LowCardinality(String),
    skill_version  String,
    set_id         String,
    set_version    UInt32,
    status         LowCardinality(String),
    config         String CODEC(ZSTD(3)),
    planned        UInt32,
    finished       UInt32,
    report         String CODEC(ZSTD(3)),
    started_at     DateTime64(6, 'UTC'),
    updated_at     DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (project_id, run_id);

CREATE TABLE IF NOT EXISTS run_results
(
    project_id        LowCardinality(String),
    run_id            String,
    case_id           String,
    condition         LowCardinality(String),
    attempt           UInt16,
    -- ok | timeout | agent_error | no_telemetry | unscored
    status            LowCardinality(String),
    session_ids       Array(String),
    activation_ids    Array(String),
    skill_invoked     Bool,
    security          Nullable(Float64),
    skill_execution   Nullable(Float64),
    skill_efficiency  Nullable(Float64),
    accuracy          Nullable(Float64),
    goal_accuracy     Nullable(Float64),
    behavior_check    Nullable(Float64),
    overall           Nullable(Float64),
    passed            Nullable(Bool),
    tokens            UInt64,
    cost_usd          Float64,
    duration_ms       Float64,
    exit_code         Int32,
    answer            String CODEC(ZSTD(3)),
    -- per metric: why it has its value or none (JSON object)
    reasons           String CODEC(ZSTD(3)),
    error             String CODEC(ZSTD(3)),
    started_at        DateTime64(6, 'UTC'),
    finished_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(finished_at)
ORDER BY (project_id, run_id, case_id, condition, attempt);
