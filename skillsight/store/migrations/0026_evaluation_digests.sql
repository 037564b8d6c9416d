-- What each activation's evaluations scored, narrow and in small granules: per (activation,
-- evaluator, version) the activation's digest, the digest of what the evaluator was shown and
-- what it compared the activation with, written by every evaluation write after its rows. The
-- evaluation scheduler asks this for every batch it is handed (an activation handed over again
-- with the same inputs keeps its rows). In `evaluations` a look-up of one activation reads a
-- granule of 8,192 rows of the wide table: at 10M activations (71M rows) 125 ms of CPU for 100
-- activations, more than scoring them; here 256 rows a granule, 30 ms (docs/evaluators.md).
-- Readers use it once it holds every row (`read_models` 'evaluation_digests'): the read model
-- refresher copies the rows written before it existed. The digests are hex, which LZ4 barely
-- compresses: ZSTD stores them in about half (19.5 MB against 30.7 for 700,000 rows).
CREATE TABLE IF NOT EXISTS evaluation_digests
(
    project_id          LowCardinality(String),
    skill_name          LowCardinality(String),
    activation_id       String,
    evaluator           LowCardinality(String),
    evaluator_version   LowCardinality(String),
    activation_digest   String CODEC(ZSTD(1)),
    inputs_hash         String CODEC(ZSTD(1)),
    compared_with       String CODEC(ZSTD(3)),
    evaluated_at        DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(evaluated_at)
ORDER BY (project_id, skill_name, activation_id, evaluator, evaluator_version)
SETTINGS index_granularity = 256;
