"""Golden sets (migration 0011): ``golden_sets`` (a row per version) and ``golden_cases``.

A version is written whole, cases first and its ``golden_sets`` row last (the version's commit
marker: readers list only versions that have one), so a reader never sees half a version. The
store takes plain rows and gives back plain rows; the case itself travels as JSON text
(``record``), which the goldens package reads into its model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa

from skillsight.store._sql import RowLayout, insert_rows, iso_micros

if TYPE_CHECKING:
    from skillsight.store._store import Store

_STR = pa.string()
_I64 = pa.int64()


def time_column(name: str) -> tuple[str, pa.DataType, str, str]:
    """A DateTime64 column streamed as µs since the epoch."""
    return (name, _I64, "Int64", f"fromUnixTimestamp64Micro({name}, 'UTC')")


SET_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("set_id", _STR, "String", "set_id"),
    ("version", _I64, "Int64", "toUInt32(version)"),
    ("skill_name", _STR, "String", "skill_name"),
    ("name", _STR, "String", "name"),
    ("description", _STR, "String", "description"),
    ("defaults", _STR, "String", "defaults"),
    ("note", _STR, "String", "note"),
    ("case_count", _I64, "Int64", "toUInt32(case_count)"),
    time_column("created_at"),
)

CASE_ROW: RowLayout = (
    ("project_id", _STR, "String", "project_id"),
    ("set_id", _STR, "String", "set_id"),
    ("version", _I64, "Int64", "toUInt32(version)"),
    ("position", _I64, "Int64", "toUInt32(position)"),
    ("case_id", _STR, "String", "case_id"),
    ("status", _STR, "String", "status"),
    ("record", _STR, "String", "record"),
    ("activation_id", _STR, "String", "activation_id"),
    ("cluster_id", _STR, "String", "cluster_id"),
    time_column("created_at"),
)

_SET_COLUMNS = """set_id, version, skill_name, name, description, defaults, note, case_count,
       toUnixTimestamp64Micro(created_at) AS created_at_us"""

# Every committed version of the project's sets (newest version of each set first).
_LIST_SETS = f"""
SELECT {_SET_COLUMNS}
FROM golden_sets
WHERE project_id = {{project:String}}
  AND ({{skill:String}} = '' OR skill_name = {{skill:String}})
  AND ({{set:String}} = '' OR set_id = {{set:String}})
ORDER BY set_id, version DESC, created_at DESC
LIMIT 1 BY set_id, version"""

_CASES = """
SELECT set_id, version, position, case_id, status, record
FROM golden_cases
WHERE project_id = {project:String} AND set_id = {set:String} AND version = {version:UInt32}
ORDER BY position, created_at DESC
LIMIT 1 BY case_id"""

# Cases promoted from any of some activations, in any version of any set of the project.
_PROMOTED = """
SELECT DISTINCT set_id, activation_id
FROM golden_cases
WHERE project_id = {project:String} AND activation_id IN {activations:Array(String)}"""


class GoldenSetRow(TypedDict):
    """One version of a golden set, as stored."""

    set_id: str
    version: int
    skill_name: str
    name: str
    description: str
    defaults: str
    """JSON object."""
    note: str
    case_count: int
    created_at: str


class GoldenCaseRow(TypedDict):
    set_id: str
    version: int
    position: int
    case_id: str
    status: str
    record: str
    """The case as JSON."""


def _set_row(row: dict[str, Any]) -> GoldenSetRow:
    out = dict(row)
    out["created_at"] = iso_micros(int(out.pop("created_at_us")))
    out["version"] = int(out["version"])
    out["case_count"] = int(out["case_count"])
    return out  # type: ignore[return-value]


class GoldenSets:
    """The ``golden_sets`` and ``golden_cases`` tables."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def write_version(
        self, project_id: str, version: dict[str, Any], cases: Sequence[dict[str, Any]]
    ) -> None:
        """Write one version: its case rows (``position``, ``case_id``, ``status``, ``record``,
        ``activation_id``, ``cluster_id``), then its set row, which commits it. Times are µs."""
        stamp = int(version["created_at"])
        key = {"project_id": project_id, "set_id": version["set_id"]}
        rows = [
            {**key, "version": version["version"], "created_at": stamp, **case} for case in cases
        ]
        insert_rows(self._store, "golden_cases", CASE_ROW, rows)
        insert_rows(
            self._store, "golden_sets", SET_ROW, [{**version, **key, "case_count": len(cases)}]
        )

    def versions(self, project_id: str, *, skill: str = "", set_id: str = "") -> list[GoldenSetRow]:
        """Every committed version, by set then newest version first."""
        params = {"project": project_id, "skill": skill, "set": set_id}
        return [_set_row(r) for r in self._store.query(_LIST_SETS, params)]

    def latest(self, project_id: str, *, skill: str = "") -> list[GoldenSetRow]:
        """The newest version of each set (of ``skill``), newest set first."""
        newest: dict[str, GoldenSetRow] = {}
        for row in self.versions(project_id, skill=skill):
            newest.setdefault(row["set_id"], row)
        return sorted(newest.values(), key=lambda r: r["created_at"], reverse=True)

    def version(self, project_id: str, set_id: str, version: int = 0) -> GoldenSetRow | None:
        """One version of a set (0: its newest)."""
        for row in self.versions(project_id, set_id=set_id):
            if version in (0, row["version"]):
                return row
        return None

    def cases(self, project_id: str, set_id: str, version: int) -> list[GoldenCaseRow]:
        params = {"project": project_id, "set": set_id, "version": version}
        found: list[GoldenCaseRow] = self._store.query(_CASES, params)  # type: ignore[assignment]
        return found

    def promoted(self, project_id: str, activation_ids: Sequence[str]) -> dict[str, list[str]]:
        """Per activation, the sets holding a case promoted from it."""
        out: dict[str, list[str]] = {}
        if activation_ids:
            params = {"project": project_id, "activations": list(activation_ids)}
            for row in self._store.query(_PROMOTED, params):
                out.setdefault(str(row["activation_id"]), []).append(str(row["set_id"]))
        return out
