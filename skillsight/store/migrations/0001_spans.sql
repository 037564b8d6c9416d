-- Every normalized span. Retried exports carry the same (project_id, trace_id, span_id), so the
-- ReplacingMergeTree keeps one row per span; hot-path readers deduplicate with LIMIT 1 BY.
CREATE TABLE IF NOT EXISTS spans
(
    project_id            LowCardinality(String),
    trace_id              String,
    span_id               String,
    parent_span_id        String,
    name                  String,
    kind                  LowCardinality(String),
    start_time            DateTime64(9, 'UTC'),
    end_time              DateTime64(9, 'UTC'),
    status_code           LowCardinality(String),
    status_message        String CODEC(ZSTD(3)),
    service_name          LowCardinality(String),
    scope_name            LowCardinality(String),
    scope_version         LowCardinality(String),
    source_convention     LowCardinality(String),
    operation             LowCardinality(String),
    session_id            String,
    agent                 LowCardinality(String),
    model                 LowCardinality(String),
    tool_name             LowCardinality(String),
    tool_call_id          String,
    skill_name            LowCardinality(String),
    input                 String CODEC(ZSTD(3)),
    output                String CODEC(ZSTD(3)),
    input_tokens          UInt64,
    output_tokens         UInt64,
    cache_read_tokens     UInt64,
    cache_creation_tokens UInt64,
    cost_usd              Float64,
    attributes            Map(LowCardinality(String), String) CODEC(ZSTD(3)),
    resource_attributes   Map(LowCardinality(String), String) CODEC(ZSTD(3)),
    span_events           String CODEC(ZSTD(3)),
    links                 String CODEC(ZSTD(3)),
    ingested_at           DateTime64(6, 'UTC') DEFAULT now64(6),
    INDEX idx_session session_id TYPE bloom_filter GRANULARITY 4,
    INDEX idx_skill skill_name TYPE set(256) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(start_time)
ORDER BY (project_id, trace_id, span_id);
