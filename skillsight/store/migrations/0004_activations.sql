-- Rebuilt skill activations and ATIF trajectories, one rebuild of a session at a time.
--
-- Every rebuild of a session writes all of its activation rows and then one trajectory row, all
-- carrying the same rebuilt_at stamp. The trajectory row is the session's commit marker: readers
-- show only the activation rows whose stamp equals the session's latest trajectory stamp, so a
-- rebuild that finds fewer activations than the one before leaves no stale row visible, and a
-- half-written rebuild stays invisible until its trajectory row lands.
CREATE TABLE IF NOT EXISTS activations
(
    project_id            LowCardinality(String),
    activation_id         String,
    session_id            String,
    trace_id              String,
    skill_name            LowCardinality(String),
    skill_version         String,
    trigger               LowCardinality(String),
    started_at            DateTime64(6, 'UTC'),
    ended_at              DateTime64(6, 'UTC'),
    duration_ms           Float64,
    agent                 LowCardinality(String),
    outcome               LowCardinality(String),
    tool_call_count       UInt32,
    input_tokens          UInt64,
    output_tokens         UInt64,
    cache_read_tokens     UInt64,
    cache_creation_tokens UInt64,
    cost_usd              Float64,
    record                String CODEC(ZSTD(3)),
    rebuilt_at            DateTime64(6, 'UTC'),
    INDEX idx_activation activation_id TYPE bloom_filter GRANULARITY 1,
    INDEX idx_session session_id TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplacingMergeTree(rebuilt_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (project_id, skill_name, started_at, activation_id);

CREATE TABLE IF NOT EXISTS trajectories
(
    project_id        LowCardinality(String),
    session_id        String,
    agent             LowCardinality(String),
    step_count        UInt32,
    activation_count  UInt32,
    atif              String CODEC(ZSTD(3)),
    -- newest ingested_at among the rows the rebuild read (the store's clock): a session whose
    -- rows were ingested after it needs rebuilding again
    ingested_through  DateTime64(6, 'UTC'),
    rebuilt_at        DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(rebuilt_at)
ORDER BY (project_id, session_id);

-- The trace finalizer asks "which sessions got rows since t"; parts are written in ingestion
-- order, so a min-max index on ingested_at skips every older part.
ALTER TABLE spans ADD INDEX IF NOT EXISTS idx_ingested ingested_at TYPE minmax GRANULARITY 1;

ALTER TABLE events ADD INDEX IF NOT EXISTS idx_ingested ingested_at TYPE minmax GRANULARITY 1;
