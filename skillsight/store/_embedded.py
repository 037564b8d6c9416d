"""Embedded transport: chdb, the ClickHouse engine in-process, data in a local folder."""

from __future__ import annotations

import itertools
import logging
import math
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import chdb
import pyarrow as pa

from skillsight.errors import StoreError
from skillsight.store._scratch import scratch_dir
from skillsight.store._sql import READ_SETTINGS, parse_rows, string_literal
from skillsight.store._store import LockedStore

log = logging.getLogger(__name__)

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


# An insert's rows as one block (one part; a statement that throws has written nothing), read
# and written on the calling thread: a pool's threads cost more to wake than a small batch.
_INSERT_CLAUSE = _settings_clause(
    {
        "max_threads": 1,
        "max_insert_threads": 1,
        "min_insert_block_size_rows": 1 << 40,
        "min_insert_block_size_bytes": 1 << 50,
    }
)

# After a batch could not be spooled, inserts go through Python() this long before trying again.
_SPOOL_RETRY_S = 60

# The rows as one JSON array: parsed in one call, with no copy to split them first.
_READ_CLAUSE = _settings_clause({**READ_SETTINGS, "output_format_json_array_of_rows": 1})


class EmbeddedStore(LockedStore):
    """ClickHouse through chdb. One process owns the folder; statements are serialized."""

    kind = "embedded"

    def __init__(self, data_dir: Path, *, scratch: Path | None = None, spool: bool = True) -> None:
        """``scratch``: where the folder of the files inserts spool to goes (default tmpfs
        when it has room, else the temporary folder). ``spool=False``: every insert goes
        through chdb's ``Python()`` table function, the way when no file can be written
        (``skillsight bench inserts`` compares the two)."""
        super().__init__()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir
        self._scratch_parent = scratch
        self._scratch: Path | None = None
        self._names = itertools.count()
        self._spool_again_at = 0.0 if spool else math.inf
        self.inserts_spooled = 0
        """Inserts whose batch ClickHouse read from a scratch file."""
        self.inserts_unspooled = 0
        """Inserts that went through ``Python()`` (no file could be written, or ``spool=False``)."""
        try:
            self._conn = chdb.connect(str(data_dir))  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise StoreError(
                f"cannot open the embedded store in {data_dir} (is it in use by another "
                f"process, such as a running `skillsight serve`?): {exc}"
            ) from exc
        with self._lock:
            self._folder()  # at once: the folders of processes killed before are swept now

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

    @property
    def scratch_folder(self) -> Path | None:
        """The folder inserts spool their batches to; None while none can be made or
        ``spool=False`` (inserts then go through chdb's ``Python()`` table function)."""
        return self._scratch

    def insert_select(
        self, table: str, columns: Sequence[str], select: str, data: pa.Table, structure: str
    ) -> None:
        """The batch goes to ClickHouse as an Arrow stream in a scratch file, read by ``file()``
        with ``structure`` (as the server transport's ``input()`` reads it), in one block. A
        small insert costs less CPU this way than through chdb's ``Python()`` table function
        (docs/performance.md), which stays the way when no file can be written."""
        path = self._spool(data)
        if path is None:
            source = "Python(batch)"
            # chdb's Python() table function finds the Arrow table by its local name here
            batch = data  # noqa: F841 - read by name inside the SQL below
        else:
            source = (
                f"file({string_literal(str(path))}, 'ArrowStream', {string_literal(structure)})"
            )
        sql = (
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select} FROM {source}"
            f"{_INSERT_CLAUSE}"
        )
        try:
            with self._lock:
                try:
                    self._conn.query(sql)
                except Exception as exc:
                    raise StoreError(f"insert into {table} failed: {str(exc)[:2000]}") from exc
                if path is None:
                    self.inserts_unspooled += 1
                else:
                    self.inserts_spooled += 1
        finally:
            if path is not None:
                path.unlink(missing_ok=True)

    def _spool(self, data: pa.Table) -> Path | None:
        """``data`` as an Arrow stream in a file of this store's scratch folder; None when it
        cannot be written (no scratch folder, a full disk): logged, and not tried again for
        ``_SPOOL_RETRY_S``."""
        with self._lock:
            folder = self._folder()
            if folder is None:
                return None
            path = folder / f"batch-{next(self._names)}.arrows"
        try:
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, data.schema) as w:
                w.write_table(data)
        except OSError as exc:
            path.unlink(missing_ok=True)
            with self._lock:
                self._unspooled(exc)
                if self._scratch is not None and not self._scratch.is_dir():
                    self._scratch = None  # a cleaner removed it: made again when next tried
            return None
        return path

    def _folder(self) -> Path | None:
        """The scratch folder, made (and dead processes' folders swept) when missing; None
        while inserts do not spool (``spool=False``, or for a while after a failure)."""
        if time.monotonic() < self._spool_again_at:
            return None
        if self._scratch is None:
            try:
                self._scratch = scratch_dir("insert", self._scratch_parent)
            except OSError as exc:
                self._unspooled(exc)
        return self._scratch

    def _unspooled(self, exc: OSError) -> None:
        log.warning(
            "inserts go through chdb's Python() for %d s: cannot spool a batch: %s",
            _SPOOL_RETRY_S,
            exc,
        )
        self._spool_again_at = time.monotonic() + _SPOOL_RETRY_S

    def close(self) -> None:
        with self._lock:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None
            try:
                self._conn.close()
            except Exception as exc:
                raise StoreError(f"closing the embedded store failed: {exc}") from exc
