"""The store on both transports: schema, normalizing inserts, deduplication, tenancy, errors.

Every test taking ``store`` runs twice: on the embedded store (chdb in this process) and on the
server store (clickhouse-connect over HTTP to chdb in a child process). Both run real ClickHouse.
"""

from __future__ import annotations

import socket
import threading
from importlib import resources
from typing import Any

import pyarrow as pa
import pytest

from skillsight.errors import ConfigError, MigrationError, StoreError
from skillsight.store import EmbeddedStore, ServerAddress, ServerStore, Store, _migrations, rows
from skillsight.store._migrations import migrations, statements
from tests.support.chdb_http import ChdbHttpServer

T0 = 1_748_779_200_000_000_000  # 2025-06-01 12:00:00 UTC, in nanoseconds
T0_TEXT = "2025-06-01 12:00:00.000000000"
TRACE = "0af7651916cd43dd8448eb211c80319c"

SPAN_FIELDS = (
    "project_id, trace_id, span_id, parent_span_id, name, start_time, end_time, service_name, "
    "source_convention, operation, session_id, agent, tool_name, tool_call_id, skill_name, input"
)


def span(span_id: str, *, project: str = "p1", **attributes: str) -> dict[str, Any]:
    """A raw Claude Code span row as the trace decoder writes it."""
    return {
        "project_id": project,
        "trace_id": TRACE,
        "span_id": span_id,
        "parent_span_id": "",
        "name": "claude_code.tool",
        "kind": "INTERNAL",
        "start_ns": T0,
        "end_ns": T0 + 250_000_000,
        "status_code": "OK",
        "status_message": "",
        "scope_name": "com.anthropic.claude_code",
        "scope_version": "2.0.14",
        "attr_keys": list(attributes),
        "attr_values": list(attributes.values()),
        "res_keys": ["service.name"],
        "res_values": ["claude-code"],
        "span_events": "[]",
        "links": "[]",
    }


def tool_span(span_id: str, *, project: str = "p1", **extra: str) -> dict[str, Any]:
    attributes = {
        "tool_name": "Skill",
        "skill_name": "pdf",
        "tool_use_id": f"toolu_{span_id}",
        "session.id": "sess-1",
        "tool_input": '{"skill": "pdf"}',
        **extra,
    }
    return span(span_id, project=project, **attributes)


def _fill(columns: rows.Columns, raw: tuple[dict[str, Any], ...]) -> rows.Columns:
    for row in raw:
        for name in columns.names:
            if name in columns.list_names:
                columns.add_list(name, row[name])
            else:
                columns.data[name].append(row[name])
    return columns


def span_table(*raw: dict[str, Any]) -> pa.Table:
    return _fill(rows.span_columns(), raw).to_arrow(rows.SPAN_SCHEMA)


def event_table(*raw: dict[str, Any]) -> pa.Table:
    return _fill(rows.event_columns(), raw).to_arrow(rows.EVENT_SCHEMA)


def spans_of(store: Store, project: str = "p1") -> list[dict[str, Any]]:
    return store.query(
        f"SELECT {SPAN_FIELDS} FROM spans WHERE project_id = {{p:String}} "
        "ORDER BY span_id LIMIT 1 BY project_id, trace_id, span_id",
        {"p": project},
    )


def migration_names() -> list[str]:
    folder = resources.files("skillsight.store") / "migrations"
    return sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".sql"))


# -- schema --------------------------------------------------------------------------------------


def test_migrations_apply_once_and_are_recorded(store: Store) -> None:
    assert store.migrate() == []
    recorded = store.query("SELECT version, name FROM schema_migrations FINAL ORDER BY version")
    names = migration_names()
    assert recorded == [{"version": i + 1, "name": name} for i, name in enumerate(names)]
    assert store.query("SELECT count() AS n FROM schema_migrations") == [{"n": len(names)}]


def test_every_migration_statement_can_run_again(store: Store) -> None:
    """Migrations are recorded together after they ran, so a crash in between runs them again:
    each statement must leave the schema as it was when applied a second time."""

    def schema() -> list[dict[str, Any]]:
        return store.query(
            "SELECT name, create_table_query FROM system.tables "
            "WHERE database = currentDatabase() ORDER BY name"
        )

    before = schema()
    for _, _, sql in migrations():
        for statement in statements(sql):
            store.execute(statement)
    assert schema() == before


def test_a_failed_migration_keeps_the_record_of_those_before_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = migrations()
    broken = (len(real) + 1, "9999_broken.sql", "ALTER TABLE no_such_table ADD COLUMN x String")
    monkeypatch.setattr(_migrations, "migrations", lambda: [*real, broken])
    embedded = EmbeddedStore(tmp_path / "fresh")
    try:
        with pytest.raises(MigrationError, match=r"9999_broken\.sql"):
            embedded.migrate()
        recorded = embedded.query("SELECT name FROM schema_migrations FINAL ORDER BY version")
        assert [r["name"] for r in recorded] == migration_names()
        monkeypatch.setattr(_migrations, "migrations", lambda: real)
        assert embedded.migrate() == []
    finally:
        embedded.close()


