"""Session reads: which sessions got rows, and a session's spans and events.

A session is a session id, or the trace id of a trace that has none (a sessionless trace is its
own session); a span without a session id joins the session of its trace when another span of
that trace names one.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

from skillsight.store._telemetry import (
    SESSION_EVENT_COLUMNS,
    SESSION_SPAN_COLUMNS,
    SessionEventRow,
    SessionSpanRow,
)

if TYPE_CHECKING:
    from skillsight.store._store import Store

# Sessions (a session id, else the trace id) that got span or event rows since a point on the
# store's clock, with how many of them are root spans and how many are spans after a later point;
# a span without a session id joins the session of its trace when another span of that trace
# names one. Used by the finalizer, the only reader that spans projects.
_TOUCHED_SESSIONS = """
SELECT t.project_id AS project,
       if(t.session_id != '', t.session_id,
          if(ts.trace_session != '', ts.trace_session, t.trace_id)) AS session_key,
       toUnixTimestamp64Micro(max(t.ingested_at)) AS last_ingested_us,
       sum(t.span AND t.ingested_at > fromUnixTimestamp64Micro({fresh:Int64}, 'UTC'))
           AS span_rows,
       sum(t.root) AS root_spans
FROM (
    SELECT project_id, trace_id, session_id, ingested_at, 1 AS span, parent_span_id = '' AS root
    FROM spans
    WHERE ingested_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC')
    UNION ALL
    SELECT project_id, trace_id, session_id, ingested_at, 0 AS span, 0 AS root
    FROM events
    WHERE ingested_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC')
) AS t
LEFT JOIN (
    SELECT project_id, trace_id, any(session_id) AS trace_session
    FROM spans
    WHERE session_id != '' AND trace_id IN (
        SELECT trace_id FROM spans
        WHERE ingested_at > fromUnixTimestamp64Micro({since:Int64}, 'UTC') AND session_id = ''
    )
    GROUP BY project_id, trace_id
) AS ts ON t.project_id = ts.project_id AND t.trace_id = ts.trace_id
GROUP BY project, session_key
HAVING session_key != ''
ORDER BY last_ingested_us"""

# The trace ids of some sessions, from their spans and events (each side made distinct first: a
# long turn's tens of thousands of rows are one pair or a few before they are merged). The
# spans' side groups, so that it reads the session_traces projection (migration 0025); the
# events' side is DISTINCT, so that it reads the table by its sort key, not the whole
# trace_sessions projection, sorted by trace.
_SESSION_TRACES = """
SELECT session_id, trace_id
FROM (
    SELECT session_id, trace_id FROM spans
    WHERE project_id = {project:String} AND session_id IN {sessions:Array(String)}
    GROUP BY session_id, trace_id
    UNION ALL
    SELECT DISTINCT session_id, trace_id FROM events
    WHERE project_id = {project:String} AND session_id IN {sessions:Array(String)}
      AND trace_id != ''
)
GROUP BY session_id, trace_id
ORDER BY session_id, trace_id"""


# Rows of some sessions, found through the sort keys, so that a read costs what the sessions
# hold and not what the project has stored: spans (sorted by project, trace, span) by the ids in
# `traces` (every trace SESSION_TRACES found them to own, and the session keys themselves: a
# sessionless trace is its own session); events (sorted by project, session, time) by the
# sessions' ids and the ids that events of those traces name (the trace_sessions projection,
# migration 0025), those of other sessions kept only when in one of the traces. One condition
# with OR across the two columns names no prefix of a sort key, and ClickHouse then reads every
# granule of the project. A span naming one of the sessions is in a trace SESSION_TRACES found
# when it committed before SESSION_TRACES ran; one committed after is read by the rebuild its
# commit causes.
_SESSIONS_OF_TRACES = """
          SELECT session_id FROM events
          WHERE project_id = {project:String} AND trace_id IN {traces:Array(String)}
            AND trace_id != ''
          GROUP BY trace_id, session_id"""


def _events_of_sessions(condition: str = "") -> str:
    return f"""
    SELECT * FROM events
    WHERE project_id = {{project:String}}
      AND session_id IN (
          SELECT arrayJoin({{sessions:Array(String)}})
          UNION ALL{_SESSIONS_OF_TRACES})
      AND (session_id IN {{sessions:Array(String)}}
           OR (trace_id != '' AND trace_id IN {{traces:Array(String)}})){condition}"""


_SESSION_SPANS = f"""
SELECT {SESSION_SPAN_COLUMNS}
FROM (
    SELECT * FROM spans
    WHERE project_id = {{project:String}} AND trace_id IN {{traces:Array(String)}}
    ORDER BY ingested_at DESC
    LIMIT 1 BY trace_id, span_id
)
ORDER BY start_time, span_id
LIMIT {{limit:UInt32}}"""

_SESSION_EVENTS = f"""
SELECT {SESSION_EVENT_COLUMNS}
FROM (
    {_events_of_sessions()}
    ORDER BY ingested_at DESC
    LIMIT 1 BY session_id, timestamp, record_id
)
ORDER BY time_unix_nano, record_id
LIMIT {{limit:UInt32}}"""

# What some sessions got since a point on the store's clock (a rebuild's cache of their rows
# holds what came before): of their rows, those ingested since then, and every row of the traces
# in `fresh` (traces they own now whose earlier rows named no session, so were never theirs;
# `fresh` is part of `traces`), the newest copy of each.
_SINCE = """
      AND (ingested_at >= fromUnixTimestamp64Micro({since:Int64}, 'UTC')
           OR trace_id IN {fresh:Array(String)})"""

_SESSION_SPANS_SINCE = f"""
SELECT {SESSION_SPAN_COLUMNS}
FROM (
    SELECT * FROM spans
    WHERE project_id = {{project:String}} AND trace_id IN {{traces:Array(String)}}{_SINCE}
    ORDER BY ingested_at DESC
    LIMIT 1 BY trace_id, span_id
)"""

_SESSION_EVENTS_SINCE = f"""
SELECT {SESSION_EVENT_COLUMNS}
FROM (
    {_events_of_sessions(_SINCE)}
    ORDER BY ingested_at DESC
    LIMIT 1 BY session_id, timestamp, record_id
)"""

# The span ids and parents of some sessions, nothing else: whether every parent has arrived is
# known before a session's rows are read (a turn still running is read in full only once its
# root span is in).
_SESSION_PARENTS = """
SELECT DISTINCT session_id, trace_id, span_id, parent_span_id
FROM spans
WHERE project_id = {project:String} AND trace_id IN {traces:Array(String)}"""

# The same per trace, counted inside ClickHouse (a parent is in its child's trace): one row a
# trace instead of one a span. A parent is missing when fewer distinct parents are span ids of
# the trace than there are distinct parents (a set intersection, not a search per parent).
_TRACE_PARENTS = """
SELECT trace_id, sessions, length(ids) AS spans,
       length(arrayIntersect(parents, ids)) < length(parents) AS missing, roots = 0 AS rootless
