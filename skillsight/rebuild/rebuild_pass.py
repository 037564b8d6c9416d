"""One rebuild pass: read sessions from the store, rebuild each, write them all at once.

Shared by the trace finalizer (``skillsight serve``, ``skillsight worker``) and
``skillsight rebuild``. The algorithm is :func:`skillsight.rebuild.session.rebuild_session`.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skillsight.errors import SkillsightError
from skillsight.rebuild._completeness import CompletenessTally
from skillsight.rebuild._gc_pause import gc_paused
from skillsight.rebuild._row_cache import SessionRowCache
from skillsight.rebuild.catalogue import Catalogue, CatalogueFn
from skillsight.rebuild.trajectories import (
    REQUEST_EVENTS,
    REQUEST_SPAN,
    Event,
    Span,
    requests_logged,
)
from skillsight.store import RebuildResult, SessionRebuild, SessionRows, SpanParents, Store
from skillsight.store.records import SkillContract

log = logging.getLogger(__name__)


class RebuildFn(Protocol):
    """``skillsight.rebuild.session.rebuild_session``."""

    def __call__(
        self,
        spans: Iterable[Mapping[str, Any]],
        events: Iterable[Mapping[str, Any]] = ...,
        *,
        project_id: str = ...,
        catalogue: Catalogue | Mapping[str, SkillContract] | None = ...,
        session_id: str = ...,
    ) -> RebuildResult: ...


def default_rebuild() -> RebuildFn:
    from skillsight.rebuild.session import rebuild_session

    fn: RebuildFn = rebuild_session
    return fn


def is_complete(
    spans: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]] = ()
) -> bool:
    """Every span's parent has arrived (so each trace's root span has ended and been sent),
    and, when the session's log events are exported too, every model request its spans record
    has its events.

    Claude Code exports traces and logs on separate schedules, so the root span can land
    before the last batch of events; rebuilt then, the final answer would have no text yet and
    every evaluator would score a session that is still arriving. A request span and its
    events pair by ``request_id``, or, behind a gateway that sends none, by agent context and
    order (:func:`skillsight.rebuild.trajectories.requests_logged`). A session with no request
    events at all is not held back (its logs are probably not exported)."""
    tally = CompletenessTally()
    for span in spans:
        tally.add_span(span)
    for event in events:
        tally.add_event(event)
    answer = tally.complete()
    if answer is not None:
        return answer
    # request ids missing or not matching: pair by agent context and order
    request_spans = [Span(s) for s in spans if s["name"] == REQUEST_SPAN]
    return requests_logged(
        request_spans, [Event(e) for e in events if e["event_name"] in REQUEST_EVENTS]
    )


def parents_in(spans: Sequence[Mapping[str, Any]]) -> bool:
    """Every span's parent span has arrived (what :meth:`Store.sessions.parents` tells from
    span ids alone)."""
    present = {(s["trace_id"], s["span_id"]) for s in spans}
    return all(
        not s["parent_span_id"] or (s["trace_id"], s["parent_span_id"]) in present for s in spans
    )


def waits_for_root(spans: Sequence[Mapping[str, Any]]) -> bool:
    """A trace of these spans misses a parent span and has no root span (so, with parent
    pointers that form no cycle, it stays incomplete until a root span arrives)."""
    present = {(s["trace_id"], s["span_id"]) for s in spans}
    rooted = {s["trace_id"] for s in spans if not s["parent_span_id"]}
    return any(
        s["parent_span_id"]
        and s["trace_id"] not in rooted
        and (s["trace_id"], s["parent_span_id"]) not in present
        for s in spans
    )


@dataclass
class Outcome:
    """What happened to one session key in a rebuild pass."""

    project_id: str
    session_key: str
    rebuilt: RebuildResult | None = None
    incomplete: bool = False
    complete: bool = True
    """Every parent span and model request's events were there (:func:`is_complete`)."""
    settled: bool = True
    """Written as scoreable: complete, or not among the pass's ``provisional`` keys."""
    error: str = ""
    spans: int = 0
    """Spans read or counted by their ids (0 when neither)."""
    looked: bool = False
    """Its span ids were looked at in the store (``Sessions.parents``)."""
    waits_for_root: bool = False
    """Incomplete, and a trace of it has no root span yet (:func:`waits_for_root`)."""


