-- Failure clusters (docs/clusters.md). Five tables:
--
-- failures         each failing activation's failure text and its embedding, computed once per
--                  version of its failing evaluations (source_key) and read by every run
-- cluster_members  which cluster each failing activation belongs to ('' = novel), written for
--                  every failure of the window by a run, and by online assignment in between,
--                  an activation's newest row is its membership
-- clusters         one row per cluster and run: label, facts, counts, exemplars, centroid
-- cluster_status   the lifecycle as a log (new / acknowledged / resolved / regressed)
-- cluster_runs     one row per run, written last: the run's commit marker
--
-- started_at is a function of the activation, so partitions by it never separate two rows of
-- one key (ReplacingMergeTree replaces within a partition only).
CREATE TABLE IF NOT EXISTS failures
(
    project_id            LowCardinality(String),
    activation_id         String,
    source_key            String,
    session_id            String,
    skill_name            LowCardinality(String),
    skill_version         String,
    started_at            DateTime64(6, 'UTC'),
    evaluators            Array(LowCardinality(String)),
    kinds                 Array(String),
    severity              LowCardinality(String),
    text                  String CODEC(ZSTD(3)),
    model                 LowCardinality(String),
    -- little-endian half floats, L2-normalized
    embedding             String,
    computed_at           DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (project_id, activation_id);

CREATE TABLE IF NOT EXISTS cluster_members
(
    project_id            LowCardinality(String),
    activation_id         String,
    cluster_id            String,
    run_id                String,
    -- run: written by a run; online: joined between runs (counted on top of the run's facts),
    -- online_known: joined again between runs after a rescore (the run counted it already)
    assigned_by           LowCardinality(String),
    distance              Float32,
    session_id            String,
    skill_name            LowCardinality(String),
    skill_version         String,
    started_at            DateTime64(6, 'UTC'),
    assigned_at           DateTime64(6, 'UTC'),
    INDEX idx_cluster cluster_id TYPE bloom_filter GRANULARITY 1,
    INDEX idx_assigned assigned_at TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree(assigned_at)
PARTITION BY toYYYYMM(started_at)
ORDER BY (project_id, activation_id);

CREATE TABLE IF NOT EXISTS clusters
(
    project_id              LowCardinality(String),
    cluster_id              String,
    run_id                  String,
    active                  Bool,
    label                   String,
    terms                   Array(String),
    evaluator               LowCardinality(String),
    kind                    String,
    severity                LowCardinality(String),
    size                    UInt32,
    sessions                UInt32,
    skills                  Array(String),
    versions                Array(String),
    first_bad_version       String,
    first_seen              DateTime64(6, 'UTC'),
    last_seen               DateTime64(6, 'UTC'),
    -- members per hour over the 48 hours, and per day over the window, ending at counted_at
    hourly                  Array(UInt32),
    daily                   Array(UInt32),
    counted_at              DateTime64(6, 'UTC'),
    -- JSON objects: members per failing evaluator, and per evaluator:kind
    evaluators              String,
    kinds                   String,
    exemplar_activation_ids Array(String),
    -- packed vectors (as failures.embedding) that online assignment compares with
    exemplars               Array(String),
    centroid                String,
    split_from              String,
    merged_into             String,
    updated_at              DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (project_id, cluster_id);

CREATE TABLE IF NOT EXISTS cluster_status
(
    project_id      LowCardinality(String),
    cluster_id      String,
    status          LowCardinality(String),
    assignee        String,
    note            String CODEC(ZSTD(3)),
    resolved_at     DateTime64(6, 'UTC'),
    changed_by      LowCardinality(String),
    changed_at      DateTime64(6, 'UTC')
)
ENGINE = MergeTree
ORDER BY (project_id, cluster_id, changed_at);

CREATE TABLE IF NOT EXISTS cluster_runs
(
    project_id      LowCardinality(String),
    run_id          String,
    started_at      DateTime64(6, 'UTC'),
    finished_at     DateTime64(6, 'UTC'),
    window_start    DateTime64(6, 'UTC'),
    failures        UInt32,
    clusters        UInt32,
    novel           UInt32,
    kept_share      Float64,
    summary         String CODEC(ZSTD(3))
)
ENGINE = MergeTree
ORDER BY (project_id, started_at, run_id);

-- Online assignment asks "which evaluations failed since t" a few times a second; parts are
-- written in time order, so a min-max index on evaluated_at skips every older part.
ALTER TABLE evaluations ADD INDEX IF NOT EXISTS idx_evaluated evaluated_at TYPE minmax GRANULARITY 1;
