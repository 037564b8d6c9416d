-- Rows the batch writer could not store: what ClickHouse refused about them, and the raw row
-- itself (the decoder's columns as JSON), so an operator can see, fix and replay them. The
-- writer bisects a failing INSERT down to the rows that fail on their own; only those land
-- here, and /healthz counts them. Ordered by project so each tenant's are read apart.
CREATE TABLE IF NOT EXISTS ingest_dead_letters
(
    project_id  LowCardinality(String),
    signal      LowCardinality(String),
    dead_at     DateTime64(3, 'UTC') DEFAULT now64(3),
    trace_id    String,
    item_id     String,
    reason      String CODEC(ZSTD(3)),
    row_json    String CODEC(ZSTD(3))
)
ENGINE = MergeTree
ORDER BY (project_id, dead_at, item_id);
