"""The rows of sessions rebuilt lately, kept so that the next rebuild reads only what is new.

Claude Code sends one trace per prompt, and every complete prompt makes the finalizer rebuild
the whole session: read from the store in full, a session of many prompts costs time quadratic
in their number. A :class:`SessionRowCache` keeps each session's rows from its last read; the
next read asks the store only for rows ingested since then (less the overlap that discovery
re-reads too: an insert can commit rows stamped slightly before rows already seen) and for every
row of a trace the session did not own before (a trace whose earlier rows named no session joins
it when a later row names it). Newer copies replace older ones, as the store's own
``LIMIT 1 BY`` read keeps the newest, so the rows handed to the rebuild are what a full read
returns.

A session whose rows are not all its own (a row naming another session, or a trace that another
session of the same pass owns) is read in full every time: which session such a row belongs to
depends on which sessions are read together. An entry is read in full again after
``max_age_s``, so rows the store's retention deleted do not outlive it for long, and the least
recently read sessions are dropped past ``max_bytes`` (estimated: :func:`row_bytes`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillsight.rebuild._completeness import CompletenessTally
from skillsight.rebuild._finalizer_state import OVERLAP_US

if TYPE_CHECKING:
    from skillsight.rebuild.session import Rebuilt
    from skillsight.store import (
        SessionEventRow,
        SessionRows,
        SessionSpanRow,
        SessionsSince,
        Store,
    )

_SpanKey = tuple[str, str]
_EventKey = tuple[str, int, str]


@dataclass
class _Entry:
    spans: dict[_SpanKey, SessionSpanRow]
    events: dict[_EventKey, SessionEventRow]
    traces: set[str]
    """Traces the session owned at the last read (a span or event of them names it)."""
    through_us: int
    """Every row ingested before this, less the overlap, was committed when it was read."""
    filled_s: float
    """When the entry was read in full (monotonic)."""
    bytes: int = 0
    """What its rows take in memory, estimated (:func:`row_bytes`)."""
    built: Rebuilt | None = None
    """The session's last rebuild from these rows (``None`` until one is kept)."""
    new_spans: list[SessionSpanRow] = field(default_factory=list)
    new_events: list[SessionEventRow] = field(default_factory=list)
    """Rows first read since ``built``."""
    changed: bool = False
    """A row held when ``built`` was made has been read again with other values."""
    rebuilds: int = 0
    """Rebuilds of the session from these rows."""
    tally: CompletenessTally | None = field(default_factory=CompletenessTally)
    """The completeness rule's counts over the rows held (``None`` once a row changed)."""

    @property
    def size(self) -> int:
        return len(self.spans) + len(self.events)

    @property
    def held_bytes(self) -> int:
        """Its rows, and its rebuild counted as much (a rebuild holds about their texts)."""
        return self.bytes * 2 if self.built is not None else self.bytes

    def add(self, spans: list[SessionSpanRow], events: list[SessionEventRow]) -> None:
        """Rows read, each replacing the copy held of it (the same values read again change
        nothing)."""
        for span in spans:
            self._put(self.spans, _span_key(span), span, self.new_spans, CompletenessTally.add_span)
        for event in events:
            self._put(
                self.events, _event_key(event), event, self.new_events, CompletenessTally.add_event
            )

    def _put(
        self,
        held: dict[Any, Any],
        key: Any,
        row: Any,
        new: list[Any],
        tallied: Callable[[CompletenessTally, Any], None],
    ) -> None:
        before = held.get(key)
        if before is None:
            new.append(row)
            if self.tally is not None:
                tallied(self.tally, row)
        elif before == row:
            return
        else:
            self.changed, self.tally = True, None
        self.bytes += row_bytes(row) - (row_bytes(before) if before else 0)
        held[key] = row


