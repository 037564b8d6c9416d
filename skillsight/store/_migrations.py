"""Schema changes: numbered ``migrations/NNNN_name.sql`` files, applied once and recorded."""

from __future__ import annotations

import logging
import re
from importlib import resources
from typing import TYPE_CHECKING

from skillsight.errors import MigrationError

if TYPE_CHECKING:
    from skillsight.store._store import Store

log = logging.getLogger(__name__)

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrate(store: Store) -> list[str]:
    """Apply numbered migrations not yet recorded; return the names applied now."""
    store.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, "
        "applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) "
        "ENGINE = ReplacingMergeTree ORDER BY version"
    )
    done = {int(r["version"]) for r in store.query("SELECT version FROM schema_migrations")}
    applied: list[str] = []
    for version, name, sql in migrations():
        if version in done:
            continue
        try:
            for statement in statements(sql):
                store.execute(statement)
        except Exception as exc:
            raise MigrationError(f"migration {name} failed: {exc}") from exc
        store.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ({v:UInt32}, {n:String})",
            {"v": version, "n": name},
        )
        log.info("applied migration %s", name)
        applied.append(name)
    return applied


def set_retention(store: Store, days: int) -> None:
    """Keep spans and events ``days`` days (0 = forever)."""
    for table, column in (("spans", "start_time"), ("events", "timestamp")):
        if days > 0:
            ttl = f"toDateTime({column}) + INTERVAL {int(days)} DAY"
            store.execute(f"ALTER TABLE {table} MODIFY TTL {ttl}")
        else:
            try:
                store.execute(f"ALTER TABLE {table} REMOVE TTL")
            except Exception:  # REMOVE TTL on a table that has none is an error in ClickHouse
                log.debug("no TTL to remove on %s", table)


def migrations() -> list[tuple[int, str, str]]:
    """``(version, file name, SQL)`` of every migration shipped, in order."""
    found = []
    folder = resources.files("skillsight.store") / "migrations"
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a number: {sorted(versions)}")
    return sorted(found)


def statements(sql: str) -> list[str]:
    """Split a migration file on ';' at line ends, dropping comment-only pieces."""
    pieces = re.split(r";\s*$", sql, flags=re.MULTILINE)
    out = []
    for piece in pieces:
        body = "\n".join(
            line for line in piece.splitlines() if not line.strip().startswith("--")
        ).strip()
        if body:
            out.append(body)
    return out
