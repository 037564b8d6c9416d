"""Failing activations (migration 0009): which evaluations fail now, and the ``failures`` table.

An activation fails when an evaluation of its newest rebuild failed: per (activation, evaluator)
the newest row, whatever evaluator version wrote it, counts when it names the activation's
current rebuild (or no rebuild: rows from before that was recorded) and ``passed`` is false.
Errors and not-applicable rows have no verdict (``passed`` is null) and never fail; a paired
rerun's activations (``rerun_id``) never do either: they are not production traffic. Evaluators
listed in ``scored`` also come back when they passed with a score, for callers that apply
thresholds of their own.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

import pyarrow as pa

from skillsight.store._sql import RowLayout, insert_rows
from skillsight.store.records import Activation

if TYPE_CHECKING:
    from skillsight.store._store import Store

_STR = pa.string()
_I64 = pa.int64()

# Activations with a failing (or, for `scored` evaluators, any scored) evaluation row: started
# since a moment (a run's window), or among given ids (online assignment: no window scan); the
# narrow set every later step works on. Production traffic only: a paired rerun's activations
# (rerun_id, migration 0017) are scored, never clustered.
_IN_WINDOW = """
    SELECT DISTINCT activation_id FROM evaluations
    WHERE project_id = {project:String}
      AND (passed = false OR (evaluator IN {scored:Array(String)} AND score IS NOT NULL))
      AND activation_id IN (
        SELECT activation_id FROM activations
        WHERE project_id = {project:String}
          AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
          AND rerun_id = '')"""
_AMONG_IDS = """
    SELECT DISTINCT activation_id FROM evaluations
    WHERE project_id = {project:String} AND activation_id IN {ids:Array(String)}
      AND (passed = false OR (evaluator IN {scored:Array(String)} AND score IS NOT NULL))"""
_CANDIDATES = "__CANDIDATES__"

_FAILING = f"""
SELECT e.activation_id AS activation_id, e.evaluator AS evaluator,
       e.evaluator_version AS evaluator_version, e.score AS score, e.passed AS passed,
       e.evaluated_at_us AS evaluated_at_us, a.session_id AS session_id,
       a.skill_name AS skill_name, a.skill_version AS skill_version,
       a.started_us AS started_us, a.rebuilt_iso AS rebuilt_at
FROM (
    SELECT activation_id, evaluator, evaluator_version, score, passed, activation_rebuilt_at,
           toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
    FROM evaluations
    WHERE project_id = {{project:String}} AND activation_id IN ({_CANDIDATES})
    ORDER BY activation_id, evaluator, evaluated_at DESC
    LIMIT 1 BY activation_id, evaluator
) AS e
INNER JOIN (
    SELECT a.activation_id AS activation_id, a.session_id AS session_id,
           a.skill_name AS skill_name, a.skill_version AS skill_version,
           toUnixTimestamp64Micro(a.started_at) AS started_us,
           formatDateTime(a.rebuilt_at, '%Y-%m-%dT%H:%i:%S.%fZ') AS rebuilt_iso
    FROM activations AS a
    INNER JOIN (
        SELECT session_id, max(rebuilt_at) AS stamp FROM trajectories
        WHERE project_id = {{project:String}} AND session_id IN (
            SELECT session_id FROM activations
            WHERE project_id = {{project:String}} AND activation_id IN ({_CANDIDATES}))
        GROUP BY session_id
    ) AS s ON a.session_id = s.session_id AND a.rebuilt_at = s.stamp
    WHERE a.project_id = {{project:String}} AND a.activation_id IN ({_CANDIDATES})
      AND a.rerun_id = ''
    LIMIT 1 BY a.activation_id
) AS a ON e.activation_id = a.activation_id
WHERE (e.passed = false OR (e.evaluator IN {{scored:Array(String)}} AND e.score IS NOT NULL))
  AND (e.activation_rebuilt_at = '' OR e.activation_rebuilt_at = a.rebuilt_iso)
