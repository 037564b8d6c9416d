-- What an evaluator compared the activation with from outside the activation itself, as JSON:
-- efficiency, the skill's rolling baseline (medians and sample count) before the activation was
-- observed ('null' when the skill had none yet); skill_selection, the project's skill catalogue
-- (name and description of each skill) when the telemetry did not record what the agent could
-- see. A session rebuilt on its next prompt is scored again, also in a process started since (a
-- deploy, a crash): the scheduler reads this back and compares the activation with the same, so
-- its verdict does not move with the window or a catalogue changed since. '' where the evaluator
-- compares with nothing from outside, and on rows from before this column. ZSTD: a catalogue
-- repeats row after row, and compresses to almost nothing over a block.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS compared_with String DEFAULT '' CODEC(ZSTD(3)) AFTER inputs_hash;
-- The activation the row scored, as a digest of its record less when it was rebuilt
-- (Activation.content_digest). A session rebuilt on its next prompt hands its earlier
-- activations over again: those whose digest matches their rows' are not scored or written
-- again, and their rows are not stale. '' on rows from before this column.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS activation_digest String DEFAULT '' AFTER activation_rebuilt_at;