def rebuild_sessions(
    store: Store,
    keys: Sequence[tuple[str, str, int]],
    *,
    rebuild: RebuildFn | None = None,
    catalogue: CatalogueFn | None = None,
    require_complete: Container[tuple[str, str]] = (),
    provisional: Container[tuple[str, str]] = (),
    hold_below: Mapping[tuple[str, str], int] | None = None,
    held: Container[tuple[str, str]] = (),
    cache: SessionRowCache | None = None,
) -> tuple[list[Outcome], list[int]]:
    """Read, rebuild and write ``(project_id, session_key, ingested_through_us)`` sessions.

    Reads each project's sessions together and writes the whole pass at once; a store error
    raises (nothing is written), a failing rebuild only marks its session. Returns each key's
    outcome and the stamps written. A ``(project_id, session_key)`` in ``require_complete``
    that is not complete (:func:`is_complete`) is left alone and reported incomplete; every
    other session is rebuilt from what is there. One in ``provisional`` that is not complete is
    written unsettled (shown, not scored: the evaluation workers wait for a settled rebuild).
    One in ``hold_below`` that misses a parent span and has fewer spans than its number is
    left alone too (the finalizer's bound on provisional rebuilds of a growing turn). One in
    ``held`` is left alone without a look: its caller knows it is still below its mark and
    waits for a root span (:class:`skillsight.rebuild.finalizer.SpanTally`). With a
    ``cache``, sessions read before are read incrementally (:class:`SessionRowCache`; a key's
    ``ingested_through_us`` must then be what discovery found, or 0). ``rebuild`` is the
    algorithm; by default skillsight's own, which, with a ``cache``, extends a session's
    previous rebuild by its new prompts when those can be read on their own
    (:func:`skillsight.rebuild.session.rebuild_or_extend`).
    """
    with gc_paused():
        return _rebuild_sessions(
            store,
            keys,
            rebuild=rebuild,
            catalogue=catalogue,
            require_complete=require_complete,
            provisional=provisional,
            hold_below=hold_below or {},
            held=held,
            cache=cache,
        )


