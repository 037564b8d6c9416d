"""The ``evaluations`` table (migration 0005): one row per (activation, evaluator, version).

The store takes plain values, a dict per row (what ``Evaluation.to_row`` in
:mod:`skillsight.evaluators` gives) or a list per column (the scheduler's batches): the store
never imports the evaluators, which sit above it. A row with the key of an earlier one
replaces it; reads take the newest row of each key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa

from skillsight.errors import StoreError
from skillsight.store._read_models import (
    ANY_EVALUATION,
    EVALUATED_SKILLS,
    read_model_ready,
    set_read_model_ready,
)
from skillsight.store._sql import micros

if TYPE_CHECKING:
    from skillsight.store._store import Store

_STR = pa.string()

# (column, arrow type, ClickHouse type of the streamed column, expression that stores it)
EVALUATION_ROW: tuple[tuple[str, pa.DataType, str, str], ...] = (
    ("project_id", _STR, "String", "project_id"),
    ("activation_id", _STR, "String", "activation_id"),
    ("evaluator", _STR, "String", "evaluator"),
    ("evaluator_version", _STR, "String", "evaluator_version"),
    ("skill_name", _STR, "String", "skill_name"),
    ("skill_version", _STR, "String", "skill_version"),
    ("score", pa.float64(), "Nullable(Float64)", "score"),
    ("passed", pa.bool_(), "Nullable(Bool)", "passed"),
    ("label", _STR, "String", "label"),
    ("reason", _STR, "String", "reason"),
    (
        "evidence_step_ids",
        pa.list_(pa.int64()),
        "Array(Int64)",
        "arrayMap(x -> toUInt32(x), evidence_step_ids)",
    ),
    ("evidence_tool_call_ids", pa.list_(_STR), "Array(String)", "evidence_tool_call_ids"),
    ("findings", _STR, "String", "findings"),
    ("error", _STR, "String", "error"),
    ("judge_model", _STR, "String", "judge_model"),
    ("tokens", pa.int64(), "Int64", "toUInt64(tokens)"),
    ("cost_usd", pa.float64(), "Float64", "cost_usd"),
    ("latency_ms", pa.float64(), "Float64", "latency_ms"),
    ("evaluated_at", pa.int64(), "Int64", "fromUnixTimestamp64Micro(evaluated_at_us, 'UTC')"),
    ("activation_rebuilt_at", _STR, "String", "activation_rebuilt_at"),
    ("activation_digest", _STR, "String", "activation_digest"),
    ("unseen", pa.list_(_STR), "Array(String)", "unseen"),
    ("inputs_hash", _STR, "String", "inputs_hash"),
    ("compared_with", _STR, "String", "compared_with"),
)
# The streamed column carrying evaluated_at is named for its unit.
_SOURCE = {"evaluated_at": "evaluated_at_us"}
_REQUIRED = frozenset({"project_id", "activation_id", "evaluator", "evaluator_version"})

SCHEMA = pa.schema([(_SOURCE.get(name, name), kind) for name, kind, _, _ in EVALUATION_ROW])
COLUMNS = [name for name, _, _, _ in EVALUATION_ROW]
SELECT = ", ".join(expression for _, _, _, expression in EVALUATION_ROW)
STRUCTURE = ", ".join(
    f"{_SOURCE.get(name, name)} {ch_type}" for name, _, ch_type, _ in EVALUATION_ROW
)


EvaluationColumns = Mapping[str, Sequence[Any]]
"""Evaluation rows as columns: per key of a row (``Evaluation.to_row``'s, and the scheduler's
``activation_started_at`` and ``activation_rerun_id``), its values in row order."""

_DEFAULTS = {"inputs_hash": "", "compared_with": "", "activation_digest": ""}


def row_columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Rows made columns: every key any row has, ``None`` where a row lacks it (a default
    column's default)."""
    keys = dict.fromkeys(key for row in rows for key in row)
    return {key: [row.get(key, _DEFAULTS.get(key)) for row in rows] for key in keys}


