-- What an evaluator compared the activation with, from outside the activation itself, as JSON:
-- for efficiency, the skill's rolling baseline (medians and sample count) before the activation
-- was observed; 'null' when the skill had none yet. A session rebuilt on its next prompt is
-- scored again, also in a process started since (a deploy, a crash): that process reads it
-- here and compares the activation with the same baseline, so its verdict does not move.
-- '' where the evaluator compares with nothing, and on rows from before this column.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS baseline String DEFAULT '' AFTER inputs_hash;
