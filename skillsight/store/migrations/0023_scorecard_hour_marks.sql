-- Marks per hour: the (project, skill, UTC start day, hour) whose rows changed, and when, written
-- after the rows as scorecard_marks' are. A day written to since its newest refresh was read
-- from the copied rows whole, for every skill, so the day being written (today, under live
-- traffic) was; with its marks per hour a reader takes the hours marked before that refresh
-- from scorecard_hours and only the hours marked since from the rows. scorecard_marks keeps the
-- marks that name a whole day (a day never refreshed, an explicit mark; older writers).
CREATE TABLE IF NOT EXISTS scorecard_hour_marks
(
    project_id   LowCardinality(String),
    skill_name   LowCardinality(String),
    day          Date,
    hour         UInt8,
    marked_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(marked_at)
ORDER BY (project_id, skill_name, day, hour);