def test_a_new_store_applies_every_migration(tmp_path: Any, chdb_http: ChdbHttpServer) -> None:
    embedded = EmbeddedStore(tmp_path / "fresh")
    try:
        assert embedded.migrate() == migration_names()
    finally:
        embedded.close()
    server = ServerStore(chdb_http.url("fresh_migrations"))
    try:
        assert server.migrate() == migration_names()
        assert server.migrate() == []
    finally:
        server.execute("DROP DATABASE fresh_migrations")
        server.close()


def test_retention_can_be_set_and_removed(store: Store) -> None:
    def ttl(table: str) -> str:
        found = store.query(
            "SELECT create_table_query AS ddl FROM system.tables "
            "WHERE database = currentDatabase() AND name = {t:String}",
            {"t": table},
        )
        ddl = str(found[0]["ddl"])
        return ddl[ddl.index(" TTL ") :] if " TTL " in ddl else ""

    store.set_retention(7)
    assert "toDateTime(start_time) + toIntervalDay(7)" in ttl("spans")
    assert "toDateTime(timestamp) + toIntervalDay(7)" in ttl("events")
    store.set_retention(0)
    assert ttl("spans") == ttl("events") == ""
    store.set_retention(0)  # removing a TTL that is not there is not an error


# -- normalizing inserts --------------------------------------------------------------------------


def test_claude_code_tool_span_is_normalized(store: Store) -> None:
    assert store.spans.insert(span_table(tool_span("00f067aa0ba902b7"))) == 1
    assert spans_of(store) == [
        {
            "project_id": "p1",
            "trace_id": TRACE,
            "span_id": "00f067aa0ba902b7",
            "parent_span_id": "",
            "name": "claude_code.tool",
            "start_time": T0_TEXT,
            "end_time": "2025-06-01 12:00:00.250000000",
            "service_name": "claude-code",
            "source_convention": "claude_code",
            "operation": "execute_tool",
            "session_id": "sess-1",
            "agent": "claude-code",
            "tool_name": "Skill",
            "tool_call_id": "toolu_00f067aa0ba902b7",
            "skill_name": "pdf",
            "input": '{"skill": "pdf"}',
        }
    ]


def test_claude_code_events_are_normalized(store: Store) -> None:
    base = {
        "project_id": "p1",
        "time_ns": T0,
        "observed_ns": T0 + 1_000,
        "trace_id": "",
        "span_id": "",
        "severity_number": 9,
        "severity_text": "INFO",
        "body": "",
        "scope_name": "com.anthropic.claude_code",
        "res_keys": ["service.name"],
        "res_values": ["claude-code"],
    }
    activated = {
        **base,
        "record_id": "r1",
        "event_name": "claude_code.skill_activated",
        "attr_keys": ["session.id", "prompt.id", "skill.name", "skill.source"],
        "attr_values": ["sess-1", "prompt-1", "pdf", "user"],
    }
    api_request = {
        **base,
        "record_id": "r2",
        "time_ns": T0 + 1_000_000,
        "event_name": "",
        "body": "claude_code.api_request",  # the name may arrive only as the body
        "attr_keys": ["session.id", "model", "input_tokens", "output_tokens", "cost_usd"],
        "attr_values": ["sess-1", "claude-sonnet-4-5", "1200", "80", "0.0123"],
    }
    assert store.events.insert(event_table(activated, api_request)) == 2
    found = store.query(
        "SELECT record_id, timestamp, event_name, source_convention, session_id, prompt_id, "
        "skill_name, model, input_tokens, output_tokens, cost_usd, service_name "
        "FROM events WHERE project_id = 'p1' ORDER BY record_id"
    )
    assert found == [
        {
            "record_id": "r1",
            "timestamp": T0_TEXT,
            "event_name": "claude_code.skill_activated",
            "source_convention": "claude_code",
            "session_id": "sess-1",
            "prompt_id": "prompt-1",
            "skill_name": "pdf",
            "model": "",
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": 0,
            "service_name": "claude-code",
        },
        {
            "record_id": "r2",
            "timestamp": "2025-06-01 12:00:00.001000000",
            "event_name": "claude_code.api_request",
            "source_convention": "claude_code",
            "session_id": "sess-1",
            "prompt_id": "",
            "skill_name": "",
            "model": "claude-sonnet-4-5",
            "input_tokens": 1200,
            "output_tokens": 80,
            "cost_usd": 0.0123,
            "service_name": "claude-code",
        },
    ]


