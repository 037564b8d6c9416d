-- A cluster's member page reads the members of one cluster, the latest started first. The
-- table is sorted by activation (what deduplication needs), so that read scanned the cluster ids
-- of every member row of the project: 81 ms idle at 10M activations (4.3M member rows), 307 at
-- load 10-18 (docs/clusters.md). A projection keeps the same rows sorted by cluster and start:
-- the page reads its cluster's granules (23 ms). A ReplacingMergeTree keeps a projection only
-- when told what its merges do to it: rebuilt from the merged rows.
ALTER TABLE cluster_members MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';
ALTER TABLE cluster_members ADD PROJECTION IF NOT EXISTS by_cluster (SELECT * ORDER BY project_id, cluster_id, started_at);
ALTER TABLE cluster_members MATERIALIZE PROJECTION by_cluster;
