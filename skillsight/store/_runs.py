"""Paired reruns (migration 0011): ``runs`` and ``run_results``, and finding a run's sessions.

A ``runs`` row is rewritten as the run progresses and once more when it finishes, with its
report; reads take the newest. A ``run_results`` row is written when one (case, condition,
attempt) ends, so a run resumed after a kill knows which keys are done. The telemetry of each
run carries resource attributes naming its run key (``skillsight.rerun.key``); the sessions a
run produced are found by that attribute among spans and log events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

import pyarrow as pa

from skillsight.store._goldens import time_column
from skillsight.store._sql import RowLayout, insert_rows, iso_micros

if TYPE_CHECKING:
    from skillsight.store._store import Store

_STR = pa.string()
_I64 = pa.int64()
_F64 = pa.float64()
_BOOL = pa.bool_()
_STRS = pa.list_(_STR)

METRIC_COLUMNS: tuple[str, ...] = (
    "security",
    "skill_execution",
    "skill_efficiency",
    "accuracy",
    "goal_accuracy",
    "behavior_check",
)

RUN_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("run_id", _STR, "String", "run_id"),
    ("skill_name", _STR, "String", "skill_name"),
    ("skill_version", _STR, "String", "skill_version"),
    ("set_id", _STR, "String", "set_id"),
    ("set_version", _I64, "Int64", "toUInt32(set_version)"),
    ("status", _STR, "String", "status"),
    ("config", _STR, "String", "config"),
    ("planned", _I64, "Int64", "toUInt32(planned)"),
    ("finished", _I64, "Int64", "toUInt32(finished)"),
    ("report", _STR, "String", "report"),
    time_column("started_at"),
    time_column("updated_at"),
)

RESULT_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("run_id", _STR, "String", "run_id"),
    ("case_id", _STR, "String", "case_id"),
    ("condition", _STR, "String", "condition"),
    ("attempt", _I64, "Int64", "toUInt16(attempt)"),
    ("status", _STR, "String", "status"),
    ("session_ids", _STRS, "Array(String)", "session_ids"),
    ("activation_ids", _STRS, "Array(String)", "activation_ids"),
    ("skill_invoked", _BOOL, "Bool", "skill_invoked"),
    *((name, _F64, "Nullable(Float64)", name) for name in (*METRIC_COLUMNS, "overall")),
    ("passed", _BOOL, "Nullable(Bool)", "passed"),
    ("tokens", _I64, "Int64", "toUInt64(tokens)"),
    ("cost_usd", _F64, "Float64", "cost_usd"),
    ("duration_ms", _F64, "Float64", "duration_ms"),
    ("exit_code", _I64, "Int64", "toInt32(exit_code)"),
    ("answer", _STR, "String", "answer"),
    ("reasons", _STR, "String", "reasons"),
    ("error", _STR, "String", "error"),
    time_column("started_at"),
    time_column("finished_at"),
)

_RUN_COLUMNS = """run_id, skill_name, skill_version, set_id, set_version, status, config,
       planned, finished, toUnixTimestamp64Micro(started_at) AS started_at_us,
       toUnixTimestamp64Micro(updated_at) AS updated_at_us"""

_LIST_RUNS = f"""
SELECT {_RUN_COLUMNS}
FROM (
    SELECT * FROM runs
    WHERE project_id = {{project:String}}
      AND ({{skill:String}} = '' OR skill_name = {{skill:String}})
      AND ({{set:String}} = '' OR set_id = {{set:String}})
    ORDER BY updated_at DESC
    LIMIT 1 BY run_id
)
ORDER BY started_at_us DESC, run_id
LIMIT {{limit:UInt32}}"""

_GET_RUN = f"""
SELECT {_RUN_COLUMNS}, report
FROM runs
WHERE project_id = {{project:String}} AND run_id = {{run:String}}
ORDER BY updated_at DESC
LIMIT 1"""

_RESULT_COLUMNS = ", ".join(
    name for name, *_ in RESULT_ROW if name not in {"project_id", "started_at", "finished_at"}
)

_RESULTS = f"""
SELECT {_RESULT_COLUMNS},
       toUnixTimestamp64Micro(started_at) AS started_at_us,
       toUnixTimestamp64Micro(finished_at) AS finished_at_us