def test_an_empty_batch_inserts_nothing(store: Store) -> None:
    assert store.spans.insert(span_table()) == 0
    assert store.events.insert(event_table()) == 0
    assert store.query("SELECT count() AS n FROM spans") == [{"n": 0}]


def test_reinserted_spans_keep_one_row_per_key(store: Store) -> None:
    batch = span_table(tool_span("a1"), tool_span("a2"))
    store.spans.insert(batch)
    store.spans.insert(batch)  # a retried export
    assert [row["span_id"] for row in spans_of(store)] == ["a1", "a2"]
    store.execute("OPTIMIZE TABLE spans FINAL")
    assert store.query("SELECT count() AS n FROM spans") == [{"n": 2}]


def test_projects_are_isolated(store: Store) -> None:
    store.spans.insert(
        span_table(
            tool_span("s1", project="a", skill_name="secret-skill"),
            tool_span("s1", project="b"),
            tool_span("s2", project="a"),
        )
    )
    assert [(r["project_id"], r["span_id"], r["skill_name"]) for r in spans_of(store, "b")] == [
        ("b", "s1", "pdf")
    ]
    assert [r["span_id"] for r in spans_of(store, "a")] == ["s1", "s2"]
    assert spans_of(store, "c") == []


# -- hostile input -------------------------------------------------------------------------------

HOSTILE = {
    "quotes": 'it\'s "quoted" `ticked`',
    "backslashes": "C:\\temp\\new \\' \\\\ \\n",
    "newlines": "line 1\nline 2\r\n\tend",
    "nul": "nul\x00byte",
    "sql": "'); DROP TABLE spans; -- {p:String} %s $$x$$",
    "unicode": "héllo — 日本語 🎉",
    "replacement": "already replaced \ufffd here",
    "large": "x" * (1024 * 1024),
    "large_multibyte": "é🎉" * (256 * 1024),
}


def test_hostile_strings_round_trip(store: Store) -> None:
    raw = [
        tool_span(f"h{i}", tool_input=value, **{f"key {name} ' \\": value})
        for i, (name, value) in enumerate(HOSTILE.items())
    ]
    for row, value in zip(raw, HOSTILE.values(), strict=True):
        row["name"] = "claude_code.tool" if len(value) > 1000 else f"claude_code.tool {value}"
        row["status_message"] = value
    store.spans.insert(span_table(*raw))
    found = store.query(
        "SELECT span_id, status_message, input, attributes FROM spans "
        "WHERE project_id = 'p1' ORDER BY toUInt32(substring(span_id, 2))"
    )
    assert len(found) == len(HOSTILE)
    for row, (name, value) in zip(found, HOSTILE.items(), strict=True):
        assert row["status_message"] == value, name
        assert row["input"] == value, name
        assert row["attributes"][f"key {name} ' \\"] == value, name


def test_invalid_utf8_is_made_valid(store: Store) -> None:
    # Decoders repair text before it reaches Arrow (which refuses lone surrogates outright); a
    # batch built around Python may still carry raw bytes, and the insert replaces each bad run
    # in the text columns with U+FFFD.
    with pytest.raises(UnicodeEncodeError):
        span_table(tool_span("s1", tool_input="surrogate-escaped \udcff"))
    hostile = "ok \udcff\udcfe then \udcc3".encode("utf-8", "surrogateescape")
    table = span_table(tool_span("u1"))
    for column in ("status_message", "span_events", "scope_version"):
        raw = pa.array([hostile], pa.binary()).view(pa.string())
        table = table.set_column(table.schema.get_field_index(column), column, raw)
    store.spans.insert(table)
    found = store.query(
        "SELECT status_message, span_events, scope_version FROM spans WHERE project_id = 'p1'"
    )
    repaired = "ok \ufffd then \ufffd"
    assert found == [
        {"status_message": repaired, "span_events": repaired, "scope_version": repaired}
    ]


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_query_parameters_round_trip(store: Store, name: str) -> None:
    assert store.query("SELECT {v:String} AS v", {"v": HOSTILE[name]}) == [{"v": HOSTILE[name]}]


# -- errors --------------------------------------------------------------------------------------


def test_failing_statements_raise_store_error(store: Store) -> None:
    with pytest.raises(StoreError) as raised:
        store.query("SELECT * FROM no_such_table")
    assert raised.value.__cause__ is not None
    assert "no_such_table" in str(raised.value)
    with pytest.raises(StoreError):
        store.execute("THIS IS NOT SQL")
    with pytest.raises(StoreError, match="no_such_table"):
        store.insert_select(
            "no_such_table",
            ["project_id"],
            "project_id",
            span_table(tool_span("e1")),
            rows.clickhouse_structure(rows.SPAN_COLUMNS),
        )
    assert store.ping()  # the store is still usable after errors


# -- both transports store the same rows ---------------------------------------------------------


