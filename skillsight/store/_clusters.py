"""Failure clusters (migrations 0009 and 0015): ``clusters``, ``cluster_members``,
``cluster_status``, ``cluster_runs`` and ``cluster_advice``.

A run writes every failure's membership, then its clusters, then its ``cluster_runs`` row, which
commits it: readers take the project's newest run, and a membership counts when a row of that
run wrote it or it was assigned online after the run started (an activation's newest row wins).
A run's rows are stamped with the moment it read the failures (``started_at``), so whatever
online assignment wrote after that moment stays newer than them.
List queries read the small ``clusters`` table and the few online rows since the run, never the
members a run counted, so they cost the same over ten thousand activations or ten million.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa

from skillsight.store._sql import RowLayout, insert_rows

if TYPE_CHECKING:
    from skillsight.store._store import Store

_STR = pa.string()
_I64 = pa.int64()
_BOOL = pa.bool_()
_F64 = pa.float64()
_STRS = pa.list_(_STR)
_UINTS = pa.list_(_I64)


def _time(name: str) -> tuple[str, pa.DataType, str, str]:
    return (name, _I64, "Int64", f"fromUnixTimestamp64Micro({name}, 'UTC')")


CLUSTER_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("cluster_id", _STR, "String", "cluster_id"),
    ("run_id", _STR, "String", "run_id"),
    ("active", _BOOL, "Bool", "active"),
    ("label", _STR, "String", "label"),
    ("terms", _STRS, "Array(String)", "terms"),
    ("evaluator", _STR, "String", "evaluator"),
    ("kind", _STR, "String", "kind"),
    ("severity", _STR, "String", "severity"),
    ("size", _I64, "Int64", "toUInt32(size)"),
    ("sessions", _I64, "Int64", "toUInt32(sessions)"),
    ("skills", _STRS, "Array(String)", "skills"),
    ("versions", _STRS, "Array(String)", "versions"),
    ("first_bad_version", _STR, "String", "first_bad_version"),
    _time("first_seen"),
    _time("last_seen"),
    ("hourly", _UINTS, "Array(Int64)", "arrayMap(x -> toUInt32(x), hourly)"),
    ("daily", _UINTS, "Array(Int64)", "arrayMap(x -> toUInt32(x), daily)"),
    _time("counted_at"),
    ("evaluators", _STR, "String", "evaluators"),
    ("kinds", _STR, "String", "kinds"),
    ("exemplar_activation_ids", _STRS, "Array(String)", "exemplar_activation_ids"),
    ("exemplars", pa.list_(pa.binary()), "Array(String)", "exemplars"),
    ("centroid", pa.binary(), "String", "centroid"),
    ("split_from", _STR, "String", "split_from"),
    ("merged_into", _STR, "String", "merged_into"),
    _time("updated_at"),
)
MEMBER_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("activation_id", _STR, "String", "activation_id"),
    ("cluster_id", _STR, "String", "cluster_id"),
    ("run_id", _STR, "String", "run_id"),
    ("assigned_by", _STR, "String", "assigned_by"),
    ("distance", _F64, "Float64", "toFloat32(distance)"),
    ("session_id", _STR, "String", "session_id"),
    ("skill_name", _STR, "String", "skill_name"),
    ("skill_version", _STR, "String", "skill_version"),
    _time("started_at"),
    _time("assigned_at"),
)
STATUS_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("cluster_id", _STR, "String", "cluster_id"),
    ("status", _STR, "String", "status"),
    ("assignee", _STR, "String", "assignee"),
    ("note", _STR, "String", "note"),
    _time("resolved_at"),
    ("changed_by", _STR, "String", "changed_by"),
    _time("changed_at"),
)
ADVICE_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("cluster_id", _STR, "String", "cluster_id"),
    ("basis", _STR, "String", "basis"),
    ("label", _STR, "String", "label"),
    ("fix", _STR, "String", "fix"),
    ("layer", _STR, "String", "layer"),
    ("cited_activation", _STR, "String", "cited_activation"),
    ("cited_steps", _UINTS, "Array(Int64)", "arrayMap(x -> toUInt32(x), cited_steps)"),
    ("model", _STR, "String", "model"),
    ("tokens", _I64, "Int64", "toUInt64(tokens)"),
    ("cost_usd", _F64, "Float64", "cost_usd"),
    ("error", _STR, "String", "error"),
    _time("created_at"),
)
RUN_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("run_id", _STR, "String", "run_id"),
    _time("started_at"),
    _time("finished_at"),
    _time("window_start"),
    ("failures", _I64, "Int64", "toUInt32(failures)"),
    ("clusters", _I64, "Int64", "toUInt32(clusters)"),
    ("novel", _I64, "Int64", "toUInt32(novel)"),
    ("kept_share", _F64, "Float64", "kept_share"),
    ("summary", _STR, "String", "summary"),
)

_CLUSTER_COLUMNS = """cluster_id, run_id, active, label, terms, evaluator, kind, severity, size,
       sessions, skills, versions, first_bad_version,
       toUnixTimestamp64Micro(first_seen) AS first_seen, toUnixTimestamp64Micro(last_seen) AS
       last_seen, hourly, daily, toUnixTimestamp64Micro(counted_at) AS counted_at, evaluators,
       kinds, exemplar_activation_ids, split_from, merged_into,
       toUnixTimestamp64Micro(updated_at) AS updated_at"""
_CLUSTERS = f"""
SELECT {_CLUSTER_COLUMNS}, __VECTORS__
FROM (
    SELECT * FROM clusters
    WHERE project_id = {{project:String}}
      AND ({{everything:Bool}} OR cluster_id IN {{ids:Array(String)}})
    ORDER BY cluster_id, updated_at DESC
    LIMIT 1 BY cluster_id
)"""
_VECTORS = (
    "arrayMap(x -> base64Encode(x), exemplars) AS exemplars, base64Encode(centroid) AS centroid"
)
_NO_VECTORS = "[] AS exemplars, '' AS centroid"

_STATUSES = """
SELECT cluster_id, status, assignee, note,
       toUnixTimestamp64Micro(resolved_at) AS resolved_at, changed_by,
       toUnixTimestamp64Micro(changed_at) AS changed_at
