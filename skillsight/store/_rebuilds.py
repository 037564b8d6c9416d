"""Rebuilt sessions: the ``activations`` and ``trajectories`` tables (migration 0004).

A session's visible rebuild is the one with its newest trajectory stamp; activation rows of any
other stamp are stale and every read filters them out. Activation rows are written before the
trajectory row (each session's commit marker), so readers see either the previous rebuild of a
session or the new one, never a mix.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from skillsight.store import _rebuild_rows as rebuild_rows
from skillsight.store._sql import micros
from skillsight.store.records import Activation

if TYPE_CHECKING:
    from skillsight.store._store import Store

# Newest first. Candidates are narrowed to ids and stamps before any record is read, so a broad
# filter never decompresses more than `limit` records.
_LIST_ACTIVATIONS = """
SELECT record
FROM activations
WHERE project_id = {project:String}
  AND (activation_id, rebuilt_at) IN (
    SELECT a.activation_id, a.rebuilt_at
    FROM (
        SELECT activation_id, session_id, started_at, rebuilt_at
        FROM activations
        WHERE project_id = {project:String}
          AND ({skill:String} = '' OR skill_name = {skill:String})
          AND ({session:String} = '' OR session_id = {session:String})
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
          AND (NOT {production:Bool} OR rerun_id = '')
    ) AS a
    INNER JOIN (
        SELECT session_id, max(rebuilt_at) AS stamp
        FROM trajectories
        WHERE project_id = {project:String}
          AND ({session:String} = '' OR session_id = {session:String})
        GROUP BY session_id
    ) AS s ON a.session_id = s.session_id AND a.rebuilt_at = s.stamp
    ORDER BY a.started_at DESC, a.activation_id
    LIMIT 1 BY a.activation_id
    LIMIT {limit:UInt32} OFFSET {offset:UInt32}
  )
ORDER BY started_at DESC, activation_id
LIMIT 1 BY activation_id"""

_GET_ACTIVATION = """
SELECT record
FROM activations
WHERE project_id = {project:String}
  AND activation_id = {id:String}
  AND (session_id, rebuilt_at) IN (
    SELECT session_id, max(rebuilt_at)
    FROM trajectories
    WHERE project_id = {project:String}
      AND session_id IN (
        SELECT session_id FROM activations
        WHERE project_id = {project:String} AND activation_id = {id:String}
      )
    GROUP BY session_id
  )
LIMIT 1"""

_GET_TRAJECTORY = """
SELECT atif
FROM trajectories
WHERE project_id = {project:String} AND session_id = {session:String}
ORDER BY rebuilt_at DESC
LIMIT 1"""

# Sessions whose newest rows were ingested after their newest rebuild read them (or that were
# never rebuilt, or whose newest rebuild is unsettled: a service stopped without its final pass
# left it provisional): what a finalizer starting up, or a worker, still owes.
_REBUILT_THROUGH = """
SELECT session_id,
       toUnixTimestamp64Micro(argMax(if(settled, ingested_through, toDateTime64(0, 6, 'UTC')),
                                     rebuilt_at)) AS through_us
FROM trajectories
WHERE project_id = {project:String} AND session_id IN {sessions:Array(String)}
GROUP BY session_id"""

# Sessions whose settled rebuild was stored since a point on the stamps' clock, newest rebuild
# per session: what an evaluation worker (`skillsight eval worker`) owes scores. Like
# TOUCHED_SESSIONS it spans projects: it finds work, it serves no caller.
_REBUILT_SESSIONS = """
SELECT project_id AS project, session_id,
       toUnixTimestamp64Micro(max(rebuilt_at)) AS rebuilt_us
FROM trajectories
WHERE rebuilt_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND settled
GROUP BY project_id, session_id
ORDER BY rebuilt_us"""


# A page of a session's ATIF steps, cut inside ClickHouse so a 10,000-step document never
# travels whole: the top-level trajectory's steps, or an embedded subagent trajectory's
# ({trajectory} names it), with the document's header and each subagent's id and step count.
_TRAJECTORY_PAGE = """
SELECT length(steps) AS total, arraySlice(steps, {offset:UInt32} + 1, {limit:UInt32}) AS page,
       JSONExtractString(atif, 'schema_version') AS schema_version,
       JSONExtractString(atif, 'trajectory_id') AS trajectory_id,
       JSONExtractRaw(atif, 'agent') AS agent, JSONExtractRaw(atif, 'final_metrics') AS metrics,
       JSONExtractRaw(atif, 'notes') AS notes,
       arrayMap(s -> (JSONExtractString(s, 'trajectory_id'),
                      length(JSONExtractArrayRaw(s, 'steps'))), subagents) AS subagent_steps,
       length(atif) AS bytes
FROM (
    SELECT atif, JSONExtractArrayRaw(atif, 'subagent_trajectories') AS subagents,
           if({trajectory:String} = '' OR {trajectory:String} = JSONExtractString(atif,
                                                                           'trajectory_id'),
              JSONExtractArrayRaw(atif, 'steps'),
              JSONExtractArrayRaw(
                  arrayFirst(s -> JSONExtractString(s, 'trajectory_id') = {trajectory:String},
                             subagents),
                  'steps')) AS steps
    FROM trajectories
    WHERE project_id = {project:String} AND session_id = {session:String}
    ORDER BY rebuilt_at DESC
    LIMIT 1
)"""


class TrajectoryPage(NamedTuple):
    """Some steps of a stored ATIF document (JSON texts), with what surrounds them."""

    total: int
    """steps in the trajectory the page is of"""
    steps: list[str]
    schema_version: str
    trajectory_id: str
    agent: str
    final_metrics: str
    notes: str
    subagents: list[tuple[str, int]]
    """each embedded subagent trajectory's id and step count"""
    document_bytes: int