def _rebuild_sessions(
    store: Store,
    keys: Sequence[tuple[str, str, int]],
    *,
    rebuild: RebuildFn | None,
    catalogue: CatalogueFn | None,
    require_complete: Container[tuple[str, str]],
    provisional: Container[tuple[str, str]],
    hold_below: Mapping[tuple[str, str], int],
    held: Container[tuple[str, str]],
    cache: SessionRowCache | None,
) -> tuple[list[Outcome], list[int]]:
    from skillsight.rebuild.session import rebuild_or_extend, rebuild_session

    outcomes: list[Outcome] = []
    contracts: dict[str, Mapping[str, SkillContract] | None] = {}
    projects = list(dict.fromkeys(p for p, _, _ in keys))
    # Sessions that must be complete and still miss a parent span are known from span ids
    # alone: their rows are not read (a long turn runs for minutes before its root arrives).
    # One whose rows the cache holds is read instead: only what is new, and no look.
    looks: dict[tuple[str, str], SpanParents] = {}
    for project_id in projects:
        checked = [
            k
            for p, k, _ in keys
            if p == project_id
            and (p, k) not in held
            and ((p, k) in require_complete or (p, k) in hold_below)
            and not (cache is not None and cache.holds(p, k))
        ]
        for key, parents in store.sessions.parents(project_id, checked).items():
            looks[(project_id, key)] = parents
    left = {
        ident
        for ident, parents in looks.items()
        if parents.missing and (ident in require_complete or parents.spans < hold_below[ident])
    }
    rows: dict[str, dict[str, SessionRows]] = {}
    for project_id in projects:
        read = [
            (k, through)
            for p, k, through in keys
            if p == project_id and (p, k) not in held and (p, k) not in left
        ]
        if cache is not None:
            rows[project_id] = cache.read(store, project_id, read)
        else:
            rows[project_id] = store.sessions.rows_of(project_id, [k for k, _ in read])
    for project_id, key, _ in keys:
        ident = (project_id, key)
        outcome = Outcome(project_id, key)
        outcomes.append(outcome)
        outcome.looked = ident in looks
        if ident in held or ident in left:
            outcome.complete, outcome.incomplete = False, True
            if outcome.looked:
                outcome.spans, _, outcome.waits_for_root = looks[ident]
            continue
        spans, events = rows[project_id][key]
        outcome.spans = len(spans)
        if not spans and not events:
            continue
        tallied = cache.complete(project_id, key) if cache is not None else None
        complete = is_complete(spans, events) if tallied is None else tallied
        outcome.complete = complete
        if not complete:
            outcome.waits_for_root = waits_for_root(spans)
        if ident in require_complete and not complete:
            outcome.incomplete = True
            continue
        if (  # read instead of looked at (the cache holds it): held below its mark the same
            not complete
            and ident in hold_below
            and not outcome.looked
            and len(spans) < hold_below[ident]
            and not parents_in(spans)
        ):
            outcome.incomplete = True
            continue
        outcome.settled = complete or (project_id, key) not in provisional
        try:
            if catalogue is not None and project_id not in contracts:
                contracts[project_id] = catalogue(project_id)
            joined = contracts.get(project_id)
            if rebuild is not None or cache is None:
                outcome.rebuilt = (rebuild or rebuild_session)(
                    spans, events, project_id=project_id, catalogue=joined, session_id=key
                )
                continue
            # skillsight's own rebuild, with the rows held: a session rebuilt from them before
            # is one of several prompts, worth extending; a first rebuild keeps no basis
            previous, new = cache.since_built(project_id, key)
            if cache.rebuilt_before(project_id, key):
                built = rebuild_or_extend(
                    spans,
                    events,
                    previous=previous,
                    new=new,
                    project_id=project_id,
                    catalogue=joined,
                    session_id=key,
                )
            else:
                built = rebuild_session(
                    spans, events, project_id=project_id, catalogue=joined, session_id=key
                )
            cache.keep_built(project_id, key, built, extended=built.extended)
            outcome.rebuilt = built
        except Exception as exc:  # one bad session must not stop the others
            log.exception("rebuilding session %s of project %s failed", key, project_id)
            outcome.error = f"{type(exc).__name__}: {exc}"[:500]
    done = [(o, k[2]) for o, k in zip(outcomes, keys, strict=True) if o.rebuilt is not None]
    return outcomes, _write(store, done)


def _write(store: Store, done: list[tuple[Outcome, int]]) -> list[int]:
    """Write the pass's rebuilds at once; when one of them cannot be serialized (a value no
    encoder takes), one at a time, that one marked failed and left out, so that it costs no
    other session its rebuild. A store error raises: nothing is written."""
    items = [SessionRebuild(o.project_id, o.rebuilt, t, o.settled) for o, t in done if o.rebuilt]
    try:
        return store.rebuilds.write(items)
    except SkillsightError:
        raise
    except ValueError:  # pydantic's, Arrow's and the codecs' serialization errors
        log.exception("writing %d rebuilds failed; writing them one at a time", len(items))
    stamps: list[int] = []
    for (outcome, _), item in zip(done, items, strict=True):
        try:
            stamps.extend(store.rebuilds.write([item]))
        except SkillsightError:
            raise
        except ValueError as exc:
            log.exception("writing session %s failed", outcome.session_key)
            outcome.error = f"{type(exc).__name__}: {exc}"[:500]
            outcome.rebuilt = None
    return stamps
