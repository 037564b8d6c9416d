"""The ``skills`` table (migration 0003): the skill catalogue, every scanned version.

A row per (project, name, version); a re-scan of a version replaces its row. Lists travel as
JSON text in the insert batch so both transports stream plain strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import pyarrow as pa

from skillsight.skills import SkillManifest
from skillsight.store._sql import iso_micros

if TYPE_CHECKING:
    from skillsight.store._store import Store


class SkillEntry(TypedDict):
    """A catalogue entry as the API and CLI show it."""

    name: str
    version: str
    description: str
    allowed_tools: list[str] | None
    """None: the skill declares no allowed-tools (unconstrained)."""
    scripts: list[str]
    source_uri: str
    scanned_at: str
    body: NotRequired[str]
    frontmatter: NotRequired[dict[str, Any]]


_SKILL_COLUMNS = """
    name, version, description, allowed_tools, allowed_tools_declared, scripts, source_uri,
    toUnixTimestamp64Micro(scanned_at) AS scanned_at_us"""

# Every (name, version) of a project's catalogue, newest scan first within a name.
_LIST_SKILLS = f"""
SELECT {_SKILL_COLUMNS}
FROM (
    SELECT * FROM skills
    WHERE project_id = {{project:String}} AND ({{name:String}} = '' OR name = {{name:String}})
    ORDER BY scanned_at DESC
    LIMIT 1 BY name, version
)
ORDER BY name, scanned_at_us DESC, version
LIMIT {{limit:UInt32}}"""

# The most recently scanned version of each skill, with its procedure and frontmatter: the
# contract an activation is judged against when its own version is unknown.
_SKILL_CONTRACTS = f"""
SELECT {_SKILL_COLUMNS}, body, frontmatter
FROM (
    SELECT * FROM skills
    WHERE project_id = {{project:String}}
    ORDER BY scanned_at DESC, version
    LIMIT 1 BY name
)
ORDER BY name"""

# Every recorded version of each skill, without the procedure: the catalogue a rebuild joins
# activations to by name and version. Within a name the latest comes first, as SKILL_CONTRACTS
# picks it (newest scan, then version).
_SKILL_VERSIONS = f"""
SELECT {_SKILL_COLUMNS}
FROM (
    SELECT * FROM skills
    WHERE project_id = {{project:String}}
    ORDER BY scanned_at DESC, version
    LIMIT 1 BY name, version
)
ORDER BY name, scanned_at_us DESC, version"""

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
    project_id: str,
    manifests: Sequence[SkillManifest],
    scanned_at: datetime | None,
    source_uris: Mapping[Path, str] | None = None,
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
            "source_uri": (
                source_uris.get(manifest.path, "")
                if source_uris is not None
                else manifest.path.absolute().as_uri()
            ),
            "body": manifest.body,
            # YAML dates and the like have no JSON form; their text is what the author wrote
            "frontmatter": json.dumps(manifest.frontmatter, sort_keys=True, default=str),
            "scanned_at": micros,
        }
        for column in SKILL_COLUMNS:
            rows[column].append(values[column])
    return pa.table(rows, schema=_SCHEMA)


def _entry(row: dict[str, Any]) -> SkillEntry:
    """A stored row as the API and CLI show it: lists and JSON decoded, time in ISO 8601."""
    entry = dict(row)
    declared = bool(entry.pop("allowed_tools_declared"))
    entry["allowed_tools"] = list(entry["allowed_tools"]) if declared else None
    if "frontmatter" in entry:
        entry["frontmatter"] = json.loads(entry["frontmatter"] or "{}")
    micros = int(entry.pop("scanned_at_us"))
    entry["scanned_at"] = iso_micros(micros)
    return entry  # type: ignore[return-value]


class Skills:
    """The ``skills`` table."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def insert(
        self,
        project_id: str,
        manifests: Sequence[SkillManifest],
        *,
        scanned_at: datetime | None = None,
        source_uris: Mapping[Path, str] | None = None,
    ) -> int:
        """Record scanned skills in one insert; a re-scan of a version replaces its row.

        ``source_uris`` (by skill folder) replaces the folders' own ``file:`` URIs, for skills
        scanned from an upload that names where they came from ("" when it does not)."""
        if not manifests:
            return 0
        self._store.insert_select(
            "skills",
            SKILL_COLUMNS,
            SKILL_SELECT,
            skill_table(project_id, manifests, scanned_at, source_uris),
            SKILL_STRUCTURE,
        )
        return len(manifests)

    def find(self, project_id: str, name: str = "", *, limit: int = 10_000) -> list[SkillEntry]:
        """Catalogue entries (every scanned version), by name, newest scan first."""
        found = self._store.query(
            _LIST_SKILLS, {"project": project_id, "name": name, "limit": limit}
        )
        return [_entry(row) for row in found]

    def contracts(self, project_id: str) -> dict[str, SkillEntry]:
        """Per skill name, its most recently scanned version with body and frontmatter."""
        found = self._store.query(_SKILL_CONTRACTS, {"project": project_id})
        return {str(row["name"]): _entry(row) for row in found}

    def versions(self, project_id: str) -> dict[str, list[SkillEntry]]:
        """Per skill name, every recorded version (no body), the latest first."""
        out: dict[str, list[SkillEntry]] = {}
        for row in self._store.query(_SKILL_VERSIONS, {"project": project_id}):
            out.setdefault(str(row["name"]), []).append(_entry(row))
        return out
