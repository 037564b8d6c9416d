-- Which paired rerun (`skillsight rerun`) produced an activation: the `skillsight.rerun.id`
-- resource attribute its agent exported with, set by the rebuild; '' for production traffic.
-- Rerun activations are stored and scored like any (the rerun's report reads them, the session
-- and activation pages show them), and every production read model leaves them out: scorecards
-- and the gate, the skills list, cost lines, efficiency baselines and failure clustering. Rows
-- rebuilt before this column existed are production traffic until their session is rebuilt.
ALTER TABLE activations ADD COLUMN IF NOT EXISTS rerun_id String DEFAULT '' AFTER record;
