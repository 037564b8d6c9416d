"""The cluster variant of the schema (skillsight/store/_cluster_ddl.py): every statement is
parsed by ClickHouse's own parser (chdb: ``EXPLAIN AST`` and ``formatQuery``), each local table
keeps its single-server definition with the Replicated engine, and each Distributed table's
sharding expression is the one deduplication needs, checked on real rows by ClickHouse."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillsight.cli import app
from skillsight.errors import MigrationError, StoreError
from skillsight.ingest import otlp
from skillsight.store import EmbeddedStore, ServerStore, schema_sql
from skillsight.store._cluster_ddl import (
    KEEPER_PATH,
    MIGRATIONS_KEEPER_PATH,
    SESSION_KEY,
    SHARDING_KEYS,
    ClusterSchema,
)
from skillsight.store._migrations import migrations, statements
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA
from tests.support.chdb_http import ChdbHttpServer

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
SCHEMA = ClusterSchema("skillsight", "skillsight")
# Columns that are not in a table's sorting key but are fixed by the row it keys: normalization
# derives a span's (or log record's) session id from that record's own attributes, so a retried
# export carries the same one. test_retried_rows_land_on_the_shard_of_their_first_copy checks it.
FUNCTIONS_OF_THE_ROW = {"spans": {"session_id"}, "events": {"trace_id"}}


def ast(store: EmbeddedStore, sql: str) -> str:
    return "\n".join(str(r["explain"]) for r in store.query("EXPLAIN AST " + sql))


def formatted(store: EmbeddedStore, sql: str) -> str:
    [row] = store.query("SELECT formatQuery({q:String}) AS f", {"q": sql})
    return str(row["f"])


def single_server_creates() -> dict[str, str]:
    out = {}
    for _, _, sql in migrations():
        for statement in statements(sql):
            match = re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", statement)
            if match:
                out[match.group(1)] = statement
    return out


def _columns(tree: str) -> str:
    return tree.split("Columns definition", 1)[1].split("Storage definition", 1)[0]


def sorting_key(store: EmbeddedStore, create: str) -> set[str]:
    """The columns of a CREATE TABLE's ORDER BY, as ClickHouse parsed them."""
    text = formatted(store, create)
    order = text.rsplit("ORDER BY", 1)[1].split("SETTINGS")[0].split("TTL")[0]
    return set(re.findall(r"[a-z_]+", order)) - {"tuple"}


def test_every_cluster_statement_parses_and_is_on_the_cluster(
    embedded_store: EmbeddedStore,
) -> None:
    count = 0
    for statement in [SCHEMA.create_database(), SCHEMA.migrations_table()] + [
        s
        for _, _, sql in migrations()
        for piece in statements(sql)
        for s in SCHEMA.statements(piece)
    ]:
        text = formatted(embedded_store, statement)  # raises on a syntax error
        assert "ON CLUSTER skillsight" in text, text
        assert ast(embedded_store, statement)
        count += 1
    assert count >= 2 + 2 * len(single_server_creates())


def test_local_tables_keep_their_definition_with_the_replicated_engine(
    embedded_store: EmbeddedStore,
) -> None:
    for name, create in single_server_creates().items():
        local, _ = SCHEMA.statements(create)
        original, cluster = ast(embedded_store, create), ast(embedded_store, local)
        # the same columns and indexes, as parsed
        assert _columns(original) == _columns(cluster), name
        engine = re.search(r"ENGINE = (\w+)(?:\(([^)]*)\))?", formatted(embedded_store, create))
        assert engine is not None
        text = formatted(embedded_store, local)
        args = f"'{KEEPER_PATH}', '{{replica}}'" + (f", {engine[2]}" if engine[2] else "")
        assert f"ENGINE = Replicated{engine[1]}({args})" in text, text
        assert text.split("ENGINE")[1].split(")", 1)[1] == (
            formatted(embedded_store, create).split("ENGINE")[1].split(")", 1)[1]
            if engine[2] is not None
            else formatted(embedded_store, create).split("ENGINE")[1].split("MergeTree", 1)[1]
        )
        assert f"skillsight.{name}_local" in text


