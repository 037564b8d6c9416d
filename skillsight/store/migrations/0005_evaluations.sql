-- One row per (activation, evaluator, evaluator version). Rerunning an evaluator writes the same
-- key again and the ReplacingMergeTree keeps the newest row (by evaluated_at), so reruns replace
-- rather than duplicate; readers deduplicate with LIMIT 1 BY on the key. skill_name leads the
-- sorting key after the project so per-skill scorecards read a contiguous range; it is a
-- function of the activation, so it does not change what counts as one row. No partitioning by
-- time: rows of one key must meet in one partition to replace each other.
CREATE TABLE IF NOT EXISTS evaluations
(
    project_id             LowCardinality(String),
    activation_id          String,
    evaluator              LowCardinality(String),
    evaluator_version      LowCardinality(String),
    skill_name             LowCardinality(String),
    skill_version          String,
    score                  Nullable(Float64),
    passed                 Nullable(Bool),
    label                  LowCardinality(String),
    reason                 String CODEC(ZSTD(3)),
    evidence_step_ids      Array(UInt32),
    evidence_tool_call_ids Array(String),
    findings               String CODEC(ZSTD(3)),
    error                  String CODEC(ZSTD(3)),
    judge_model            LowCardinality(String),
    tokens                 UInt64,
    cost_usd               Float64,
    latency_ms             Float64,
    evaluated_at           DateTime64(6, 'UTC'),
    INDEX idx_activation activation_id TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplacingMergeTree(evaluated_at)
ORDER BY (project_id, skill_name, activation_id, evaluator, evaluator_version);