FROM (
    SELECT trace_id, groupUniqArray(session_id) AS sessions, groupUniqArray(span_id) AS ids,
           groupUniqArrayIf(parent_span_id, parent_span_id != '') AS parents,
           countIf(parent_span_id = '') AS roots
    FROM spans
    WHERE project_id = {project:String} AND trace_id IN {traces:Array(String)}
    GROUP BY trace_id
)"""

# Every session key of a project (for `skillsight rebuild`).
_LIST_SESSION_KEYS = """
SELECT DISTINCT if(trace_session != '', trace_session, trace_id) AS session_key
FROM (
    SELECT max(session_id) AS trace_session, trace_id FROM spans
    WHERE project_id = {project:String} GROUP BY trace_id
    UNION ALL
    SELECT session_id AS trace_session, trace_id FROM events WHERE project_id = {project:String}
)
WHERE session_key != ''
ORDER BY session_key
LIMIT {limit:UInt32}"""


class TouchedSession(NamedTuple):
    project_id: str
    session_key: str
    last_ingested_us: int


class Arrival(NamedTuple):
    """A session's rows since a point on the store's clock (:meth:`Sessions.arrivals`)."""

    project_id: str
    session_key: str
    last_ingested_us: int
    span_rows: int
    """Span rows among them ingested after ``fresh_us`` (a span sent twice counts twice)."""
    root_spans: int
    """Span rows among them without a parent."""


class SpanParents(NamedTuple):
    """What a session's span ids tell of its completeness (:meth:`Sessions.parents`)."""

    spans: int
    missing: bool
    """A span's parent span has not arrived."""
    waits_for_root: bool
    """A trace of it misses a parent and has no root span: with parent pointers that form no
    cycle it keeps missing one until a root span arrives, whatever else comes."""


