"""Rows of the ``evaluations`` table (migration 0005) as one Arrow batch per insert.

The store takes plain dicts (what ``Evaluation.to_row`` in :mod:`skillsight.evaluators` gives):
the collector never imports the evaluators, which sit above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from skillsight.errors import StoreError

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


def evaluation_table(project_id: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """One Arrow batch of evaluation rows, all stored under ``project_id``."""
    prepared = []
    for index, row in enumerate(rows):
        missing = sorted(k for k in _REQUIRED - {"project_id"} if not row.get(k))
        if missing:
            raise StoreError(f"evaluation row {index} has no {', '.join(missing)}")
        prepared.append({**row, "project_id": project_id})
    try:
        return pa.Table.from_pylist(prepared, schema=SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise StoreError(f"malformed evaluation rows: {exc}") from exc
