-- What the evaluator was shown, as a digest: for a judge, the SHA-256 of its prompt (the fence
-- boundaries left out). A session rebuilt on its next prompt is scored again; a judge finding
-- the stored row of the same prompt answers with it instead of paying again, also in a process
-- whose verdict cache never saw it (a restart, a busy service). '' where nothing was recorded.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS inputs_hash String DEFAULT '' AFTER unseen;
