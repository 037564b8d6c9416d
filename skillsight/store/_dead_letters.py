"""The ``ingest_dead_letters`` table: rows no INSERT could take, kept with the reason.

The batch writer bisects a failing INSERT until the rows that fail on their own are found, and
files only those here (migration 0010). A dead letter is the raw row as the decoder made it,
as JSON, so it can be read, fixed and sent again; it never holds a row another tenant sent.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa

if TYPE_CHECKING:
    from skillsight.store._store import Store

_COLUMNS = ("project_id", "signal", "trace_id", "item_id", "reason", "row_json")
_SCHEMA = pa.schema([(name, pa.string()) for name in _COLUMNS])
_STRUCTURE = ", ".join(f"{name} String" for name in _COLUMNS)
_REASON_CHARS = 2000

_COUNT = "SELECT count() AS rows FROM ingest_dead_letters"

_FIND = """
SELECT signal, toString(dead_at) AS dead_at, trace_id, item_id, reason, row_json
FROM ingest_dead_letters
WHERE project_id = {project:String}
ORDER BY dead_at DESC, item_id
LIMIT {limit:UInt32}"""


class DeadLetter(TypedDict):
    """One row the store refused, as an operator reads it back."""

    signal: str
    dead_at: str
    trace_id: str
    item_id: str
    reason: str
    row_json: str


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return value


class DeadLetters:
    """Rows refused by the store, per project, with the reason."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def insert(self, signal: str, rows: pa.Table, reason: str) -> int:
        """File the raw rows of ``rows`` (a span or event batch) with ``reason``."""
        if not rows.num_rows:
            return 0
        records = rows.to_pylist()
        item = "span_id" if signal == "traces" else "record_id"
        table = pa.table(
            {
                "project_id": [str(r.get("project_id", "")) for r in records],
                "signal": [signal] * len(records),
                "trace_id": [str(r.get("trace_id", "")) for r in records],
                "item_id": [str(r.get(item, "")) for r in records],
                "reason": [reason[:_REASON_CHARS]] * len(records),
                "row_json": [json.dumps(r, ensure_ascii=False, default=_jsonable) for r in records],
            },
            schema=_SCHEMA,
        )
        self._store.insert_select(
            "ingest_dead_letters", _COLUMNS, ", ".join(_COLUMNS), table, _STRUCTURE
        )
        return len(records)

    def count(self) -> int:
        """Dead letters of every project (an operator's figure, for ``/healthz``)."""
        return int(self._store.query(_COUNT)[0]["rows"])

    def find(self, project_id: str, *, limit: int = 100) -> list[DeadLetter]:
        """A project's dead letters, newest first."""
        found: list[DeadLetter] = self._store.query(  # type: ignore[assignment]
            _FIND, {"project": project_id, "limit": limit}
        )
        return found