FROM (
    SELECT * FROM cluster_status
    WHERE project_id = {project:String}
      AND ({everything:Bool} OR cluster_id IN {ids:Array(String)})
    ORDER BY cluster_id, changed_at DESC
    LIMIT 1 BY cluster_id
)"""

_LATEST_RUN = """
SELECT run_id, toUnixTimestamp64Micro(started_at) AS started_at,
       toUnixTimestamp64Micro(finished_at) AS finished_at,
       toUnixTimestamp64Micro(window_start) AS window_start, failures, clusters, novel,
       kept_share, summary
FROM cluster_runs
WHERE project_id = {project:String}
ORDER BY started_at DESC, run_id DESC
LIMIT 1"""

# Newest row per activation, kept when the latest run wrote it or it came online after the run.
_CURRENT = """
    SELECT activation_id, cluster_id, run_id, assigned_by, distance, session_id, skill_name,
           skill_version, toUnixTimestamp64Micro(started_at) AS started_at,
           toUnixTimestamp64Micro(assigned_at) AS assigned_at
    FROM (
        SELECT * FROM (
            SELECT * FROM cluster_members
            WHERE project_id = {project:String} __NARROW__
            ORDER BY activation_id, assigned_at DESC
            LIMIT 1 BY activation_id
        )
        WHERE (run_id = {run:String}
               OR assigned_at > fromUnixTimestamp64Micro({run_started:Int64}, 'UTC'))
          __FILTER__
    )"""
_MEMBERSHIP = _CURRENT.replace("__NARROW__", "").replace("__FILTER__", "AND cluster_id != ''")
_OF_ACTIVATIONS = _CURRENT.replace(
    "__NARROW__", "AND activation_id IN {ids:Array(String)}"
).replace("__FILTER__", "")
# A page of one cluster's members: its rows of the latest run or joined online since, minus the
# activations whose newest row since the run is another cluster's (the only way a newer row can
# supersede one of these); the latest started first. A partial sort takes the page's rows (twice
# as many, for an activation with both a run row and an online row here) before deduplicating.
# The rows come from the table's projection sorted by cluster and start (migration 0024), so a
# page reads its cluster's granules, not every member row's cluster id; reading them in reverse
# order to stop early cost more than sorting them (a large cluster at 10M activations, spread
# over 21 parts: 73 against 23 ms).
_OF_CLUSTER = """
SELECT activation_id, cluster_id, run_id, assigned_by, distance, session_id, skill_name,
       skill_version, toUnixTimestamp64Micro(started_at) AS started_at,
       toUnixTimestamp64Micro(assigned_at) AS assigned_at
