-- Which rebuild of its activation an evaluation scored: the activation record's rebuilt_at
-- (ISO 8601, UTC, microseconds), as the record carries it. A session rebuilt on late rows gets a
-- newer stamp; until the scheduler has scored that rebuild, the evaluations still name the old
-- one, and readers show them as stale. Kept as the record's text so the comparison is exact.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS activation_rebuilt_at String DEFAULT '' AFTER evaluated_at;
