"""Insert OTLP/protobuf trace requests with one ClickHouse statement, parsed by ClickHouse.

The Python decoder spends most of its time building Python objects that ClickHouse then takes
apart again. Here the request bytes go to ClickHouse as they came: framed into one file, read by
ClickHouse's protobuf input format, exploded with ARRAY JOIN into raw span columns, and
normalized by the store's projection in the same INSERT ... SELECT.
"""

from __future__ import annotations

import itertools
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillsight.errors import StoreError
from skillsight.store import store_condition
from skillsight.store._scratch import scratch_dir
from skillsight.store.fastpath._schema import envelope
from skillsight.store.fastpath._statement import (
    UNSUPPORTED,
    raw_select,
    settings,
    unsupported_select,
)
from skillsight.store.normalize import span_projection
from skillsight.store.values import Limits

if TYPE_CHECKING:  # the embedded store loads chdb: the screen alone must not
    from skillsight.store import EmbeddedStore

log = logging.getLogger(__name__)

# Below this, Python's cap would cut the text of numbers too, which the SQL does not mirror.
MIN_VALUE_CHARS = 64

# One block for the whole batch, so the table gets one part per batch rather than one per
# default-sized block, and a statement that throws has written nothing.
INSERT_SETTINGS: Mapping[str, Any] = {
    "min_insert_block_size_rows": 1 << 40,
    "min_insert_block_size_bytes": 1 << 50,
    "max_threads": 1,
    "max_insert_threads": 1,
}


class FastTraceWriter:
    """Inserts batches of ``(project_id, ExportTraceServiceRequest bytes)`` into ``spans``.

    Requests must be ones protobuf's own parser accepted and whose spans all have valid ids
    (:func:`skillsight.store.fastpath.screen` says which); their spans are stored exactly
    as the Python decoder and :meth:`Store.insert_spans` would store them.
    """

    def __init__(
        self,
        store: EmbeddedStore,
        limits: Limits,
        *,
        insert_settings: Mapping[str, Any] | None = None,
        spool_dir: Path | None = None,
    ) -> None:
        if limits.max_value_chars < MIN_VALUE_CHARS:
            raise ValueError(f"the fast path needs max_value_chars >= {MIN_VALUE_CHARS}")
        self.store = store
        self.limits = limits
        self.insert_settings = {**INSERT_SETTINGS, **(insert_settings or {})}
        self._columns, self._projection = span_projection()
        self._dir = scratch_dir("fastpath", spool_dir)
        self._names = itertools.count()

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def insert(
        self,
        requests: Sequence[tuple[str, bytes]],
        *,
        entries: bool = True,
        distinct: bool = False,
    ) -> list[int]:
        """Insert the spans of ``requests``; return the indexes of requests left to the caller.

        ``entries=False`` (no request has a span with events or links; see :func:`screen`)
        makes a statement that is cheaper to analyse and leaves requests that do have some.
        ``distinct=True`` (no span id repeats in ``requests``; see :func:`distinct_span_ids`)
        skips the table's deduplication of the inserted block (much of the write's cost),
        which would find nothing to remove.

        A request is left when it holds a value the SQL does not render as Python does, or
        when ClickHouse fails the statement because of what the batch holds (its parser refusing
        something protobuf's accepted, a row the table refuses): the caller decodes those in
        Python and inserts them through :meth:`Spans.insert`, which isolates failing rows. A
        failure that is the store's condition (:func:`store_condition`: unreachable, disk
        full, merges behind) raises :class:`StoreError`, for the caller to retry the batch. A
        statement that throws has written nothing (the batch is one block), so a left
        request's spans are not also here.
        """
        pending = list(range(len(requests)))
        left: list[int] = []
        while pending:
            try:
                path = self._spool(requests, pending)
            except OSError as exc:
                log.warning(
                    "fast path cannot spool; %d requests go the Python way: %s", len(pending), exc
                )
                return sorted(left + pending)
            try:
                self.store.execute(self.insert_sql(str(path), entries=entries, distinct=distinct))
                return sorted(left)
            except StoreError as exc:
                if UNSUPPORTED not in str(exc):
                    if store_condition(str(exc)):
                        raise
                    log.warning(
                        "fast path failed; %d requests go the Python way: %s", len(pending), exc
                    )
                    return sorted(left + pending)
                try:
                    found = self._unsupported(path, entries).intersection(pending)
                except StoreError as again:
                    if store_condition(str(again)):
                        raise
                    log.warning("fast path cannot tell which requests to leave: %s", again)
                    return sorted(left + pending)
                if not found:
                    # the two statements disagree, which they must not; never loop on it
                    log.error("fast path found no unsupported request after: %s", exc)
                    return sorted(left + pending)
                left.extend(found)
                pending = [i for i in pending if i not in found]
            finally:
                path.unlink(missing_ok=True)
        return sorted(left)

    def insert_sql(self, path: str, *, entries: bool = True, distinct: bool = False) -> str:
        """The INSERT of every span in the framed file at ``path``."""
        options = {**self.insert_settings, **({"optimize_on_insert": 0} if distinct else {})}
        extra = ", ".join(f"{k} = {v}" for k, v in options.items())
        return (
            f"INSERT INTO spans ({', '.join(self._columns)})\n"
            f"SELECT {self._projection}\n"
            f"FROM (\n{raw_select(path, self.limits, entries=entries)}\n)\n"
            f"SETTINGS {settings()}, {extra}"
        )

    def _spool(self, requests: Sequence[tuple[str, bytes]], indexes: Sequence[int]) -> Path:
        path = self._dir / f"batch-{next(self._names)}.pb"
        try:
            with path.open("wb") as out:
                for index in indexes:
                    project, body = requests[index]
                    out.writelines(envelope(index, project.encode(), body))
        except OSError:
            path.unlink(missing_ok=True)
            raise
        return path

    def _unsupported(self, path: Path, entries: bool) -> set[int]:
        # Store.query appends a SETTINGS clause of its own; this statement carries its own
        result = self.store.query_raw(unsupported_select(str(path), self.limits, entries=entries))
        return {int(line) for line in result.decode().split()}
