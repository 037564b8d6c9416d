"""Rows of the ``skills`` table (migration 0003), as one Arrow batch per insert."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from skillsight.skills import SkillManifest

_STR = pa.string()
_I64 = pa.int64()

# (column, arrow type, ClickHouse type of the streamed column, expression that stores it);
# lists travel as JSON text so both transports stream plain strings (chdb reads the Arrow
# strings as Nullable, hence the ifNull).
SKILL_ROW: tuple[tuple[str, pa.DataType, str, str], ...] = (
    ("project_id", _STR, "String", "project_id"),
    ("name", _STR, "String", "name"),
    ("version", _STR, "String", "version"),
    ("description", _STR, "String", "description"),
    ("allowed_tools", _STR, "String", "JSONExtract(ifNull(allowed_tools, '[]'), 'Array(String)')"),
    ("allowed_tools_declared", _I64, "Int64", "allowed_tools_declared != 0"),
    ("scripts", _STR, "String", "JSONExtract(ifNull(scripts, '[]'), 'Array(String)')"),
    ("source_uri", _STR, "String", "source_uri"),
    ("body", _STR, "String", "body"),
    ("frontmatter", _STR, "String", "frontmatter"),
    ("scanned_at", _I64, "Int64", "fromUnixTimestamp64Micro(scanned_at, 'UTC')"),
)

SKILL_COLUMNS = [column for column, _, _, _ in SKILL_ROW]
SKILL_SELECT = ", ".join(expression for _, _, _, expression in SKILL_ROW)
SKILL_STRUCTURE = ", ".join(f"{column} {ch_type}" for column, _, ch_type, _ in SKILL_ROW)
_SCHEMA = pa.schema([(column, arrow_type) for column, arrow_type, _, _ in SKILL_ROW])


def skill_table(
    project_id: str, manifests: Sequence[SkillManifest], scanned_at: datetime | None
) -> pa.Table:
    stamp = scanned_at or datetime.now(UTC)
    micros = int(stamp.timestamp() * 1_000_000)
    rows: dict[str, list[Any]] = {column: [] for column in SKILL_COLUMNS}
    for manifest in manifests:
        values: dict[str, Any] = {
            "project_id": project_id,
            "name": manifest.name,
            "version": manifest.version,
            "description": manifest.description,
            "allowed_tools": json.dumps(manifest.allowed_tools or []),
            "allowed_tools_declared": int(manifest.allowed_tools is not None),
            "scripts": json.dumps(manifest.scripts),
            "source_uri": manifest.path.absolute().as_uri(),
            "body": manifest.body,
            # YAML dates and the like have no JSON form; their text is what the author wrote
            "frontmatter": json.dumps(manifest.frontmatter, sort_keys=True, default=str),
            "scanned_at": micros,
        }
        for column in SKILL_COLUMNS:
            rows[column].append(values[column])
    return pa.table(rows, schema=_SCHEMA)


def catalogue_entry(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row as the API and CLI show it: lists and JSON decoded, time in ISO 8601."""
    entry = dict(row)
    declared = bool(entry.pop("allowed_tools_declared"))
    entry["allowed_tools"] = list(entry["allowed_tools"]) if declared else None
    if "frontmatter" in entry:
        entry["frontmatter"] = json.loads(entry["frontmatter"] or "{}")
    micros = int(entry.pop("scanned_at_us"))
    entry["scanned_at"] = (
        datetime.fromtimestamp(micros / 1_000_000, UTC).isoformat().replace("+00:00", "Z")
    )
    return entry