def test_transports_store_identical_rows(
    embedded_store: EmbeddedStore, server_store: ServerStore
) -> None:
    batch = span_table(
        tool_span("c1", cost_usd="0.5", input_tokens="7"),
        span("c2", **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}),
    )
    every_column = "SELECT * EXCEPT ingested_at FROM spans ORDER BY span_id"
    embedded_store.spans.insert(batch)
    server_store.spans.insert(batch)
    assert embedded_store.query(every_column) == server_store.query(every_column)
    assert len(server_store.query(every_column)) == 2


# -- server transport ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "clickhouse://db.example:9000/telemetry",
            ("db.example", 9000, False, "default", "", "telemetry"),
        ),
        ("clickhouse://db.example", ("db.example", 8123, False, "default", "", "default")),
        ("clickhouses://db.example/x", ("db.example", 8443, True, "default", "", "x")),
        ("https://u:p@db.example:443/", ("db.example", 443, True, "u", "p", "default")),
        ("http://db.example:8123/x?secure=1", ("db.example", 8123, True, "default", "", "x")),
        (
            "clickhouse://al%20ice:p%40ss%3Aw%2Frd%25@h/my%20db",
            ("h", 8123, False, "al ice", "p@ss:w/rd%", "my db"),
        ),
    ],
)
def test_server_urls_are_parsed(url: str, expected: tuple[Any, ...]) -> None:
    address = ServerAddress.parse(url)
    found = (
        address.host,
        address.port,
        address.secure,
        address.username,
        address.password,
        address.database,
    )
    assert found == expected
    assert "password" not in repr(address)
    assert ":" + address.password + "@" not in address.redacted()


def test_server_url_options_and_settings_are_separated() -> None:
    address = ServerAddress.parse(
        "clickhouse://h/db?connect_timeout=3&verify=false&max_execution_time=60"
    )
    assert address.options == {"connect_timeout": 3, "verify": False}
    assert address.settings == {"max_execution_time": "60"}


@pytest.mark.parametrize(
    "url",
    [
        "mysql://h/db",
        "clickhouse:///db",
        "clickhouse://h:port/db",
        "clickhouse://h/a/b",
        "clickhouse://h/db?secure=maybe",
        "clickhouse://h/db?connect_timeout=soon",
    ],
)
def test_bad_server_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        ServerAddress.parse(url)


def test_server_store_creates_and_uses_its_database(server_store: ServerStore) -> None:
    assert server_store.kind == "server"
    assert server_store.query("SELECT currentDatabase() AS db") == [
        {"db": server_store.address.database}
    ]


def test_server_credentials_are_url_decoded(chdb_http: ChdbHttpServer) -> None:
    assert chdb_http.users is not None
    user, password = "skill sight", chdb_http.users["skill sight"]
    store = ServerStore(chdb_http.url("default", user=user, password=password))
    try:
        assert store.ping()
    finally:
        store.close()
    with pytest.raises(StoreError, match="AUTHENTICATION_FAILED") as raised:
        ServerStore(chdb_http.url("default", user=user, password="wrong-" + password))
    assert password not in str(raised.value)


def test_unreachable_server_raises_store_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StoreError, match="cannot connect"):
        ServerStore(f"clickhouse://127.0.0.1:{port}/db?connect_timeout=2&query_retries=0")


def test_server_store_serves_many_threads(server_store: ServerStore) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(2):
                server_store.spans.insert(span_table(tool_span(f"t{n}-{i}")))
                server_store.query("SELECT count() AS n FROM spans")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert server_store.query("SELECT count() AS n FROM spans") == [{"n": 16}]


def test_answers_the_fast_parser_refuses_are_still_read(store: Store) -> None:
    """A string ClickHouse cut inside a character (invalid UTF-8) reads with the replacement
    character, integers past 64 bits and line separators inside strings read as they are, on
    both transports; and the rows of a query equal the standard parser's."""
    found = store.query(
        "SELECT unhex('C328FF') AS cut, {separators:String} AS separators, "
        "toUInt128('340282366920938463463374607431768211455') AS wide, "
        "18446744073709551615 AS widest_64, -0.1 AS small, number AS n "
        "FROM numbers(2) ORDER BY n",
        {"separators": "a\u2028b\x85c\nd"},
    )
    assert found == [
        {
            "cut": "\ufffd(\ufffd",
            "separators": "a\u2028b\x85c\nd",
            "wide": 2**128 - 1,
            "widest_64": 2**64 - 1,
            "small": -0.1,
            "n": n,
        }
        for n in range(2)
    ]
    plain = store.query(
        "SELECT {text:String} AS text, 1.5 AS x, [1, 2] AS xs, map('k', 'v') AS m",
        {"text": "a\u2028b"},
    )
    assert plain == [{"text": "a\u2028b", "x": 1.5, "xs": [1, 2], "m": {"k": "v"}}]