ORDER BY activation_id, evaluator"""

# Reason, evidence and findings of chosen evaluation rows (by activation, evaluator, version and
# time), read only for the rows that fail rather than carried through the deduplication.
_TEXTS = """
SELECT activation_id, evaluator, evaluator_version, project_id, skill_name, skill_version,
       score, passed, label, reason, evidence_step_ids, evidence_tool_call_ids, findings, error,
       judge_model, tokens, cost_usd, latency_ms, activation_rebuilt_at,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM evaluations
WHERE project_id = {project:String} AND activation_id IN {ids:Array(String)}
  AND (passed = false OR (evaluator IN {scored:Array(String)} AND score IS NOT NULL))
LIMIT 1 BY activation_id, evaluator, evaluator_version, evaluated_at"""

# Projects and activations with evaluations failing among those written since a moment, over
# every project (online assignment finds its work with this).
_FAILED_SINCE = """
SELECT project_id, activation_id, toUnixTimestamp64Micro(max(evaluated_at)) AS evaluated_at_us
FROM evaluations
WHERE evaluated_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC')
  AND (passed = false OR (evaluator IN {scored:Array(String)} AND score IS NOT NULL))
GROUP BY project_id, activation_id
ORDER BY evaluated_at_us
LIMIT {limit:UInt32}"""

# Projects that may hold clusters to (re)compute: failures evaluated since a moment, or a run.
_PROJECTS = """
SELECT DISTINCT project_id FROM evaluations
WHERE evaluated_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND passed = false
UNION DISTINCT
SELECT DISTINCT project_id FROM cluster_runs"""

_RECORDS = """
SELECT record FROM activations
WHERE project_id = {project:String} AND activation_id IN {ids:Array(String)}
  AND formatDateTime(rebuilt_at, '%Y-%m-%dT%H:%i:%S.%fZ') IN {stamps:Array(String)}
LIMIT 1 BY activation_id, rebuilt_at"""

_STORED = """
SELECT activation_id, source_key, session_id, skill_name, skill_version,
       toUnixTimestamp64Micro(started_at) AS started_us, evaluators, kinds, severity, text,
       model, base64Encode(embedding) AS embedding
FROM failures
WHERE project_id = {project:String}
  AND started_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
  AND ({everything:Bool} OR activation_id IN {ids:Array(String)})
ORDER BY activation_id, computed_at DESC
LIMIT 1 BY activation_id"""

FAILURE_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("activation_id", _STR, "String", "activation_id"),
    ("source_key", _STR, "String", "source_key"),
    ("session_id", _STR, "String", "session_id"),
    ("skill_name", _STR, "String", "skill_name"),
    ("skill_version", _STR, "String", "skill_version"),
    ("started_at", _I64, "Int64", "fromUnixTimestamp64Micro(started_at, 'UTC')"),
    ("evaluators", pa.list_(_STR), "Array(String)", "evaluators"),
    ("kinds", pa.list_(_STR), "Array(String)", "kinds"),
    ("severity", _STR, "String", "severity"),
    ("text", _STR, "String", "text"),
    ("model", _STR, "String", "model"),
    ("embedding", pa.binary(), "String", "embedding"),
    ("computed_at", _I64, "Int64", "fromUnixTimestamp64Micro(computed_at, 'UTC')"),
)


class FailingEvaluation(TypedDict):
    """One current failing (or, for ``scored`` evaluators, scored) evaluation."""

    activation_id: str
    evaluator: str
    evaluator_version: str
    score: float | None
    passed: bool | None
    evaluated_at_us: int
    session_id: str
    skill_name: str
    skill_version: str
    started_us: int
    rebuilt_at: str
    """The activation's current rebuild, as its record carries it."""


class StoredFailure(TypedDict):
    activation_id: str
    source_key: str
    session_id: str
    skill_name: str
    skill_version: str
    started_us: int
    evaluators: list[str]
    kinds: list[str]
    severity: str
    text: str
    model: str
    embedding: bytes