def test_distributed_tables_shard_by_what_deduplication_needs(
    embedded_store: EmbeddedStore,
) -> None:
    """Rows that replace one another (the same sorting key) must hash to one shard: the
    sharding expression may read only the key's columns, or columns fixed by the row."""
    creates = single_server_creates()
    assert set(creates) <= set(SHARDING_KEYS)  # every table has one
    for name, create in creates.items():
        _, distributed = SCHEMA.statements(create)
        tree = ast(embedded_store, distributed)
        assert "Function Distributed" in tree
        text = formatted(embedded_store, distributed)
        expected = formatted(embedded_store, f"SELECT {SHARDING_KEYS[name]}")[len("SELECT ") :]
        assert text.endswith(f"Distributed('skillsight', 'skillsight', '{name}_local', {expected})")
        used = set(re.findall(r"Identifier (\w+)", tree.split("Function Distributed")[1]))
        key = sorting_key(embedded_store, create)
        assert used <= key | FUNCTIONS_OF_THE_ROW.get(name, set()), (name, used, key)
        assert "project_id" in used, name  # tenants' rows never decide another's shard
    assert SHARDING_KEYS["spans"] == SHARDING_KEYS["events"] == SESSION_KEY


def test_migrations_are_recorded_once_in_a_table_every_node_replicates(
    embedded_store: EmbeddedStore,
) -> None:
    text = formatted(embedded_store, SCHEMA.migrations_table())
    assert f"ReplicatedReplacingMergeTree('{MIGRATIONS_KEEPER_PATH}', '{{replica}}')" in text
    assert "{shard}" not in MIGRATIONS_KEEPER_PATH and "{shard}" in KEEPER_PATH
    assert {"{database}", "{table}"} <= set(re.findall(r"\{\w+\}", KEEPER_PATH))


def test_alters_go_to_the_local_tables_and_column_changes_to_both(
    embedded_store: EmbeddedStore,
) -> None:
    [index] = SCHEMA.statements(
        "ALTER TABLE spans ADD INDEX IF NOT EXISTS i ingested_at TYPE minmax GRANULARITY 1"
    )
    text = formatted(embedded_store, index)
    assert (
        "ALTER TABLE skillsight.spans_local ON CLUSTER skillsight" in text and "ADD INDEX" in text
    )
    local, distributed = SCHEMA.statements(
        "ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS x String DEFAULT ''"
    )
    assert "evaluations_local" in local and "`evaluations` ON CLUSTER" in distributed
    [codec] = SCHEMA.statements("ALTER TABLE evaluations MODIFY COLUMN inputs_hash CODEC(ZSTD(1))")
    text = formatted(embedded_store, codec)
    assert "skillsight.evaluations_local ON CLUSTER skillsight" in text and "ZSTD(1)" in text
    ttl = SCHEMA.retention("spans", "toDateTime(start_time) + INTERVAL 30 DAY")
    assert "spans_local ON CLUSTER skillsight" in formatted(embedded_store, ttl)
    assert "MODIFY TTL" in formatted(embedded_store, ttl)
    for odd in ("OPTIMIZE TABLE spans FINAL", "ALTER TABLE spans DELETE WHERE 1"):
        with pytest.raises(MigrationError):
            SCHEMA.statements(odd)
    with pytest.raises(MigrationError, match="sharding key"):
        SCHEMA.statements(
            "CREATE TABLE IF NOT EXISTS newer (a String) ENGINE = MergeTree ORDER BY a"
        )
    with pytest.raises(MigrationError):
        ClusterSchema("bad name; DROP", "db")


def _ingest_captures(store: EmbeddedStore, times: int) -> None:
    limits = otlp.Limits(256 * 1024, 8)
    for source in ("claude_code", "openinference"):
        for signal, schema in ((otlp.TRACES, SPAN_SCHEMA), (otlp.LOGS, EVENT_SCHEMA)):
            path = CAPTURES / source / ("traces.pb" if signal == otlp.TRACES else "logs.pb")
            if not path.exists():
                continue
            decoded = otlp.decode(signal, path.read_bytes(), otlp.PROTOBUF, "p1", limits)
            for _ in range(times):  # a retried export: the same rows again
                table = decoded.columns.to_arrow(schema)
                if signal == otlp.TRACES:
                    store.spans.insert(table)
                else:
                    store.events.insert(table)


