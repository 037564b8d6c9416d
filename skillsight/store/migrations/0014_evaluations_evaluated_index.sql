-- Online failure assignment asks "which evaluations failed since t" a few times a second through
-- the min-max index on evaluated_at (migration 0009). An added index covers only parts written
-- after it; this builds it for the parts of stores that held evaluations before, so those polls
-- skip every old part instead of reading its evaluated_at column each time.
ALTER TABLE evaluations MATERIALIZE INDEX idx_evaluated;
