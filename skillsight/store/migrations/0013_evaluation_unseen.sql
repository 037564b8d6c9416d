-- What an evaluation could not see: codes such as tool_outputs (Claude Code exported no tool
-- output), tool_arguments, messages, request, workspace, skill_content. A verdict that rests on
-- part of its input says which part was missing here and in its reason; rows from before this
-- column existed saw everything they needed, as far as anyone knew.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS unseen Array(String) DEFAULT [] AFTER activation_rebuilt_at;