FROM (
    SELECT * FROM (
        SELECT activation_id, cluster_id, run_id, assigned_by, distance, session_id,
               skill_name, skill_version, started_at, assigned_at
        FROM cluster_members
        WHERE project_id = {project:String} AND cluster_id = {cluster:String}
          AND (run_id = {run:String}
               OR assigned_at > fromUnixTimestamp64Micro({run_started:Int64}, 'UTC'))
          AND activation_id NOT IN (
            SELECT activation_id FROM cluster_members
            WHERE project_id = {project:String}
              AND assigned_at > fromUnixTimestamp64Micro({run_started:Int64}, 'UTC')
            GROUP BY activation_id
            HAVING argMax(cluster_id, assigned_at) != {cluster:String})
        ORDER BY started_at DESC, activation_id, assigned_at DESC
        LIMIT {window:UInt32}
    )
    LIMIT 1 BY activation_id
)
ORDER BY started_at DESC, activation_id
LIMIT {limit:UInt32} OFFSET {offset:UInt32}
SETTINGS optimize_read_in_order = 0"""
# What online assignment added since the run, per cluster (members it counted already aside).
_ONLINE = """
SELECT cluster_id, count() AS members, uniqExact(session_id) AS sessions,
       min(started_at) AS first_seen, max(started_at) AS last_seen,
       groupUniqArray(skill_name) AS skills, groupUniqArray(skill_version) AS versions,
       groupArray(started_at) AS started
FROM (
    SELECT activation_id, argMax(cluster_id, assigned_at) AS cluster_id,
           argMax(assigned_by, assigned_at) AS assigned_by,
           any(session_id) AS session_id, any(skill_name) AS skill_name,
           any(skill_version) AS skill_version,
           toUnixTimestamp64Micro(any(started_at)) AS started_at
    FROM cluster_members
    WHERE project_id = {project:String}
      AND assigned_at > fromUnixTimestamp64Micro({run_started:Int64}, 'UTC')
    GROUP BY activation_id
)
WHERE assigned_by = 'online' AND cluster_id != ''
GROUP BY cluster_id"""


_ADVICE = """
SELECT cluster_id, basis, label, fix, layer, cited_activation, cited_steps, model, tokens,
       cost_usd, error, toUnixTimestamp64Micro(created_at) AS created_at
FROM (
    SELECT * FROM cluster_advice
    WHERE project_id = {project:String} AND cluster_id IN {ids:Array(String)}
    ORDER BY cluster_id, created_at DESC
    LIMIT 1 BY cluster_id
)"""


class AdviceRow(TypedDict):
    """A judge model's advice on a cluster (the newest of the cluster)."""

    cluster_id: str
    basis: str
    label: str
    fix: str
    layer: str
    cited_activation: str
    cited_steps: list[int]
    model: str
    tokens: int
    cost_usd: float
    error: str
    created_at: int


class ClusterRow(TypedDict):
    cluster_id: str
    run_id: str
    active: bool
    label: str
    terms: list[str]
    evaluator: str
    kind: str
    severity: str
    size: int
    sessions: int
    skills: list[str]
    versions: list[str]
    first_bad_version: str
    first_seen: int
    last_seen: int
    hourly: list[int]
    daily: list[int]
    counted_at: int
    evaluators: str
    kinds: str
    exemplar_activation_ids: list[str]
    exemplars: list[bytes]
    """Packed vectors; empty unless read ``with_vectors``."""
    centroid: bytes
    split_from: str
    merged_into: str
    updated_at: int


class MemberRow(TypedDict):
    activation_id: str
    cluster_id: str
    run_id: str
    assigned_by: str
    distance: float
    session_id: str
    skill_name: str
    skill_version: str
    started_at: int
    assigned_at: int


class StatusRow(TypedDict):
    cluster_id: str
    status: str
    assignee: str
    note: str
    resolved_at: int
    changed_by: str
    changed_at: int


class RunRow(TypedDict):
    run_id: str
    started_at: int
    finished_at: int
    window_start: int
    failures: int
    clusters: int
    novel: int
    kept_share: float
    summary: str


class OnlineCounts(TypedDict):
    cluster_id: str
    members: int
    sessions: int
    first_seen: int
    last_seen: int
    skills: list[str]
    versions: list[str]
    started: list[int]


def _run_params(project_id: str, run: RunRow | None) -> dict[str, Any]:
    return {
        "project": project_id,
        "run": run["run_id"] if run else "",
        "run_started": run["started_at"] if run else 0,
    }


