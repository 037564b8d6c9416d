-- What LLM judges spent, one row per judgement that cost tokens, never replaced. The daily
-- spend cap read the evaluation rows, but a session rebuilt (its next prompt, late rows) is
-- scored again: the judge answers an unchanged activation from its cache, for nothing, and
-- that row replaces the one that paid, so once ClickHouse merged them the day's spend shrank.
-- Ordered by time: the cap asks what was spent since midnight UTC.
CREATE TABLE IF NOT EXISTS judge_spend
(
    spent_at       DateTime64(6, 'UTC'),
    project_id     LowCardinality(String),
    activation_id  String,
    evaluator      LowCardinality(String),
    judge_model    LowCardinality(String),
    tokens         UInt64,
    cost_usd       Float64
)
ENGINE = MergeTree
ORDER BY (spent_at, project_id, activation_id);
