-- Per (project, skill, start day, skill version), beside a refresh's kind 4 row (the production
-- activations, their newest rebuild each): the sums of their cost (USD), tokens (input, output
-- and cache), duration (ms) and internal tool calls, which the skill page's cost and usage
-- charts read instead of scanning the window's activations. 0 on every other kind, and on the
-- rows of a refresh in an older format, which no reader takes as clean (ROLLUP_FORMAT 3).
ALTER TABLE scorecard_days ADD COLUMN IF NOT EXISTS cost_usd Float64 DEFAULT 0 AFTER last_started;
ALTER TABLE scorecard_days ADD COLUMN IF NOT EXISTS tokens UInt64 DEFAULT 0 AFTER cost_usd;
ALTER TABLE scorecard_days ADD COLUMN IF NOT EXISTS duration_ms Float64 DEFAULT 0 AFTER tokens;
ALTER TABLE scorecard_days ADD COLUMN IF NOT EXISTS tool_calls UInt64 DEFAULT 0 AFTER duration_ms;