class Clusters:
    """Clusters, their members, their status log and the runs that made them."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # -- reads ---------------------------------------------------------------------------------

    def latest_run(self, project_id: str) -> RunRow | None:
        found = self._store.query(_LATEST_RUN, {"project": project_id})
        return found[0] if found else None  # type: ignore[return-value]

    def get(
        self, project_id: str, ids: Sequence[str] | None = None, *, with_vectors: bool = False
    ) -> list[ClusterRow]:
        """The newest row of each cluster (of ``ids`` only, when given), by id."""
        sql = _CLUSTERS.replace("__VECTORS__", _VECTORS if with_vectors else _NO_VECTORS)
        params = {"project": project_id, "everything": ids is None, "ids": list(ids or ())}
        out: list[ClusterRow] = []
        for row in self._store.query(sql, params):
            row["exemplars"] = [base64.b64decode(x) for x in row["exemplars"]]
            row["centroid"] = base64.b64decode(row["centroid"])
            out.append(row)  # type: ignore[arg-type]
        return out

    def statuses(self, project_id: str, ids: Sequence[str] | None = None) -> dict[str, StatusRow]:
        params = {"project": project_id, "everything": ids is None, "ids": list(ids or ())}
        return {str(r["cluster_id"]): r for r in self._store.query(_STATUSES, params)}  # type: ignore[misc]

    def membership(self, project_id: str, run: RunRow | None) -> dict[str, str]:
        """Per current member activation, its cluster id (novel ones left out)."""
        found = self._store.query(_MEMBERSHIP, _run_params(project_id, run))
        return {str(r["activation_id"]): str(r["cluster_id"]) for r in found}

    def members_of(
        self, project_id: str, activation_ids: Sequence[str], run: RunRow | None
    ) -> dict[str, MemberRow]:
        """The current membership rows of some activations (novel ones included)."""
        if not activation_ids:
            return {}
        params = {**_run_params(project_id, run), "ids": list(activation_ids)}
        return {str(r["activation_id"]): r for r in self._store.query(_OF_ACTIVATIONS, params)}  # type: ignore[misc]

    def members(
        self, project_id: str, cluster_id: str, run: RunRow | None, *, limit: int, offset: int = 0
    ) -> list[MemberRow]:
        """A page of a cluster's current members, the latest started first."""
        params = {
            **_run_params(project_id, run),
            "cluster": cluster_id,
            "limit": limit,
            "offset": offset,
            "window": 2 * (offset + limit),
        }
        found: list[MemberRow] = self._store.query(_OF_CLUSTER, params)  # type: ignore[assignment]
        return found

    def online(self, project_id: str, run: RunRow | None) -> dict[str, OnlineCounts]:
        """Per cluster, the members online assignment added since ``run`` started."""
        found = self._store.query(_ONLINE, _run_params(project_id, run))
        return {str(r["cluster_id"]): r for r in found}  # type: ignore[misc]

    # -- writes --------------------------------------------------------------------------------

    def write_members(self, project_id: str, rows: Sequence[dict[str, Any]]) -> int:
        return insert_rows(self._store, "cluster_members", MEMBER_ROW, _of(project_id, rows))

    def write_clusters(self, project_id: str, rows: Sequence[dict[str, Any]]) -> int:
        return insert_rows(self._store, "clusters", CLUSTER_ROW, _of(project_id, rows))

    def write_status(self, project_id: str, rows: Sequence[dict[str, Any]]) -> int:
        return insert_rows(self._store, "cluster_status", STATUS_ROW, _of(project_id, rows))

    def advice(self, project_id: str, ids: Sequence[str]) -> dict[str, AdviceRow]:
        """The newest advice on each of some clusters (those with any)."""
        if not ids:
            return {}
        found = self._store.query(_ADVICE, {"project": project_id, "ids": list(ids)})
        return {str(r["cluster_id"]): r for r in found}  # type: ignore[misc]

    def write_advice(self, project_id: str, rows: Sequence[dict[str, Any]]) -> int:
        return insert_rows(self._store, "cluster_advice", ADVICE_ROW, _of(project_id, rows))

    def write_run(self, project_id: str, row: dict[str, Any]) -> int:
        """Commit a run (write it after its members and clusters)."""
        return insert_rows(self._store, "cluster_runs", RUN_ROW, _of(project_id, [row]))


def _of(project_id: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**row, "project_id": project_id} for row in rows]
