"""Server transport: clickhouse-connect over HTTP(S) to a ClickHouse server or cluster."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import clickhouse_connect
import pyarrow as pa
from clickhouse_connect.driver.exceptions import ClickHouseError

from skillsight.errors import ConfigError, StoreError
from skillsight.store import _migrations
from skillsight.store._cluster_ddl import ClusterSchema
from skillsight.store._sql import READ_SETTINGS, parse_rows, string_literal
from skillsight.store._store import Store

# URL scheme -> TLS.
_SCHEMES = {"clickhouse": False, "clickhouses": True, "http": False, "https": True}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# URL query arguments that configure the client; every other argument is a ClickHouse setting
# sent with each statement (e.g. ``?max_execution_time=60``).
_BOOL_OPTIONS = {"secure", "verify"}
_INT_OPTIONS = {"connect_timeout", "send_receive_timeout", "query_retries"}
_STR_OPTIONS = {"ca_cert", "client_cert", "client_cert_key", "compress", "server_host_name"}

# Batched writes through the async-insert queue, as the design asks. Servers that cannot queue
# an INSERT ... SELECT run it synchronously instead, and waiting keeps both paths equivalent:
# the rows are committed when the call returns.
_INSERT_SETTINGS: Mapping[str, Any] = {"async_insert": 1, "wait_for_async_insert": 1}

# On a cluster (the repositories read and write its Distributed tables): a subquery or join over
# another Distributed table runs once on the node asked and its result goes to the shards
# (GLOBAL IN / GLOBAL JOIN; the default refuses such "double-distributed" queries), and an
# insert answers only once every shard holds its rows, so an acknowledged row is readable.
_CLUSTER_SETTINGS: Mapping[str, str] = {
    "distributed_product_mode": "global",
    "distributed_foreground_insert": "1",
}

# The format ClickHouse reads the streamed batch in; the body is an Arrow IPC stream.
_BATCH_FORMAT = "ArrowStream"


@dataclass(frozen=True)
class ServerAddress:
    """Where the server is and how to talk to it, parsed from the store URL."""

    host: str
    port: int
    secure: bool
    username: str
    password: str = field(repr=False)
    database: str
    options: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, url: str) -> ServerAddress:
        """Parse ``clickhouse[s]://user:password@host:port/database?option=value``."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ConfigError(
                f"ClickHouse URL scheme {parts.scheme!r} is not one of {', '.join(_SCHEMES)}; "
                "expected clickhouse://user:password@host:8123/database"
            )
        if not parts.hostname:
            raise ConfigError(
                "ClickHouse URL has no host; expected clickhouse://host:8123/database"
            )
        secure = _SCHEMES[scheme]
        options: dict[str, Any] = {}
        settings: dict[str, str] = {}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key in _BOOL_OPTIONS:
                options[key] = _parse_bool(key, value)
            elif key in _INT_OPTIONS:
                options[key] = _parse_int(key, value)
            elif key in _STR_OPTIONS:
                options[key] = value
            else:
                settings[key] = value
        secure = bool(options.pop("secure", secure))
        try:
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"ClickHouse URL has an invalid port: {exc}") from exc
        path = parts.path.strip("/")
        if "/" in path:
            raise ConfigError(f"ClickHouse URL path {parts.path!r} must be a single database name")
        return cls(
            host=parts.hostname,
            port=port or (8443 if secure else 8123),
            secure=secure,
            username=unquote(parts.username) if parts.username else "default",
            password=unquote(parts.password) if parts.password else "",
            database=unquote(path) or "default",
            options=options,
            settings=settings,
        )

    def redacted(self) -> str:
        """The address for messages and logs, never with the password."""
        scheme = "clickhouses" if self.secure else "clickhouse"
        return f"{scheme}://{self.username}@{self.host}:{self.port}/{self.database}"


def _parse_bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(f"ClickHouse URL option {key}={value!r}: expected true or false")


def _parse_int(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise ConfigError(f"ClickHouse URL option {key}={value!r}: expected an integer") from exc


def _identifier(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace("`", "\\`")
    return f"`{escaped}`"


def _arrow_stream(data: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    return bytes(sink.getvalue().to_pybytes())


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """Turn the driver's and the network's errors into StoreError."""
    try:
        yield
    except (ClickHouseError, OSError) as exc:
        raise StoreError(f"{what}: {exc}") from exc


class ServerStore(Store):
    """ClickHouse through clickhouse-connect's HTTP client.

    The client runs without a ClickHouse session (sessions serialize a client's statements and
    reject concurrent ones) and owns its connection pool, so one store serves many threads.
    """

    kind = "server"

    def __init__(self, url: str, *, cluster: str = "") -> None:
        """``cluster``: the name of a cluster in the server's ``remote_servers``, for the
        replicated, sharded schema (:mod:`._cluster_ddl`); empty for a single server."""
        super().__init__()
        self.address = ServerAddress.parse(url)
        self.cluster = ClusterSchema(cluster, self.address.database) if cluster else None
        self._settings = {**(_CLUSTER_SETTINGS if cluster else {}), **self.address.settings}
        where = self.address.redacted()
        with _translated(f"cannot connect to ClickHouse at {where}"):
            # No database yet: the one named in the URL may not exist, and a request naming a
            # missing database fails before it runs.
            self._client = clickhouse_connect.get_client(
                host=self.address.host,
                port=self.address.port,
                username=self.address.username,
                password=self.address.password,
                secure=self.address.secure,
                settings=self._settings or None,
                autogenerate_session_id=False,
                dedicated_pool=True,
                **self.address.options,
            )
        try:
            self._use_database(self.address.database)
        except BaseException:
            self._client.close()
            raise

    def _use_database(self, database: str) -> None:
        with _translated(f"cannot create database {database!r}"):
            # Checking first lets a user without CREATE DATABASE rights use an existing one.
            exists = self._client.command(
                "SELECT count() FROM system.databases WHERE name = {name:String}",
                parameters={"name": database},
            )
            if not exists:
                self._client.command(f"CREATE DATABASE IF NOT EXISTS {_identifier(database)}")
        self._client.database = database

    def migrate(self) -> list[str]:
        return _migrations.migrate(self, self.cluster)

    def set_retention(self, days: int) -> None:
        _migrations.set_retention(self, days, self.cluster)

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        with _translated("statement failed"):
            self._client.command(sql, parameters=dict(params) if params else None)

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with _translated("query failed"):
            raw = self._client.raw_query(
                sql,
                parameters=dict(params) if params else None,
                settings={**READ_SETTINGS, **self._settings},
                fmt="JSONEachRow",
            )
        try:
            return parse_rows(raw, array=False)
        except ValueError as exc:
            raise StoreError(f"unreadable JSONEachRow answer from ClickHouse: {exc}") from exc

    def insert_select(
        self, table: str, columns: Sequence[str], select: str, data: pa.Table, structure: str
    ) -> None:
        # The batch streams as the body and input() reads it, so normalization runs in the
        # server in the same statement that writes the rows.
        sql = (
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select} "
            f"FROM input({string_literal(structure)}) FORMAT {_BATCH_FORMAT}"
        )
        body = _arrow_stream(data)
        with _translated(f"insert into {table} failed"):
            self._client.command(sql, data=body, settings={**_INSERT_SETTINGS, **self._settings})

    def close(self) -> None:
        with _translated("closing the ClickHouse client failed"):
            self._client.close()
