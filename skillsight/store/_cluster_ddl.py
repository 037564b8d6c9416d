"""The cluster variant of the schema: the same migrations, applied to a sharded, replicated
ClickHouse cluster (``SKILLSIGHT_CLICKHOUSE_CLUSTER=name``).

Each ``CREATE TABLE t`` of a migration becomes two tables, both created ``ON CLUSTER``:

* ``t_local``, the data, on every node: the engine's ``Replicated`` twin
  (``ReplacingMergeTree(v)`` -> ``ReplicatedReplacingMergeTree(path, '{replica}', v)``) at the
  Keeper path ``/clickhouse/skillsight/{database}/{table}/{shard}``, unique per database, table
  and shard;
* ``t``, a ``Distributed`` table over ``t_local`` with the table's sharding key. Every
  repository reads and writes ``t`` as on a single server; the cluster routes rows and queries.

**The sharding key is what deduplication needs.** A ReplacingMergeTree replaces rows of one
sorting key only within a shard, so all rows of one key must hash to one shard: the sharding
expression must be a function of the row's key (or of columns fixed by it). Within that rule the
key is chosen for the reads that follow:

* ``spans`` and ``events`` shard by the *session* key (the session id, else the trace id), not by
  the trace id. A Claude Code session spans many traces (one per prompt) and reports much of
  itself as log records that belong to the session only, and the rebuild reads a whole session
  at a time: by session, a session's spans and events sit on one shard. Both are functions of the
  row (a retried export carries the same attributes), so a span's retries meet on one shard.
* ``trajectories``, one row per session, by session id; ``activations``, ``evaluations``,
  ``failures`` and ``cluster_members``, whose keys end in the activation id, by activation id,
  so an activation's rows of every table meet and replace on one shard.
* the catalogue and the cluster lists by their own ids.

Reads still go through the Distributed tables and deduplicate at query time (``LIMIT 1 BY``,
``argMax``), so a result never depends on where a row landed; the sharding key is what lets
background merges do the same work on disk.

ALTERs go to the local tables ``ON CLUSTER`` (indexes, settings, TTL, a column's codec); column
changes also to the Distributed table. Anything else in a migration fails loudly here, rather
than meaning something else on a cluster. ``schema_migrations`` is one table replicated to every
node (its Keeper path has no shard), so a migration is recorded once and every node sees it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillsight.errors import MigrationError
from skillsight.store._sql import string_literal

# Where the session of a span or log record is: its session id, else its trace id (the key
# the finalizer rebuilds by).
SESSION_KEY = "cityHash64(project_id, if(session_id != '', session_id, trace_id))"

# table -> the sharding expression of its Distributed table (see the module docstring).
SHARDING_KEYS: dict[str, str] = {
    "spans": SESSION_KEY,
    "events": SESSION_KEY,
    "trajectories": "cityHash64(project_id, session_id)",
    "activations": "cityHash64(project_id, activation_id)",
    "evaluations": "cityHash64(project_id, activation_id)",
    "evaluation_digests": "cityHash64(project_id, activation_id)",
    "judge_spend": "cityHash64(project_id, activation_id)",
    "failures": "cityHash64(project_id, activation_id)",
    "cluster_members": "cityHash64(project_id, activation_id)",
    "skills": "cityHash64(project_id, name)",
    "clusters": "cityHash64(project_id, cluster_id)",
    "cluster_status": "cityHash64(project_id, cluster_id)",
    "cluster_advice": "cityHash64(project_id, cluster_id)",
    "cluster_runs": "cityHash64(project_id, run_id)",
    "ingest_dead_letters": "cityHash64(project_id, item_id)",
    "golden_sets": "cityHash64(project_id, set_id)",
    "golden_cases": "cityHash64(project_id, set_id)",
    "runs": "cityHash64(project_id, run_id)",
    "run_results": "cityHash64(project_id, run_id)",
    # the scorecard read models (0012): copied rows by activation (their key ends in it); a
    # skill's marks and day rows on one shard, so one refresh of a day lands whole
    "scorecard_rows": "cityHash64(project_id, activation_id)",
    "scorecard_marks": "cityHash64(project_id, skill_name)",
    "scorecard_hour_marks": "cityHash64(project_id, skill_name)",
    "scorecard_days": "cityHash64(project_id, skill_name)",
    "scorecard_hours": "cityHash64(project_id, skill_name)",
    "read_models": "cityHash64(project_id, name)",
}

LOCAL_SUFFIX = "_local"
KEEPER_PATH = "/clickhouse/skillsight/{database}/{table}/{shard}"
# One replica set across the whole cluster: every node holds the full record.
MIGRATIONS_KEEPER_PATH = "/clickhouse/skillsight/{database}/schema_migrations"

_CREATE = re.compile(
    r"^CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(?P<name>\w+)\s*"
    r"\((?P<body>.*)\)\s*ENGINE\s*=\s*(?P<engine>\w*MergeTree)(?:\s*\((?P<args>[^)]*)\))?"
    r"(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_ALTER = re.compile(r"^ALTER\s+TABLE\s+(?P<name>\w+)\s+(?P<actions>.*)$", re.IGNORECASE | re.DOTALL)
# ALTER actions that change only how the data is stored: the local tables alone.
_STORAGE_ACTIONS = re.compile(
    r"^\s*(ADD\s+INDEX|DROP\s+INDEX|MATERIALIZE\s+INDEX|MODIFY\s+SETTING|MODIFY\s+TTL|"
    r"REMOVE\s+TTL|ADD\s+PROJECTION|MATERIALIZE\s+PROJECTION|MODIFY\s+COLUMN\s+\w+\s+CODEC)\b",
    re.IGNORECASE,
)
# ALTER actions that change the columns: the local tables, then the Distributed one.
_COLUMN_ACTIONS = re.compile(r"^\s*(ADD|DROP|MODIFY|RENAME|COMMENT)\s+COLUMN\b", re.IGNORECASE)


@dataclass(frozen=True)
class ClusterSchema:
    """Turns single-server statements into their cluster form, for one cluster and database."""

    cluster: str
    database: str

    def __post_init__(self) -> None:
        for what, name in (("cluster", self.cluster), ("database", self.database)):
            if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", name):
                raise MigrationError(f"{what} name {name!r}: letters, digits, '_', '-', '.'")

    # -- names ---------------------------------------------------------------------------------

    def _on(self) -> str:
        return f"ON CLUSTER {_identifier(self.cluster)}"

    def table(self, name: str) -> str:
        return f"{_identifier(self.database)}.{_identifier(name)}"

    def local(self, name: str) -> str:
        return self.table(name + LOCAL_SUFFIX)

    # -- statements ----------------------------------------------------------------------------

    def create_database(self) -> str:
        return f"CREATE DATABASE IF NOT EXISTS {_identifier(self.database)} {self._on()}"

    def migrations_table(self) -> str:
        """``schema_migrations``, replicated to every node of the cluster."""
        return (
            f"CREATE TABLE IF NOT EXISTS {self.table('schema_migrations')} {self._on()} "
            "(version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) "
            f"ENGINE = ReplicatedReplacingMergeTree({string_literal(MIGRATIONS_KEEPER_PATH)}, "
            "'{replica}') ORDER BY version"
        )

    def statements(self, statement: str) -> list[str]:
        """The cluster form of one migration statement (one or two statements)."""
        text = statement.strip().rstrip(";").strip()
        create = _CREATE.match(text)
        if create is not None:
            return self._create(
                create["name"], create["body"], create["engine"], create["args"], create["rest"]
            )
        alter = _ALTER.match(text)
        if alter is not None:
            return self._alter(alter["name"], alter["actions"])
        raise MigrationError(
            "the cluster schema knows CREATE TABLE IF NOT EXISTS ... ENGINE = *MergeTree and "
            f"ALTER TABLE; not: {text[:120]!r}"
        )

    def retention(self, table: str, ttl: str | None) -> str:
        """Set (``ttl``) or remove (None) the TTL of a table's local tables."""
        action = f"MODIFY TTL {ttl}" if ttl else "REMOVE TTL"
        return f"ALTER TABLE {self.local(table)} {self._on()} {action}"

    def _create(self, name: str, body: str, engine: str, args: str | None, rest: str) -> list[str]:
        sharding = SHARDING_KEYS.get(name)
        if sharding is None:
            raise MigrationError(
                f"table {name!r} has no sharding key for the cluster schema: add one to "
                "SHARDING_KEYS in skillsight/store/_cluster_ddl.py (what its deduplication needs)"
            )
        replicated = [string_literal(KEEPER_PATH), "'{replica}'"]
        if args and args.strip():
            replicated.append(args.strip())
        local = (
            f"CREATE TABLE IF NOT EXISTS {self.local(name)} {self._on()}\n({body})\n"
            f"ENGINE = Replicated{engine}({', '.join(replicated)}){rest}"
        )
        distributed = (
            f"CREATE TABLE IF NOT EXISTS {self.table(name)} {self._on()} AS {self.local(name)}\n"
            f"ENGINE = Distributed({string_literal(self.cluster)}, "
            f"{string_literal(self.database)}, {string_literal(name + LOCAL_SUFFIX)}, {sharding})"
        )
        return [local, distributed]

    def _alter(self, name: str, actions: str) -> list[str]:
        local = f"ALTER TABLE {self.local(name)} {self._on()} {actions}"
        if _STORAGE_ACTIONS.match(actions):
            return [local]
        if _COLUMN_ACTIONS.match(actions):
            return [local, f"ALTER TABLE {self.table(name)} {self._on()} {actions}"]
        raise MigrationError(f"the cluster schema does not know this ALTER: {actions[:120]!r}")


def _identifier(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"