SessionRows = tuple[list[SessionSpanRow], list[SessionEventRow]]


class SessionsSince(NamedTuple):
    """What :meth:`Sessions.rows_since` read."""

    rows: dict[str, SessionRows]
    """Per session key: its rows since the point asked for, and all rows of its new traces."""
    traces: dict[str, set[str]]
    """Per session key: every trace it owns now (through a span or event naming it)."""
    shared: set[str]
    """Traces with rows naming two of the sessions read (their other rows go to one)."""


class Sessions:
    """Sessions, read across the ``spans`` and ``events`` tables."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def rows(self, project_id: str, session_key: str) -> SessionRows:
        """Spans and events of a session, every trace that touches it included."""
        return self.rows_of(project_id, [session_key])[session_key]

    def rows_of(
        self, project_id: str, session_keys: Sequence[str], *, limit: int = 10_000_000
    ) -> dict[str, SessionRows]:
        """:meth:`rows` of several sessions in three queries."""
        keys = list(dict.fromkeys(session_keys))
        if not keys:
            return {}
        owner, _ = self._owners(project_id, keys)
        traces = _traces(owner, keys)
        params = {"project": project_id, "sessions": keys, "traces": traces, "limit": limit}
        return self._assign(keys, owner, (_SESSION_SPANS, _SESSION_EVENTS), params)

    def rows_since(
        self,
        project_id: str,
        session_keys: Sequence[str],
        since_us: int,
        known_traces: Collection[str],
    ) -> SessionsSince:
        """What these sessions got since ``since_us`` (store clock), for a caller that holds
        their rows read before (:class:`skillsight.rebuild.finalizer.SessionRowCache`):
        rows ingested since then, and every row of the traces they own now that are not among
        ``known_traces`` (a trace whose earlier rows named no session joins a session when a
        later row of it names one). Each key's rows are the newest copy of each span and event
        among those; with the rows held before, newer replacing older, they are what
        :meth:`rows_of` reads, when nothing older than ``since_us`` commits after the rows held
        were read (``since_us`` 0 and no known traces: what it reads). In three queries,
        unordered."""
        keys = list(dict.fromkeys(session_keys))
        if not keys:
            return SessionsSince({}, {}, set())
        owner, shared = self._owners(project_id, keys)
        params = {
            "project": project_id,
            "sessions": keys,
            "traces": _traces(owner, keys),
            "fresh": [trace for trace in owner if trace not in known_traces],
            "since": int(since_us),
        }
        queries = (_SESSION_SPANS_SINCE, _SESSION_EVENTS_SINCE)
        traces: dict[str, set[str]] = {key: set() for key in keys}
        for trace, key in owner.items():
            traces[key].add(trace)
        return SessionsSince(self._assign(keys, owner, queries, params), traces, shared)

    def _owners(self, project_id: str, keys: list[str]) -> tuple[dict[str, str], set[str]]:
        """Trace id -> the session key (of these) it belongs to; and the traces that rows name
        two of these sessions in."""
        owner: dict[str, str] = {}
        shared: set[str] = set()
        found = self._store.query(_SESSION_TRACES, {"project": project_id, "sessions": keys})
        for row in found:
            trace = str(row["trace_id"])
            if owner.setdefault(trace, str(row["session_id"])) != row["session_id"]:
                shared.add(trace)
        return owner, shared

    def _assign(
        self,
        keys: list[str],
        owner: dict[str, str],
        queries: tuple[str, str],
        params: dict[str, object],
    ) -> dict[str, SessionRows]:
        """Each row the two queries read, given to its session: its own session id when that is
        one of ``keys``, else its trace's owner, else its trace id when that is a key."""
        out: dict[str, SessionRows] = {key: ([], []) for key in keys}
        for index, query in enumerate(queries):
            for row in self._store.query(query, params):
                key = row["session_id"] if row["session_id"] in out else ""
                key = key or owner.get(row["trace_id"], "")
                key = key or (row["trace_id"] if row["trace_id"] in out else "")
                if key:
                    out[key][index].append(row)  # type: ignore[arg-type]
        return out

    def missing_parents(self, project_id: str, session_keys: Sequence[str]) -> set[str]:
        """The sessions among these with a span whose parent span has not arrived (the first
        rule of completeness), from span ids alone: two narrow queries, no row read."""
        found = self.parents(project_id, session_keys)
        return {key for key, parents in found.items() if parents.missing}

    def parents(self, project_id: str, session_keys: Sequence[str]) -> dict[str, SpanParents]:
        """Per session with spans: its spans, whether one's parent span has not arrived, and
        whether that waits for a root span."""
        keys = list(dict.fromkeys(session_keys))
        if not keys:
            return {}
        owner: dict[str, str] = {}
        found = self._store.query(_SESSION_TRACES, {"project": project_id, "sessions": keys})
        for row in found:
            owner.setdefault(str(row["trace_id"]), str(row["session_id"]))
        params = {"project": project_id, "traces": _traces(owner, keys)}
        wanted = set(keys)
        counted: dict[str, SpanParents] = {}
        for row in self._store.query(_TRACE_PARENTS, params):
            trace = str(row["trace_id"])
            owners = {
                str(s)
                if s in wanted
                else owner.get(trace, "") or (trace if trace in wanted else "")
                for s in row["sessions"]
            } - {""}
            if len(owners) > 1:  # a trace shared by two of these sessions: span by span
                break
            missing = bool(row["missing"])
            for key in owners:
                before = counted.get(key, SpanParents(0, False, False))
                counted[key] = SpanParents(
                    before.spans + int(row["spans"]),
                    before.missing or missing,
                    before.waits_for_root or (missing and bool(row["rootless"])),
                )
        else:
            return counted
        spans: dict[str, set[tuple[str, str]]] = {}
        parents: dict[str, set[tuple[str, str]]] = {}
        rooted: dict[str, set[str]] = {}  # traces with a root span, per session
        for row in self._store.query(_SESSION_PARENTS, params):
            trace = str(row["trace_id"])
            key = str(row["session_id"]) if row["session_id"] in wanted else ""
            key = key or owner.get(trace, "") or (trace if trace in wanted else "")
            if key:
                spans.setdefault(key, set()).add((trace, str(row["span_id"])))
                if row["parent_span_id"]:
                    parents.setdefault(key, set()).add((trace, str(row["parent_span_id"])))
                else:
                    rooted.setdefault(key, set()).add(trace)
        out: dict[str, SpanParents] = {}
        for key, ids in spans.items():
            absent = parents.get(key, set()) - ids
            roots = rooted.get(key, set())
            out[key] = SpanParents(
                len(ids), bool(absent), any(trace not in roots for trace, _ in absent)
            )
        return out

    def touched(self, since_us: int) -> list[TouchedSession]:
        """Every session with rows ingested after ``since_us`` (store clock)."""
        return [TouchedSession(*arrival[:3]) for arrival in self.arrivals(since_us)]

    def arrivals(self, since_us: int, fresh_us: int | None = None) -> list[Arrival]:
        """:meth:`touched`, with how many of the rows are root spans, and how many are spans
        ingested after ``fresh_us`` (default ``since_us``: a caller that re-reads behind its
        watermark counts the spans it has not counted before). The trace finalizer's discovery
        query, the one read that spans projects: it finds work, it serves no caller."""
        fresh = since_us if fresh_us is None else fresh_us
        found = self._store.query(_TOUCHED_SESSIONS, {"since": int(since_us), "fresh": int(fresh)})
        return [
            Arrival(
                str(r["project"]),
                str(r["session_key"]),
                int(r["last_ingested_us"]),
                int(r["span_rows"]),
                int(r["root_spans"]),
            )
            for r in found
        ]

    def keys(self, project_id: str, *, limit: int = 1_000_000) -> list[str]:
        """Every session key (session id, else trace id) of a project."""
        found = self._store.query(_LIST_SESSION_KEYS, {"project": project_id, "limit": limit})
        return [str(r["session_key"]) for r in found]


def _traces(owner: Collection[str], keys: Sequence[str]) -> list[str]:
    """The trace ids a read of these sessions' rows looks up: the traces they own, and the keys
    themselves (a sessionless trace is its own session)."""
    return list(dict.fromkeys([*owner, *keys]))