class RebuiltSession(NamedTuple):
    project_id: str
    session_id: str
    rebuilt_us: int


class Rebuilds:
    """Writing rebuilds, and finding which sessions were rebuilt."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def write_one(
        self,
        project_id: str,
        rebuilt: rebuild_rows.RebuildResult,
        *,
        ingested_through_us: int = 0,
    ) -> int:
        """Store one session's rebuild; return its stamp (µs). Hides what it supersedes."""
        item = rebuild_rows.SessionRebuild(project_id, rebuilt, ingested_through_us)
        return self.write([item])[0]

    def write(self, items: Sequence[rebuild_rows.SessionRebuild]) -> list[int]:
        """Store several sessions' rebuilds in one insert per table; return their stamps."""
        stamped = [(item, rebuild_rows.STAMPS.next()) for item in items]
        if not stamped:
            return []
        # both tables built before anything is inserted: a value that cannot be serialized
        # (a ValueError) leaves nothing half written
        activations = rebuild_rows.activation_table(stamped)
        trajectories = rebuild_rows.trajectory_table(stamped)
        layout = rebuild_rows.ACTIVATION_ROW
        if activations.num_rows:
            self._store.insert_select(
                "activations",
                rebuild_rows.columns(layout),
                rebuild_rows.select(layout),
                activations,
                rebuild_rows.structure(layout),
            )
            # after the rows: the skills list counts a day's activations from its refresh
            self._store.scorecards.rollups.mark_activations(activations)
        layout = rebuild_rows.TRAJECTORY_ROW
        self._store.insert_select(
            "trajectories",
            rebuild_rows.columns(layout),
            rebuild_rows.select(layout),
            trajectories,
            rebuild_rows.structure(layout),
        )
        return [stamp for _, stamp in stamped]

    def through(self, project_id: str, session_keys: Sequence[str]) -> dict[str, int]:
        """Per session, the newest ``ingested_at`` (µs) its latest settled rebuild had read."""
        if not session_keys:
            return {}
        found = self._store.query(
            _REBUILT_THROUGH, {"project": project_id, "sessions": list(session_keys)}
        )
        return {str(r["session_id"]): int(r["through_us"]) for r in found}

    def since(self, since_us: int) -> list[RebuiltSession]:
        """Every session whose latest settled rebuild was stored after ``since_us`` (the
        rebuild stamps' clock), across projects: what evaluation workers owe scores."""
        found = self._store.query(_REBUILT_SESSIONS, {"since": int(since_us)})
        return [
            RebuiltSession(str(r["project"]), str(r["session_id"]), int(r["rebuilt_us"]))
            for r in found
        ]


class Activations:
    """Current activations (those of each session's newest rebuild)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def find(
        self,
        project_id: str,
        *,
        skill: str = "",
        session_id: str = "",
        since: datetime | None = None,
        limit: int = 100,
        offset: int = 0,
        production: bool = False,
    ) -> list[Activation]:
        """Current activations of a project, newest first; ``since`` bounds their start;
        ``offset`` skips that many (pages); ``production`` leaves out a paired rerun's
        (``rerun_id``)."""
        params = {
            "project": project_id,
            "skill": skill,
            "session": session_id,
            "since": micros(since),
            "production": production,
            "limit": limit,
            "offset": offset,
        }
        found = self._store.query(_LIST_ACTIVATIONS, params)
        return [Activation.model_validate_json(row["record"]) for row in found]

    def get(self, project_id: str, activation_id: str) -> Activation | None:
        found = self._store.query(_GET_ACTIVATION, {"project": project_id, "id": activation_id})
        return Activation.model_validate_json(found[0]["record"]) if found else None


class Trajectories:
    """Sessions' ATIF documents, as stored at their latest rebuild."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, project_id: str, session_id: str) -> str | None:
        """The session's current ATIF document, as JSON text (None when never rebuilt)."""
        found = self._store.query(_GET_TRAJECTORY, {"project": project_id, "session": session_id})
        return str(found[0]["atif"]) if found else None

    def page(
        self,
        project_id: str,
        session_id: str,
        *,
        offset: int = 0,
        limit: int = 100,
        trajectory_id: str = "",
    ) -> TrajectoryPage | None:
        """Steps ``offset``.. of the session's current trajectory (or of its embedded subagent
        trajectory ``trajectory_id``), cut inside ClickHouse; None when never rebuilt."""
        params = {
            "project": project_id,
            "session": session_id,
            "offset": offset,
            "limit": limit,
            "trajectory": trajectory_id,
        }
        found = self._store.query(_TRAJECTORY_PAGE, params)
        if not found:
            return None
        row = found[0]
        return TrajectoryPage(
            total=int(row["total"]),
            steps=[str(step) for step in row["page"]],
            schema_version=str(row["schema_version"]),
            trajectory_id=str(row["trajectory_id"]),
            agent=str(row["agent"]),
            final_metrics=str(row["metrics"]),
            notes=str(row["notes"]),
            subagents=[(str(t), int(n)) for t, n in row["subagent_steps"]],
            document_bytes=int(row["bytes"]),
        )
