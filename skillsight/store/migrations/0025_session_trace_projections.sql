-- A rebuild reads a session's rows through its traces: spans are sorted by trace, events by
-- session. Two lookups had no sort key of their own: which traces a session's spans are in
-- (spans are sorted by trace), and which sessions the events of some traces name (events are
-- sorted by session; an event naming another session, or none, belongs to the session that owns
-- its trace). Bloom filters answered them for one session, but a pass reads tens of sessions at
-- once and its hundreds of ids pass every filter: each read scanned a column of every row of the
-- project (docs/performance.md). Two aggregate projections keep one row per (session, trace)
-- pair, sorted by session for spans and by trace for events: a few granules for a few sessions,
-- and at most the projection (tens of times smaller than the rows) for many. A ReplacingMergeTree
-- keeps a projection only when told what its merges do to it: rebuilt from the merged rows.
ALTER TABLE spans MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';
ALTER TABLE spans ADD PROJECTION IF NOT EXISTS session_traces (SELECT project_id, session_id, trace_id GROUP BY project_id, session_id, trace_id);
ALTER TABLE spans MATERIALIZE PROJECTION session_traces;
ALTER TABLE events MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';
ALTER TABLE events ADD PROJECTION IF NOT EXISTS trace_sessions (SELECT project_id, trace_id, session_id GROUP BY project_id, trace_id, session_id);
ALTER TABLE events MATERIALIZE PROJECTION trace_sessions;
