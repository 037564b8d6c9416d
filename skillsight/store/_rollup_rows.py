"""A refresh's rows as it writes them: the hour rows ClickHouse computed (``REFRESH_HOURS``), the
day rows summed from them in Python (one read of the source rows for both), a marker row per
(skill, day), inserted into ``scorecard_hours`` and then ``scorecard_days`` under one stamp."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from skillsight.store._day_aggregates import (
    REFRESH_COLUMNS,
    ROLLUP_FLOAT_SUMS,
    ROLLUP_FORMAT,
    ROLLUP_SUMS,
)

if TYPE_CHECKING:
    from skillsight.store._store import Store

_STR = pa.string()


def write_refresh(
    store: Store,
    project_id: str,
    stamp: int,
    cells: Sequence[tuple[str, str]],
    hours: list[dict[str, Any]],
) -> None:
    """Insert a refresh of some (skill, day) ``cells`` of a project: their hour rows, then the
    day rows they sum to, each table with a marker row per cell, all stamped ``stamp`` (a
    reader that sees a day's refresh finds its hours)."""
    markers = [_marker(skill, day) for skill, day in cells]
    for table, rows in (("scorecard_hours", hours), ("scorecard_days", _days_of(hours))):
        batch = _batch(project_id, stamp, rows + markers)
        targets = [t for t in _TARGETS if table == "scorecard_hours" or t[0] != "hour"]
        columns = [column for column, _ in targets]
        select = ", ".join(expression for _, expression in targets)
        store.insert_select(table, columns, select, batch, _STRUCTURE)


def _days_of(hours: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A refresh's day rows, from its hour rows (``REFRESH_HOURS``): per (skill, day,
    kind, version, evaluator) the sums of its hours, the least minimum of the hours that
    scored, the first and last start. Exact: an activation starts in one hour, so its distinct
    counts add up; the float sums are added in hour order (a day's sum from the rows would add
    them in another: the last bits of a mean)."""
    days: dict[tuple[str, str, int, str, str], dict[str, Any]] = {}
    for row in hours:
        key = (
            str(row["skill_name"]),
            str(row["day"]),
            int(row["row_kind"]),
            str(row["skill_version"]),
            str(row["evaluator"]),
        )
        day = days.get(key)
        if day is None:
            days[key] = {**row, "hour": 0}
            if not int(row["row_scored"]):
                days[key]["row_score_min"] = None
            continue
        for name in ROLLUP_SUMS:
            day[name] = int(day[name]) + int(row[name])
        for name in ROLLUP_FLOAT_SUMS:
            day[name] = float(day[name]) + float(row[name])
        if int(row["row_scored"]):
            low = float(row["row_score_min"])
            day["row_score_min"] = (
                low if day["row_score_min"] is None else min(day["row_score_min"], low)
            )
        day["first_us"] = min(int(day["first_us"]), int(row["first_us"]))
        day["last_us"] = max(int(day["last_us"]), int(row["last_us"]))
    out = []
    for key in sorted(days):
        day = days[key]
        if day["row_score_min"] is None:
            day["row_score_min"] = 0.0
        out.append(day)
    return out


def _marker(skill: str, day: str) -> dict[str, Any]:
    """The marker row of a skill's day's refresh (kind 0), carrying the format it wrote."""
    return {
        **dict.fromkeys(REFRESH_COLUMNS, 0),
        "skill_name": skill,
        "day": day,
        "skill_version": "",
        "evaluator": "",
        "row_activations": ROLLUP_FORMAT,
    }


_TEXTS = frozenset({"skill_name", "day", "skill_version", "evaluator"})
_INTS = frozenset(ROLLUP_SUMS) | {"hour", "row_kind", "first_us", "last_us"}


def _type(name: str) -> pa.DataType:
    return _STR if name in _TEXTS else pa.int64() if name in _INTS else pa.float64()


_TYPES = {name: _type(name) for name in REFRESH_COLUMNS}
_CLICKHOUSE_TYPES = {"string": "String", "int64": "Int64", "double": "Float64"}
_BATCH = pa.schema(
    [("project_id", _STR), ("stamp", pa.int64())] + [(name, kind) for name, kind in _TYPES.items()]
)
_TARGETS = (
    ("project_id", "project_id"),
    ("skill_name", "skill_name"),
    ("day", "toDate(day)"),
    ("hour", "toUInt8(hour)"),
    ("kind", "toUInt8(row_kind)"),
    ("skill_version", "skill_version"),
    ("evaluator", "evaluator"),
    ("activations", "toUInt64(row_activations)"),
    ("scored", "toUInt64(row_scored)"),
    ("not_evaluated", "toUInt64(row_not_evaluated)"),
    ("passed", "toUInt64(row_passed)"),
    ("score_sum", "row_score_sum"),
    ("score_min", "row_score_min"),
    ("first_started", "fromUnixTimestamp64Micro(first_us, 'UTC')"),
    ("last_started", "fromUnixTimestamp64Micro(last_us, 'UTC')"),
    ("cost_usd", "cost_usd"),
    ("tokens", "toUInt64(tokens)"),
    ("duration_ms", "duration_ms"),
    ("tool_calls", "toUInt64(tool_calls)"),
    ("refreshed_at", "fromUnixTimestamp64Micro(stamp, 'UTC')"),
)
"""(column of scorecard_hours, expression of the batch); scorecard_days has all but ``hour``."""
_STRUCTURE = ", ".join(f"{field.name} {_CLICKHOUSE_TYPES[str(field.type)]}" for field in _BATCH)


def _batch(project_id: str, stamp: int, rows: list[dict[str, Any]]) -> pa.Table:
    columns: dict[str, list[Any]] = {
        "project_id": [project_id] * len(rows),
        "stamp": [stamp] * len(rows),
    }
    for name, kind in _TYPES.items():
        convert = str if kind == _STR else int if kind == pa.int64() else float
        columns[name] = [convert(row[name]) for row in rows]
    return pa.table(columns, schema=_BATCH)