def _count(columns: EvaluationColumns) -> int:
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise StoreError(f"evaluation columns of unequal lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def evaluation_table(project_id: str, columns: EvaluationColumns, count: int) -> pa.Table:
    """One Arrow batch of ``count`` evaluation rows given as columns, all stored under
    ``project_id``; a column not given takes its default (``None`` when it has none)."""
    required = sorted(_REQUIRED - {"project_id"})
    if not all(key in columns and all(columns[key]) for key in required):
        for index in range(count):
            missing = [key for key in required if key not in columns or not columns[key][index]]
            if missing:
                raise StoreError(f"evaluation row {index} has no {', '.join(missing)}")
    arrays = []
    try:
        for field in SCHEMA:
            if field.name == "project_id":
                arrays.append(pa.array([project_id] * count, field.type))
                continue
            values = columns.get(field.name)
            if values is None:
                values = [_DEFAULTS.get(field.name)] * count
            arrays.append(pa.array(values, field.type))
        return pa.Table.from_arrays(arrays, schema=SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise StoreError(f"malformed evaluation rows: {exc}") from exc


# The newest row of each (evaluator, version) of one activation; reruns replaced older ones.
_LIST_EVALUATIONS = """
SELECT project_id, activation_id, evaluator, evaluator_version, skill_name, skill_version,
       score, passed, label, reason, evidence_step_ids, evidence_tool_call_ids, findings, error,
       judge_model, tokens, cost_usd, latency_ms, activation_rebuilt_at, activation_digest,
       unseen, inputs_hash, compared_with,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM (
    SELECT * FROM evaluations
    WHERE project_id = {project:String} AND activation_id = {activation:String}
    ORDER BY evaluated_at DESC
    LIMIT 1 BY evaluator, evaluator_version
)
ORDER BY evaluator, evaluator_version"""

# LIST_EVALUATIONS for several activations at once (a page of GET /api/v1/activations).
_LIST_EVALUATIONS_OF = """
SELECT project_id, activation_id, evaluator, evaluator_version, skill_name, skill_version,
       score, passed, label, reason, evidence_step_ids, evidence_tool_call_ids, findings, error,
       judge_model, tokens, cost_usd, latency_ms, activation_rebuilt_at, activation_digest,
       unseen, inputs_hash, compared_with,
       toUnixTimestamp64Micro(evaluated_at) AS evaluated_at_us
FROM (
    SELECT * FROM evaluations
    WHERE project_id = {project:String} AND __ACTIVATIONS__
    ORDER BY evaluated_at DESC
    LIMIT 1 BY activation_id, evaluator, evaluator_version
)
ORDER BY activation_id, evaluator, evaluator_version"""

# Per activation and (evaluator, version), its newest row's record of what it scored: the
# activation's digest, the digest of all the evaluator was shown, what it was compared with.
_SCORED_BEFORE = """
SELECT activation_id, evaluator, evaluator_version, activation_digest, inputs_hash,
       compared_with
FROM evaluations
WHERE project_id = {project:String} AND __ACTIVATIONS__
ORDER BY evaluated_at DESC
LIMIT 1 BY activation_id, evaluator, evaluator_version"""

DIGESTS_READ_MODEL = "evaluation_digests"
"""The ``read_models`` name recording that ``evaluation_digests`` holds every evaluation row."""

# The digests' columns (in the order of the rows'), from an evaluation batch's streamed columns.
_DIGESTED = frozenset(
    {
        "project_id",
        "skill_name",
        "activation_id",
        "evaluator",
        "evaluator_version",
        "activation_digest",
        "inputs_hash",
        "compared_with",
        "evaluated_at",
    }
)
_DIGEST_COLUMNS = [name for name, _, _, _ in EVALUATION_ROW if name in _DIGESTED]
_DIGEST_SELECT = ", ".join(e for name, _, _, e in EVALUATION_ROW if name in _DIGESTED)
# The rows written before the digests existed, a skill at a time (rows written meanwhile are
# copied by their writers; a row copied twice replaces itself).
_BACKFILL_DIGESTS = f"""
INSERT INTO evaluation_digests ({", ".join(_DIGEST_COLUMNS)})
SELECT {", ".join(_DIGEST_COLUMNS)} FROM evaluations
WHERE project_id = {{project:String}} AND skill_name = {{skill:String}}"""

# The activations of those reads: by id, or each under its current skill. By id a bloom filter
# picks the granules, and the hundreds of ids of a scheduler's batch pass nearly every granule's
# filter (at 10M activations, 100 ids: 2,764 of 8,730 granules read, 360 ms of CPU). With the
# skill the table's sort key (project, skill, activation) picks them: 174 granules, 129 ms.
_BY_ACTIVATION = {
    False: "activation_id IN {activations:Array(String)}",
    True: "(skill_name, activation_id) IN "
    "arrayZip({skills:Array(String)}, {activations:Array(String)})",
}
_OF_ACTIVATIONS = {
    skills: _LIST_EVALUATIONS_OF.replace("__ACTIVATIONS__", condition)
    for skills, condition in _BY_ACTIVATION.items()
}
_SCORED_BEFORE_OF = {
    skills: _SCORED_BEFORE.replace("__ACTIVATIONS__", condition)
    for skills, condition in _BY_ACTIVATION.items()
}
# By skill and id from ``evaluation_digests`` (migration 0026), a narrow copy of those columns in
# granules of 256 rows: a look-up of one activation reads one of them, not 8,192 wide rows.
_SCORED_BEFORE_DIGESTS = _SCORED_BEFORE_OF[True].replace(
    "FROM evaluations", "FROM evaluation_digests"
)

# What LLM judges spent since a moment, over every project (the daily spend cap is the
# service's): the ledger (migration 0018), and the judges' evaluation rows for what was spent
# before it existed. Replaced evaluation rows may be merged away, so those count at least what
# was spent after them; each sum is a lower bound, and the larger one is taken.
_JUDGE_SPEND_SINCE = """
SELECT greatest(
    (SELECT sum(cost_usd) FROM judge_spend
     WHERE spent_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')),
    (SELECT sum(cost_usd) FROM evaluations
     WHERE judge_model != '' AND evaluated_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC'))
) AS spent"""

# The ledger's columns, from an evaluation batch's streamed columns.
_SPENT_COLUMNS = [
    "spent_at",
    "project_id",
    "activation_id",
    "evaluator",
    "judge_model",
    "tokens",
    "cost_usd",
]
_SPENT_SELECT = (
    "fromUnixTimestamp64Micro(evaluated_at_us, 'UTC'), project_id, activation_id, evaluator, "
    "judge_model, toUInt64(tokens), cost_usd"
)


@dataclass(frozen=True, slots=True)
class ScoredBefore:
    """What an activation's newest stored row of one evaluator version scored."""

    activation_id: str
    evaluator: str
    evaluator_version: str
    activation_digest: str
    """The activation record's digest then ('' on rows from before it was kept)."""
    inputs_hash: str
    """The digest of what the evaluator was shown ('' when not kept)."""
    compared_with: str
    """What the evaluator compared it with from outside it ('' when nothing)."""

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> ScoredBefore:
        """From a stored row (of :meth:`Evaluations.of` or :meth:`Evaluations.scored_before`)."""
        return cls(
            str(row["activation_id"]),
            str(row["evaluator"]),
            str(row["evaluator_version"]),
            str(row["activation_digest"]),
            str(row["inputs_hash"]),
            str(row["compared_with"]),
        )


class EvaluationRow(TypedDict):
    """A stored evaluation (the newest row of its key)."""

    project_id: str
    activation_id: str
    evaluator: str
    evaluator_version: str
    skill_name: str
    skill_version: str
    score: float | None
    passed: bool | None
    label: str
    reason: str
    evidence_step_ids: list[int]
    evidence_tool_call_ids: list[str]
    findings: str
    error: str
    judge_model: str
    tokens: int
    cost_usd: float
    latency_ms: float
    activation_rebuilt_at: str
    activation_digest: str
    unseen: list[str]
    inputs_hash: str
    compared_with: str
    evaluated_at_us: int


class Evaluations:
    """The ``evaluations`` table."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._digests_ready = False

    def write(self, project_id: str, evaluations: Sequence[Mapping[str, Any]]) -> int:
        """Insert evaluation rows (``Evaluation.to_row`` dicts) in one batch; a row with the key
        of an earlier one (activation, evaluator, version) replaces it. The scorecard read
        models get their copy and marks after the rows (:mod:`._rollups`), with each row's
        ``activation_started_at`` (the activation record's ``started_at``) when it has one,
        else its activation's start looked up; rows whose ``activation_rerun_id`` names a
        paired rerun (the activation record's ``rerun_id``) are stored but not copied: rerun
        traffic never counts in the production scorecards. A judge's row that cost tokens is
        also entered in the spend ledger (``judge_spend``), which nothing replaces."""
        return self.write_columns(project_id, row_columns(evaluations))

    def write_columns(self, project_id: str, columns: EvaluationColumns) -> int:
        """:meth:`write` of rows given as columns (the scheduler builds its batches so: no
        dict per row)."""
        count = _count(columns)
        if not count:
            return 0
        table = evaluation_table(project_id, columns, count)
        rollups = self._store.scorecards.rollups
        rollups.ready()  # asked before the first row lands: an empty store needs no backfill
        self.digests_ready()  # the same
        self._store.insert_select("evaluations", COLUMNS, SELECT, table, STRUCTURE)
        # after the rows: what the scheduler reads back must never claim a row not written
        self._store.insert_select(
            "evaluation_digests", _DIGEST_COLUMNS, _DIGEST_SELECT, table, STRUCTURE
        )
        reruns = columns.get("activation_rerun_id")
        production = (
            [i for i, rerun in enumerate(reruns) if not rerun] if reruns else list(range(count))
        )
        starts = columns.get("activation_started_at")
        started = [str(starts[i] or "") for i in production] if starts else []
        copied = table
        if len(production) < count:
            copied = table.take(pa.array(production, pa.int64()))
        rollups.record(project_id, copied, started)
        # last: a retry after a failure above writes the evaluations again (they replace),
        # and the ledger, which nothing replaces, only once
        models = columns.get("judge_model")
        costs = columns.get("cost_usd") or [None] * count
        tokens = columns.get("tokens") or [None] * count
        paid = [i for i in range(count) if models[i] and (costs[i] or tokens[i])] if models else []
        if paid:
            spent = table.take(pa.array(paid, pa.int64()))
            self._store.insert_select(
                "judge_spend", _SPENT_COLUMNS, _SPENT_SELECT, spent, STRUCTURE
            )
        return count

    def for_activation(
        self, project_id: str, activation_id: str, *, skill: str | None = None
    ) -> list[EvaluationRow]:
        """The latest row of each (evaluator, version) of one activation, by evaluator;
        ``skill``, its current skill: only the rows recorded under it (as :meth:`of`)."""
        if skill is not None:
            return self.of(project_id, [activation_id], skills=[skill])[activation_id]
        found: list[EvaluationRow] = self._store.query(  # type: ignore[assignment]
            _LIST_EVALUATIONS, {"project": project_id, "activation": activation_id}
        )
        return found

    def of(
        self,
        project_id: str,
        activation_ids: Sequence[str],
        *,
        skills: Sequence[str] | None = None,
    ) -> dict[str, list[EvaluationRow]]:
        """:meth:`for_activation` of several activations in one query, by activation id.
        ``skills``, each activation's current skill (in the order of ``activation_ids``): only
        the rows recorded under it, found through the table's sort key (a row recorded under
        another skill scored another record of the activation: its digest differs)."""
        params = _activations(project_id, activation_ids, skills)
        out: dict[str, list[EvaluationRow]] = {a: [] for a in activation_ids}
        if params["activations"]:
            for row in self._store.query(_OF_ACTIVATIONS[skills is not None], params):
                out[str(row["activation_id"])].append(row)  # type: ignore[arg-type]
        return out

    def scored_before(
        self,
        project_id: str,
        activation_ids: Sequence[str],
        *,
        skills: Sequence[str] | None = None,
    ) -> list[ScoredBefore]:
        """Per activation and (evaluator, version) with a stored row, what the newest row
        scored: the activation's digest, the digest of its inputs, what it was compared with.
        One query; ``skills`` as in :meth:`of`."""
        params = _activations(project_id, activation_ids, skills)
        if not params["activations"]:
            return []
        if skills is not None and self.digests_ready():
            found = self._store.query(_SCORED_BEFORE_DIGESTS, params)
        else:
            found = self._store.query(_SCORED_BEFORE_OF[skills is not None], params)
        return [ScoredBefore.of_row(row) for row in found]

    def digests_ready(self) -> bool:
        """Whether ``evaluation_digests`` holds every evaluation row (:meth:`scored_before`
        reads it then). A store without evaluations is ready as soon as this is asked; one
        with rows from before it existed, once :meth:`backfill_digests` has run."""
        self._digests_ready = self._digests_ready or read_model_ready(
            self._store, DIGESTS_READ_MODEL, ANY_EVALUATION
        )
        return self._digests_ready

    def backfill_digests(self) -> int:
        """Copy every evaluation row's digests into ``evaluation_digests``, a skill at a time,
        and record the read model as ready. Rows written meanwhile are copied by their writers.
        Returns the (project, skill) pairs copied."""
        skills = self._store.query(EVALUATED_SKILLS, {"project": ""})
        for row in skills:
            params = {"project": str(row["project_id"]), "skill": str(row["skill_name"])}
            self._store.execute(_BACKFILL_DIGESTS, params)
        set_read_model_ready(self._store, DIGESTS_READ_MODEL)
        self._digests_ready = True
        return len(skills)

    def judge_spend_since(self, since: datetime) -> float:
        """Dollars LLM judges spent since ``since`` (their evaluation rows, every project)."""
        found = self._store.query(_JUDGE_SPEND_SINCE, {"since": micros(since)})
        return float(found[0]["spent"] or 0.0) if found else 0.0


def _activations(
    project_id: str, activation_ids: Sequence[str], skills: Sequence[str] | None
) -> dict[str, Any]:
    """The parameters of a read of these activations (each once), with their skills. One whose
    skill name no encoder takes (a lone surrogate) is left out: no row of it can have been
    written, and its name would fail the read of the others."""
    if skills is None:
        return {"project": project_id, "activations": list(dict.fromkeys(activation_ids))}
    skill_of = {
        activation_id: skill
        for activation_id, skill in zip(activation_ids, skills, strict=True)
        if _encodable(skill)
    }
    return {"project": project_id, "activations": list(skill_of), "skills": [*skill_of.values()]}


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
