-- OTLP log records. Claude Code reports skill activations, tool decisions and API requests as
-- log events. A log record has no id of its own, so record_id is a hash of its content: a
-- retried export yields the same row key and the ReplacingMergeTree keeps one.
CREATE TABLE IF NOT EXISTS events
(
    project_id            LowCardinality(String),
    record_id             String,
    timestamp             DateTime64(9, 'UTC'),
    observed_time         DateTime64(9, 'UTC'),
    trace_id              String,
    span_id               String,
    severity_number       UInt8,
    severity_text         LowCardinality(String),
    event_name            LowCardinality(String),
    body                  String CODEC(ZSTD(3)),
    service_name          LowCardinality(String),
    scope_name            LowCardinality(String),
    source_convention     LowCardinality(String),
    session_id            String,
    prompt_id             String,
    skill_name            LowCardinality(String),
    tool_name             LowCardinality(String),
    tool_call_id          String,
    model                 LowCardinality(String),
    input_tokens          UInt64,
    output_tokens         UInt64,
    cache_read_tokens     UInt64,
    cache_creation_tokens UInt64,
    cost_usd              Float64,
    attributes            Map(LowCardinality(String), String) CODEC(ZSTD(3)),
    resource_attributes   Map(LowCardinality(String), String) CODEC(ZSTD(3)),
    ingested_at           DateTime64(6, 'UTC') DEFAULT now64(6),
    INDEX idx_trace trace_id TYPE bloom_filter GRANULARITY 4
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(timestamp)
ORDER BY (project_id, session_id, timestamp, record_id);
