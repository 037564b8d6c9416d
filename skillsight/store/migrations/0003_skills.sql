-- The skill catalogue: one row per (project, skill name, content version), written by
-- `skillsight skills scan --store`. Activations join it by name and version to learn the
-- contract a skill declared (description, allowed-tools) when it ran. A re-scan of an unchanged
-- skill writes the same key with a newer scanned_at and the ReplacingMergeTree keeps that one.
CREATE TABLE IF NOT EXISTS skills
(
    project_id             LowCardinality(String),
    name                   String,
    version                String,
    description            String CODEC(ZSTD(3)),
    -- the declared patterns; allowed_tools_declared = 0 means no allowed-tools key at all
    -- (unconstrained), which an empty array alone could not tell from "allows nothing"
    allowed_tools          Array(String),
    allowed_tools_declared Bool,
    scripts                Array(String),
    source_uri             String,
    body                   String CODEC(ZSTD(3)),
    frontmatter            String CODEC(ZSTD(3)),
    scanned_at             DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(scanned_at)
ORDER BY (project_id, name, version);