def test_retried_rows_land_on_the_shard_of_their_first_copy(
    embedded_store: EmbeddedStore,
) -> None:
    """ClickHouse evaluates each sharding expression on real stored rows (Claude Code and
    OpenInference captures, each exported twice): every copy of a key goes to one shard, for
    2 to 5 shards, and a Claude Code session's spans and events go to one shard together."""
    _ingest_captures(embedded_store, times=2)
    for table, key in (
        ("spans", "project_id, trace_id, span_id"),
        ("events", "project_id, session_id, timestamp, record_id"),
    ):
        for shards in range(2, 6):
            [row] = embedded_store.query(
                f"SELECT count() AS copies, uniqExact({key}) AS keys, "
                f"countIf(n > 1) AS split FROM (SELECT {key}, "
                f"uniqExact({SHARDING_KEYS[table]} % {shards}) AS n FROM {table} GROUP BY {key})"
                f" AS k, (SELECT count() FROM {table}) AS c"
            )
            assert row["split"] == 0 and row["keys"] > 0, (table, shards, row)
        [dup] = embedded_store.query(f"SELECT count() AS n, uniqExact({key}) AS k FROM {table}")
        assert dup["n"] == 2 * dup["k"]  # the retry really stored a second copy
    sessions = embedded_store.query(
        f"SELECT session_id, uniqExact({SESSION_KEY} % 4) AS shards, count() AS rows "
        "FROM (SELECT project_id, session_id, trace_id FROM spans WHERE session_id != '' "
        "UNION ALL SELECT project_id, session_id, trace_id FROM events WHERE session_id != '') "
        "GROUP BY session_id"
    )
    assert sessions and all(s["shards"] == 1 for s in sessions), sessions


def test_the_operations_guide_sql_parses(embedded_store: EmbeddedStore) -> None:
    """docs/operations.md's BACKUP / RESTORE / ALTER examples are ClickHouse SQL as written."""
    text = (Path(__file__).parents[1] / "docs" / "operations.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```sql\n")[1:]]
    examples = [
        "\n".join(line for line in piece.splitlines() if not line.strip().startswith("--"))
        for block in blocks
        for piece in block.split(";")
    ]
    examples = [e.strip() for e in examples if e.strip()]
    inline = re.findall(r"`(ALTER TABLE [^`]+)`", text)
    assert len(examples) >= 3 and inline
    for sql in examples + inline:
        assert formatted(embedded_store, sql), sql


def test_migrate_prints_the_cluster_schema_for_review(embedded_store: EmbeddedStore) -> None:
    """``skillsight migrate --print`` shows the statements a fresh cluster gets, without
    connecting; each is ClickHouse SQL that names the cluster."""
    result = CliRunner().invoke(
        app,
        ["migrate", "--print", "--clickhouse", "clickhouse://u:p@nowhere.invalid:8123/prod"],
        env={"SKILLSIGHT_CLICKHOUSE_CLUSTER": "skillsight"},
    )
    assert result.exit_code == 0, result.output
    printed = [s.strip() for s in result.output.split(";\n\n") if s.strip()]
    assert len(printed) == len(schema_sql("skillsight", "prod"))
    assert printed[0] == "CREATE DATABASE IF NOT EXISTS `prod` ON CLUSTER `skillsight`"
    for statement in printed:
        assert "ON CLUSTER skillsight" in formatted(embedded_store, statement)


def test_the_server_transport_speaks_cluster_when_told(chdb_http: ChdbHttpServer) -> None:
    """With a cluster named, every statement carries the settings the Distributed tables need
    (GLOBAL subqueries; inserts answered once the shards hold the rows), and migrating a server
    that has no such cluster stops with ClickHouse's own reason."""
    store = ServerStore(chdb_http.url(f"cluster_{uuid.uuid4().hex[:8]}"), cluster="skillsight")
    try:
        [row] = store.query(
            "SELECT getSetting('distributed_product_mode') AS mode, "
            "getSetting('distributed_foreground_insert') AS foreground"
        )
        assert row == {"mode": "global", "foreground": True}
        with pytest.raises(StoreError, match="CLUSTER_DOESNT_EXIST"):
            store.migrate()
    finally:
        store.close()
