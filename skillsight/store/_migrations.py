"""Schema changes: numbered ``migrations/NNNN_name.sql`` files, applied once and recorded."""

from __future__ import annotations

import contextlib
import logging
import re
from importlib import resources
from typing import TYPE_CHECKING

from skillsight.errors import MigrationError

if TYPE_CHECKING:
    from skillsight.store._cluster_ddl import ClusterSchema
    from skillsight.store._store import Store

log = logging.getLogger(__name__)

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrate(store: Store, cluster: ClusterSchema | None = None) -> list[str]:
    """Apply numbered migrations not yet recorded; return the names applied now. On a cluster,
    each statement is applied in its cluster form, ``ON CLUSTER`` (:mod:`._cluster_ddl`)."""
    if cluster is not None:
        store.execute(cluster.create_database())
        store.execute(cluster.migrations_table())
    else:
        store.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, "
            "applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) "
            "ENGINE = ReplacingMergeTree ORDER BY version"
        )
    done = {int(r["version"]) for r in store.query("SELECT version FROM schema_migrations")}
    applied: list[tuple[int, str]] = []
    # Recorded together (one insert, not one per migration: each is a part, ~12 ms on the
    # embedded store, a third of a fresh store's migration), those before a failure too. Every
    # statement is idempotent (a test applies them all twice), so a crash before the insert
    # only means they run again.
    try:
        for version, name, sql in migrations():
            if version in done:
                continue
            try:
                for statement in statements(sql):
                    for executed in cluster.statements(statement) if cluster else [statement]:
                        store.execute(executed)
            except Exception as exc:
                raise MigrationError(f"migration {name} failed: {exc}") from exc
            log.info("applied migration %s", name)
            applied.append((version, name))
    except BaseException:
        with contextlib.suppress(Exception):  # the failure above is the one to report
            _record(store, applied)
        raise
    _record(store, applied)
    return [name for _, name in applied]


def _record(store: Store, applied: list[tuple[int, str]]) -> None:
    if not applied:
        return
    values = ", ".join(f"({{v{i}:UInt32}}, {{n{i}:String}})" for i in range(len(applied)))
    params: dict[str, object] = {}
    for i, (version, name) in enumerate(applied):
        params[f"v{i}"], params[f"n{i}"] = version, name
    store.execute(f"INSERT INTO schema_migrations (version, name) VALUES {values}", params)


def planned(cluster: ClusterSchema | None = None) -> list[tuple[str, str]]:
    """``(migration, statement)`` of everything :func:`migrate` runs on a fresh store, in order,
    in the cluster form when ``cluster`` is given (for review before it runs)."""
    out: list[tuple[str, str]] = []
    if cluster is not None:
        out += [("", cluster.create_database()), ("", cluster.migrations_table())]
    for _, name, sql in migrations():
        for statement in statements(sql):
            out += [(name, s) for s in (cluster.statements(statement) if cluster else [statement])]
    return out


def set_retention(store: Store, days: int, cluster: ClusterSchema | None = None) -> None:
    """Keep spans and events ``days`` days (0 = forever)."""
    for table, column in (("spans", "start_time"), ("events", "timestamp")):
        if cluster is not None:
            _set_cluster_retention(store, cluster, table, column, days)
        elif days > 0:
            ttl = f"toDateTime({column}) + INTERVAL {int(days)} DAY"
            store.execute(f"ALTER TABLE {table} MODIFY TTL {ttl}")
        else:
            try:
                store.execute(f"ALTER TABLE {table} REMOVE TTL")
            except Exception:  # REMOVE TTL on a table that has none is an error in ClickHouse
                log.debug("no TTL to remove on %s", table)


def _set_cluster_retention(
    store: Store, cluster: ClusterSchema, table: str, column: str, days: int
) -> None:
    """An ``ON CLUSTER`` ALTER only when the TTL differs: every process checks at start, and
    each such ALTER is a task for every node."""
    found = store.query(
        "SELECT create_table_query AS ddl FROM system.tables "
        "WHERE database = {db:String} AND name = {name:String}",
        {"db": cluster.database, "name": f"{table}_local"},
    )
    ddl = str(found[0]["ddl"]) if found else ""
    if days > 0:
        if f" TTL toDateTime({column}) + toIntervalDay({int(days)})" not in ddl:
            ttl = f"toDateTime({column}) + INTERVAL {int(days)} DAY"
            store.execute(cluster.retention(table, ttl))
    elif " TTL " in ddl:
        store.execute(cluster.retention(table, None))


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
