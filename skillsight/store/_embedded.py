"""Embedded transport: chdb, the ClickHouse engine in-process, data in a local folder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import chdb
import pyarrow as pa

from skillsight.errors import StoreError
from skillsight.store._sql import READ_SETTINGS, parse_rows
from skillsight.store._store import LockedStore

_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"})


def _param(value: Any) -> str:
    """A query parameter in the escaped text form chdb parses parameters from."""
    if isinstance(value, str):
        return value.translate(_ESCAPES)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        items = (
            f"'{_param(v).replace(chr(39), chr(92) + chr(39))}'"
            if isinstance(v, str)
            else _param(v)
            for v in value
        )
        return "[" + ",".join(items) + "]"
    return str(value)


def _params(params: Mapping[str, Any] | None) -> dict[str, str] | None:
    return {k: _param(v) for k, v in params.items()} if params else None


def _settings_clause(settings: Mapping[str, Any]) -> str:
    return " SETTINGS " + ", ".join(f"{k} = {v}" for k, v in settings.items())


# The rows as one JSON array: parsed in one call, with no copy to split them first.
_READ_CLAUSE = _settings_clause({**READ_SETTINGS, "output_format_json_array_of_rows": 1})


class EmbeddedStore(LockedStore):
    """ClickHouse through chdb. One process owns the folder; statements are serialized."""

    kind = "embedded"

    def __init__(self, data_dir: Path) -> None:
        super().__init__()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir
        try:
            self._conn = chdb.connect(str(data_dir))  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise StoreError(
                f"cannot open the embedded store in {data_dir} (is it in use by another "
                f"process, such as a running `skillsight serve`?): {exc}"
            ) from exc

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        with self._lock:
            try:
                self._conn.query(sql, "CSV", params=_params(params))
            except Exception as exc:
                raise StoreError(str(exc)) from exc

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._lock:
            try:
                result = self._conn.query(
                    sql + _READ_CLAUSE,
                    "JSONEachRow",
                    params=_params(params),
                )
            except Exception as exc:
                raise StoreError(str(exc)) from exc
        raw = result.bytes()
        if not raw:
            return []
        return parse_rows(raw)

    def query_raw(self, sql: str) -> bytes:
        """The CSV output of a statement run as written (no settings appended)."""
        with self._lock:
            try:
                result = self._conn.query(sql, "CSV")
            except Exception as exc:
                raise StoreError(str(exc)) from exc
        return bytes(result.bytes())

    def insert_select(
        self, table: str, columns: Sequence[str], select: str, data: pa.Table, structure: str
    ) -> None:
        # chdb's Python() table function finds the Arrow table by its local name in this frame.
        batch = data  # noqa: F841 - read by name inside the SQL below
        sql = f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select} FROM Python(batch)"
        with self._lock:
            try:
                self._conn.query(sql)
            except Exception as exc:
                raise StoreError(f"insert into {table} failed: {str(exc)[:2000]}") from exc

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.close()
            except Exception as exc:
                raise StoreError(f"closing the embedded store failed: {exc}") from exc