FROM (
    SELECT * FROM run_results
    WHERE project_id = {{project:String}} AND run_id = {{run:String}}
    ORDER BY finished_at DESC
    LIMIT 1 BY case_id, condition, attempt
)
ORDER BY case_id, condition, attempt"""

# Sessions whose spans or log events carry a resource attribute value, with the newest row's
# ingestion time (the store's clock): what a run produced, and whether more rows came since. As
# for the finalizer, a row without a session id belongs to the session another row of its trace
# names (else the trace is its own session).
_TAGGED_SESSIONS = """
SELECT if(session != '', session, trace) AS session_id,
       toUnixTimestamp64Micro(max(last)) AS last_ingested_us
FROM (
    SELECT any(t) AS trace, max(s) AS session, max(i) AS last
    FROM (
        SELECT trace_id AS t, session_id AS s, ingested_at AS i FROM spans
        WHERE project_id = {project:String} AND resource_attributes[{key:String}] = {value:String}
        UNION ALL
        SELECT trace_id AS t, session_id AS s, ingested_at AS i FROM events
        WHERE project_id = {project:String} AND resource_attributes[{key:String}] = {value:String}
    )
    GROUP BY if(t != '', t, concat('~', s))
)
GROUP BY session_id
HAVING session_id != ''
ORDER BY session_id"""


class RerunRow(TypedDict):
    """A paired rerun, as stored (the report only from :meth:`Runs.get`)."""

    run_id: str
    skill_name: str
    skill_version: str
    set_id: str
    set_version: int
    status: str
    config: str
    planned: int
    finished: int
    started_at: str
    updated_at: str
    report: str


class RunResultRow(TypedDict):
    """One (case, condition, attempt) of a rerun."""

    run_id: str
    case_id: str
    condition: str
    attempt: int
    status: str
    session_ids: list[str]
    activation_ids: list[str]
    skill_invoked: bool
    security: float | None
    skill_execution: float | None
    skill_efficiency: float | None
    accuracy: float | None
    goal_accuracy: float | None
    behavior_check: float | None
    overall: float | None
    passed: bool | None
    tokens: int
    cost_usd: float
    duration_ms: float
    exit_code: int
    answer: str
    reasons: str
    error: str
    started_at_us: int
    finished_at_us: int


class TaggedSession(NamedTuple):
    session_id: str
    last_ingested_us: int


def _run_row(row: dict[str, Any]) -> RerunRow:
    out = dict(row)
    out["started_at"] = iso_micros(int(out.pop("started_at_us")))
    out["updated_at"] = iso_micros(int(out.pop("updated_at_us")))
    for name in ("set_version", "planned", "finished"):
        out[name] = int(out[name])
    out.setdefault("report", "")
    return out  # type: ignore[return-value]


class Runs:
    """The ``runs`` and ``run_results`` tables."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def write(self, project_id: str, run: dict[str, Any]) -> None:
        """Write a run's row (every column of :data:`RUN_ROW` but the project; times in µs);
        the newest ``updated_at`` wins."""
        insert_rows(self._store, "runs", RUN_ROW, [{**run, "project_id": project_id}])

    def get(self, project_id: str, run_id: str) -> RerunRow | None:
        found = self._store.query(_GET_RUN, {"project": project_id, "run": run_id})
        return _run_row(found[0]) if found else None

    def find(
        self, project_id: str, *, skill: str = "", set_id: str = "", limit: int = 100
    ) -> list[RerunRow]:
        """Runs, newest started first (without their reports)."""
        params = {"project": project_id, "skill": skill, "set": set_id, "limit": limit}
        return [_run_row(r) for r in self._store.query(_LIST_RUNS, params)]

    def write_results(self, project_id: str, results: Sequence[dict[str, Any]]) -> int:
        """Write result rows (columns of :data:`RESULT_ROW` but the project; times in µs)."""
        rows = [{**r, "project_id": project_id} for r in results]
        return insert_rows(self._store, "run_results", RESULT_ROW, rows)

    def results(self, project_id: str, run_id: str) -> list[RunResultRow]:
        """The newest row of each (case, condition, attempt) of a run."""
        found = self._store.query(_RESULTS, {"project": project_id, "run": run_id})
        for row in found:
            row["attempt"] = int(row["attempt"])
            row["tokens"] = int(row["tokens"])
            row["exit_code"] = int(row["exit_code"])
        return found  # type: ignore[return-value]

    def tagged_sessions(self, project_id: str, key: str, value: str) -> list[TaggedSession]:
        """Sessions whose telemetry carries the resource attribute ``key`` = ``value``."""
        params = {"project": project_id, "key": key, "value": value}
        return [
            TaggedSession(str(r["session_id"]), int(r["last_ingested_us"]))
            for r in self._store.query(_TAGGED_SESSIONS, params)
        ]
