-- Whether a rebuild may be scored. A session is rebuilt once complete (quiet, root span and log
-- events in), or, for the display, after SKILLSIGHT_REBUILD_MAX_WAIT_S even while its root is
-- still missing; such a rebuild is unsettled, and evaluation waits until the session is complete
-- or has been silent for SKILLSIGHT_REBUILD_SETTLE_S (its root presumed lost), when a settled
-- rebuild is written. Rows from before this column existed count as settled.
ALTER TABLE trajectories ADD COLUMN IF NOT EXISTS settled Bool DEFAULT true AFTER ingested_through;