class FailedSince(NamedTuple):
    project_id: str
    activation_id: str
    evaluated_at_us: int


class Failures:
    """Which activations fail, their records, and their stored failure texts and vectors."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def failing(
        self,
        project_id: str,
        since_us: int,
        *,
        scored: Sequence[str] = (),
        activation_ids: Sequence[str] | None = None,
    ) -> list[FailingEvaluation]:
        """Current failing evaluations of activations started since ``since_us`` (only of
        ``activation_ids`` when given), by activation and evaluator."""
        params = {
            "project": project_id,
            "since": int(since_us),
            "scored": list(scored),
            "ids": list(activation_ids or ()),
        }
        among = _IN_WINDOW if activation_ids is None else _AMONG_IDS
        if activation_ids is not None and since_us:
            among += " AND activation_id IN (" + _IN_WINDOW + ")"
        sql = _FAILING.replace(_CANDIDATES, among)
        found: list[FailingEvaluation] = self._store.query(sql, params)  # type: ignore[assignment]
        return found

    def texts(
        self, project_id: str, activation_ids: Sequence[str], *, scored: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """The failing (and, of ``scored`` evaluators, scored) evaluation rows of some
        activations with their reasons and findings (the caller picks rows by evaluator,
        version and ``evaluated_at_us``): ``Evaluation.from_row`` reads them."""
        if not activation_ids:
            return []
        params = {"project": project_id, "ids": sorted(set(activation_ids)), "scored": list(scored)}
        return self._store.query(_TEXTS, params)

    def failed_since(
        self, since_us: int, *, scored: Sequence[str] = (), limit: int = 10_000
    ) -> list[FailedSince]:
        """Activations (every project) with a failing evaluation written after ``since_us``,
        the earliest written first, with the newest such write of each."""
        found = self._store.query(
            _FAILED_SINCE, {"since": int(since_us), "scored": list(scored), "limit": limit}
        )
        return [
            FailedSince(str(r["project_id"]), str(r["activation_id"]), int(r["evaluated_at_us"]))
            for r in found
        ]

    def projects(self, since_us: int) -> list[str]:
        """Projects with failing evaluations written since ``since_us``, or clustered before."""
        found = self._store.query(_PROJECTS, {"since": int(since_us)})
        return sorted(str(r["project_id"]) for r in found)

    def records(self, project_id: str, rebuilds: Sequence[tuple[str, str]]) -> list[Activation]:
        """Activation records of some (activation id, rebuilt_at) pairs (any not stored are
        left out)."""
        if not rebuilds:
            return []
        wanted = set(rebuilds)
        params = {
            "project": project_id,
            "ids": sorted({a for a, _ in wanted}),
            "stamps": sorted({s for _, s in wanted}),
        }
        out = []
        for row in self._store.query(_RECORDS, params):
            record = Activation.model_validate_json(row["record"])
            if (record.activation_id, record.rebuilt_at) in wanted:
                out.append(record)
        return out

    def stored(
        self, project_id: str, since_us: int, activation_ids: Sequence[str] | None = None
    ) -> list[StoredFailure]:
        """The newest stored failure text and vector of each activation started since
        ``since_us`` (of ``activation_ids`` only, when given)."""
        params = {
            "project": project_id,
            "since": int(since_us),
            "everything": activation_ids is None,
            "ids": list(activation_ids or ()),
        }
        out: list[StoredFailure] = []
        for row in self._store.query(_STORED, params):
            row["embedding"] = base64.b64decode(row["embedding"])
            out.append(row)  # type: ignore[arg-type]
        return out

    def write(self, project_id: str, rows: Sequence[dict[str, Any]]) -> int:
        """Store failure rows (the columns of ``FAILURE_ROW``, times in µs); the newest row
        of an activation is its failure."""
        stamped = [{**row, "project_id": project_id} for row in rows]
        return insert_rows(self._store, "failures", FAILURE_ROW, stamped)
