-- The parts the batch writer makes (a batch of up to SKILLSIGHT_BATCH_MAX_ROWS spans, ~40 MB
-- uncompressed per 50,000) are written in the compact format: one data file per part rather
-- than a pair of files per column (about 80 here), which spared ~25% of writing a part and the
-- file-system work of creating and later deleting those files (docs/performance.md). Merged parts
-- past 128 MiB are wide, as before, so reads of large parts are unchanged.
ALTER TABLE spans MODIFY SETTING min_bytes_for_wide_part = 134217728;
