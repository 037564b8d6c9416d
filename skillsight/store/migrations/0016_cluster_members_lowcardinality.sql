-- A cluster's member page filters cluster_members on cluster_id over every member row of the
-- project (rows are sorted by activation, so no index can skip them). A project has hundreds to
-- a few thousand cluster ids: as LowCardinality the filter compares dictionary codes, not
-- strings, and reads a fraction of the bytes (docs/clusters.md, Figures).
ALTER TABLE cluster_members MODIFY COLUMN cluster_id LowCardinality(String);