@dataclass
class RowCacheStats:
    sessions_read_new: int = 0
    """Sessions read incrementally (only what is new)."""
    sessions_read_whole: int = 0
    rows_read: int = 0
    """Rows the store returned (both kinds of read)."""
    dropped: int = 0
    """Entries dropped: least recently read past the row bound, or not their own rows."""
    extended: int = 0
    """Rebuilds that extended the session's previous one by its new prompts."""
    rebuilt_whole: int = 0
    """Rebuilds of a held session from all its rows (its first, or new rows that reach back)."""

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class SessionRowCache:
    """Sessions' rows from their last read, per ``(project_id, session_key)``."""

    max_bytes: int = 256 << 20
    max_age_s: float = 600.0
    overlap_us: int = OVERLAP_US
    """How far behind what it read last a read looks again (see the module)."""
    stats: RowCacheStats = field(default_factory=RowCacheStats)
    _entries: OrderedDict[tuple[str, str], _Entry] = field(default_factory=OrderedDict)
    _bytes: int = 0
    _rows: int = 0

    @property
    def rows(self) -> int:
        """Rows held now."""
        # counted as entries change: /healthz asks from the event loop while a pass runs in a
        # worker thread, and walking the entries then could meet them mid-change
        return self._rows

    @property
    def bytes(self) -> int:
        """What the rows held take in memory, estimated."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, project_id: str, key: str) -> bool:
        """The session's rows are held (its next read is of what is new)."""
        entry = self._entries.get((project_id, key))
        return entry is not None and time.monotonic() - entry.filled_s < self.max_age_s

    def since_built(
        self, project_id: str, key: str
    ) -> tuple[Rebuilt | None, tuple[list[SessionSpanRow], list[SessionEventRow]] | None]:
        """The session's last rebuild kept here and the rows read since it (``None`` for those
        when a row it was made from has changed)."""
        entry = self._entries.get((project_id, key))
        if entry is None or entry.built is None:
            return None, None
        if entry.changed:
            return entry.built, None
        return entry.built, (entry.new_spans, entry.new_events)

    def complete(self, project_id: str, key: str) -> bool | None:
        """What the completeness rule says of the session's rows held, from their tally
        (:class:`CompletenessTally`); ``None`` when the rows must be looked at."""
        entry = self._entries.get((project_id, key))
        return entry.tally.complete() if entry is not None and entry.tally is not None else None

    def rebuilt_before(self, project_id: str, key: str) -> bool:
        """The session was rebuilt from the rows held (so it may well be again: a session of
        several prompts)."""
        entry = self._entries.get((project_id, key))
        return entry is not None and entry.rebuilds > 0

    def keep_built(self, project_id: str, key: str, rebuilt: Rebuilt, *, extended: bool) -> None:
        """Keep a rebuild of the rows held now for the session's next one to extend (one
        without a basis is only counted: nothing can extend it)."""
        entry = self._entries.get((project_id, key))
        if entry is None:
            return
        if extended:
            self.stats.extended += 1
        else:
            self.stats.rebuilt_whole += 1
        self._bytes -= entry.held_bytes
        entry.rebuilds += 1
        entry.built = rebuilt if rebuilt.basis is not None else None
        entry.new_spans, entry.new_events, entry.changed = [], [], False
        self._bytes += entry.held_bytes
        self._bound()

    def health(self) -> dict[str, int]:
        """Sessions and rows held, and the counters (``/healthz``)."""
        return {
            "sessions": len(self),
            "rows": self.rows,
            "bytes": self.bytes,
            **self.stats.as_dict(),
        }

    def read(
        self, store: Store, project_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[str, SessionRows]:
        """The rows of ``(session_key, ingested_through_us)`` sessions of a project, as
        :meth:`Store.sessions.rows_of` reads them. ``ingested_through_us`` is the newest
        ``ingested_at`` (store clock) of the session's rows known before this read (what the
        finalizer's discovery found); a session whose figure is 0 is read in full and not
        kept. A store error raises; what is held stays what the store holds."""
        now = time.monotonic()
        through = dict(keys)
        held: list[str] = []
        for key in through:
            if self.holds(project_id, key):
                held.append(key)
            else:
                self._drop((project_id, key))
        out: dict[str, SessionRows] = {}
        whole = [key for key in through if key not in held]
        if held:
            entries = {key: self._entries[(project_id, key)] for key in held}
            since = min(entry.through_us for entry in entries.values()) - self.overlap_us
            known = set().union(*(entry.traces for entry in entries.values()))
            got = store.sessions.rows_since(project_id, held, since, known)
            for key, entry in entries.items():
                spans, events = got.rows[key]
                self.stats.rows_read += len(spans) + len(events)
                if not (_own(key, got, spans, events) and entry.traces <= got.traces[key]):
                    self._drop((project_id, key))
                    whole.append(key)
                    continue
                self._bytes -= entry.held_bytes
                self._rows -= entry.size
                entry.add(spans, events)
                entry.traces = got.traces[key]
                entry.through_us = max(entry.through_us, through[key])
                self._bytes += entry.held_bytes
                self._rows += entry.size
                self._entries.move_to_end((project_id, key))
                self.stats.sessions_read_new += 1
                out[key] = (list(entry.spans.values()), list(entry.events.values()))
        if whole:
            read = store.sessions.rows_since(project_id, whole, 0, ())
            for key in whole:
                spans, events = out[key] = read.rows[key]
                self.stats.sessions_read_whole += 1
                self.stats.rows_read += len(spans) + len(events)
                if through[key] > 0 and _own(key, read, spans, events):
                    self._keep((project_id, key), read, through[key], now)
        self._bound()
        return {key: out[key] for key in through}

    def _keep(
        self, ident: tuple[str, str], read: SessionsSince, through_us: int, now: float
    ) -> None:
        spans, events = read.rows[ident[1]]
        entry = _Entry({}, {}, read.traces[ident[1]], through_us, now)
        entry.add(spans, events)
        entry.new_spans, entry.new_events = [], []  # nothing is built from them yet
        self._drop(ident)
        self._entries[ident] = entry
        self._bytes += entry.held_bytes
        self._rows += entry.size

    def _drop(self, ident: tuple[str, str]) -> None:
        entry = self._entries.pop(ident, None)
        if entry is not None:
            self._bytes -= entry.held_bytes
            self._rows -= entry.size
            self.stats.dropped += 1

    def _bound(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)))


