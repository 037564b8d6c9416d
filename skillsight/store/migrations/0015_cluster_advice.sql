-- A judge model's advice on a failure cluster (docs/clusters.md, "Advice"): a label in words, a
-- suggested fix and the layer it belongs to (SKILL.md description or body, allowed-tools, the
-- agent's prompt, integration), citing steps of an exemplar. Generated once per cluster and again
-- when the cluster changes materially (basis: its dominant cause and size class); the newest row
-- of a cluster is its advice. A failed call is a row too (error), so it is not retried each run.
CREATE TABLE IF NOT EXISTS cluster_advice
(
    project_id        LowCardinality(String),
    cluster_id        String,
    basis             String,
    label             String,
    fix               String CODEC(ZSTD(3)),
    layer             LowCardinality(String),
    cited_activation  String,
    cited_steps       Array(UInt32),
    model             LowCardinality(String),
    tokens            UInt64,
    cost_usd          Float64,
    error             String CODEC(ZSTD(3)),
    created_at        DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (project_id, cluster_id);