def _own(
    key: str, read: SessionsSince, spans: list[SessionSpanRow], events: list[SessionEventRow]
) -> bool:
    """Every row names this session or none, and no trace of it has rows naming another
    session read with it: which session its rows belong to does not depend on which sessions
    are read together."""
    return (
        not read.traces[key] & read.shared
        and all(s["session_id"] in ("", key) for s in spans)
        and all(e["session_id"] in ("", key) for e in events)
    )


# A row's dict, its keys, numbers and maps, before the texts in it (measured: ~2,200 bytes for a
# Claude Code span or event; its texts add about a byte a character, four at most).
_ROW_BYTES = 2_200


def row_bytes(row: SessionSpanRow | SessionEventRow) -> int:
    """What a stored row takes in memory as read, estimated from its texts (the attribute maps,
    and a span's input, output and events), where large values live."""
    size = _ROW_BYTES
    for name in ("attributes", "resource_attributes"):
        value = row.get(name)
        if isinstance(value, dict):
            size += sum(map(len, value.values())) + sum(map(len, value))
    for name in ("input", "output", "span_events"):
        value = row.get(name)
        if isinstance(value, str):
            size += len(value)
    return size


def _span_key(row: SessionSpanRow) -> _SpanKey:
    return (row["trace_id"], row["span_id"])


def _event_key(row: SessionEventRow) -> _EventKey:
    return (row["session_id"], row["time_unix_nano"], row["record_id"])
