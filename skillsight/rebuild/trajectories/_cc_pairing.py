"""Which of Claude Code's rows describe the same model request, with or without ``request_id``.

Claude Code names a model request by the API's ``request-id`` response header, on the
``claude_code.llm_request`` span and on the ``api_request`` / ``api_error`` /
``assistant_response`` events. Behind a gateway that does not send the header (Bedrock, Vertex,
LLM proxies) none of them carries it, and one request would read as two: a span with no text
and an event with no timing. What both still carry:

- the agent context: an event is logged under the span active at the time, which is the
  request span's parent (the ``interaction`` span for the main agent, the ``Agent`` call's
  ``tool.execution`` span for a subagent), in the same trace;
- the kind of request: ``query_source_safe`` on the span, ``query_source`` on the event
  (``agent.custom`` vs ``agent:custom``: compared up to the first separator);
- the order: requests of one agent context run one after the other, spans start in that order
  and events are numbered in it (``event.sequence``);
- the token counts, identical on the span and its ``api_request`` event.

So a span and an event pair when their request ids agree; rows without an id (or all rows, when
no id of one side matches any of the other) pair in order within their agent context and kind,
skipping an event whose token counts disagree (an event lost or late).
An ``assistant_response`` without a known id belongs to the request logged just before it in
its context.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from skillsight.rebuild.trajectories._rows import Event, Span

__all__ = [
    "REQUEST_EVENTS",
    "REQUEST_SPAN",
    "RequestKeys",
    "pair_requests",
    "query_kind",
    "request_id_of",
    "requests_logged",
]

REQUEST_SPAN = "claude_code.llm_request"
REQUEST_EVENTS = frozenset({"claude_code.api_request", "claude_code.api_error"})
RESPONSE_EVENT = "claude_code.assistant_response"
_PAIRED_EVENTS = REQUEST_EVENTS | {RESPONSE_EVENT}
_KIND = re.compile(r"[^:.]*")
_LOOKAHEAD = 3  # events skipped at most to find a request's own (a lost or late event)


@functools.lru_cache(maxsize=1024)  # a session names a handful of query sources
def query_kind(source: str) -> str:
    """``agent:custom`` and ``agent.custom`` (the span's "safe" spelling) → ``agent``."""
    match = _KIND.match(source)
    return match.group(0) if match else source


def request_id_of(row: Span | Event) -> str:
    """The API request id the row names ("" when the gateway sent none)."""
    return row.attributes.get("request_id", "") or (
        row.attributes.get("gen_ai.response.id", "") if isinstance(row, Span) else ""
    )


class RequestKeys:
    """One key per model request: ``span_key[span_id]``, ``event_key[record_id]``."""

    __slots__ = (
        "awaiting",
        "event_key",
        "named",
        "paired_without_id",
        "span_key",
        "started",
        "trusted",
        "unpaired_events",
        "unpaired_spans",
        "untraced",
    )

    def __init__(self) -> None:
        self.span_key: dict[str, str] = {}
        self.event_key: dict[str, str] = {}
        self.paired_without_id = 0
        """Span/event pairs joined by context and order, not by request id."""
        # What an extension by new traces needs to know (trajectories/_extend.py):
        self.named = False
        """Some request span or event names a request id."""
        self.trusted = False
        """Some request id is named by both a span and an event (then ids are trusted)."""
        self.unpaired_spans = self.unpaired_events = False
        """Request spans / events without a usable id left unpaired within their traces (the
        ones the session-wide pairing by kind alone looks at)."""
        self.awaiting: set[tuple[str, str, str]] = set()
        """Agent contexts whose last request event has no response yet."""
        self.started: set[tuple[str, str, str]] = set()
        """Agent contexts whose first response came before any request of theirs."""
        self.untraced: tuple[Sequenced, Sequenced] | None = None
        """The first and last (in the CLI's event order) of the request and response events
        without trace context: their agent contexts are one for the whole session, so rows
        read apart pair as rows read together only when these follow one another."""

    def flags(self) -> RequestKeys:
        """A copy of what reaches beyond the rows, without the keys of each row."""
        kept = RequestKeys()
        kept.named, kept.trusted = self.named, self.trusted
        kept.unpaired_spans, kept.unpaired_events = self.unpaired_spans, self.unpaired_events
        kept.awaiting, kept.started = set(self.awaiting), set(self.started)
        kept.untraced = self.untraced
        kept.paired_without_id = self.paired_without_id
        return kept


Sequenced = tuple[int, int, str]
"""An event's place in the CLI's order: its ``event.sequence``, time and record id."""


def _sequence(event: Event) -> Sequenced:
    text = event.attributes.get("event.sequence", "")
    return (int(text) if text.isdigit() else -1, event.time_ns, event.record_id)


def _tokens(row: Span | Event) -> tuple[int, int]:
    return (row.input_tokens, row.output_tokens)


def _agree(span: Span, event: Event) -> bool:
    if event.name != "claude_code.api_request":
        return True  # an api_error has no usage to compare
    ours, theirs = _tokens(span), _tokens(event)
    return ours == theirs or not any(ours) or not any(theirs)


def _align(spans: Sequence[Span], events: Sequence[Event]) -> Iterable[tuple[Span, Event]]:
    """Spans and events of one context and kind, in order; an event whose tokens disagree
    with the span is skipped (looking a few ahead), a span with no agreeing event stays alone."""
    j = 0
    for span in spans:
        for k in range(j, min(j + _LOOKAHEAD, len(events))):
            if _agree(span, events[k]):
                yield span, events[k]
                j = k + 1
                break


def pair_requests(spans: Sequence[Span], events: Sequence[Event]) -> RequestKeys:
    """Key every request span and request/response event so one request has one key."""
    keys = RequestKeys()
    request_spans = [(s, request_id_of(s)) for s in spans if s.name == REQUEST_SPAN]
    requests = [(e, request_id_of(e)) for e in events if e.name in REQUEST_EVENTS]
    span_ids = {rid for _, rid in request_spans} - {""}
    event_ids = {rid for _, rid in requests} - {""}
    # Ids that match somewhere are trusted: then only rows without one pair by context. Ids
    # that never match (a proxy that rewrites one side) are ignored for pairing.
    trusted = keys.trusted = bool(span_ids & event_ids)
    keys.named = bool(span_ids or event_ids)
    loose_spans: list[Span] = []
    for span, rid in request_spans:
        keys.span_key[span.span_id] = rid or f"span:{span.span_id}"
        if not rid or not trusted:
            loose_spans.append(span)
    loose_events: list[Event] = []
    for event, rid in requests:
        keys.event_key[event.record_id] = rid or f"event:{event.record_id}"
        if not rid or not trusted:
            loose_events.append(event)
    left_spans, left_events = loose_spans, loose_events
    if loose_spans and loose_events:
        left_spans, left_events = _pair_loose(keys, loose_spans, loose_events)
    keys.unpaired_spans, keys.unpaired_events = bool(left_spans), bool(left_events)
    _pair_responses(keys, [e for e in events if e.name in _PAIRED_EVENTS])
    return keys


def _span_group(span: Span, level: int) -> tuple[str, ...]:
    kind = query_kind(span.attr("query_source_safe") or span.attr("query_source"))
    return ((span.trace_id, span.parent_span_id, kind), (span.trace_id, kind), (kind,))[level]


def _event_group(event: Event, level: int) -> tuple[str, ...]:
    kind = query_kind(event.attr("query_source"))
    return ((event.trace_id, event.span_id, kind), (event.trace_id, kind), (kind,))[level]


def _pair_loose(
    keys: RequestKeys, spans: list[Span], events: list[Event]
) -> tuple[list[Span], list[Event]]:
    """Pair rows without a usable id; returns those the trace levels left unpaired."""
    # Within the exact agent context first; then within the trace (a context not recognised);
    # then within the session (events that carry no trace context at all).
    left = spans, events
    for level in range(3):
        span_groups: dict[tuple[str, ...], list[Span]] = {}
        for span in spans:
            span_groups.setdefault(_span_group(span, level), []).append(span)
        event_groups: dict[tuple[str, ...], list[Event]] = {}
        for event in events:
            event_groups.setdefault(_event_group(event, level), []).append(event)
        paired_spans: set[str] = set()
        paired_events: set[str] = set()
        for group, members in span_groups.items():
            candidates = sorted(event_groups.get(group, ()), key=_sequence)
            members.sort(key=lambda s: (s.start_ns, s.span_id))
            for span, event in _align(members, candidates):
                keys.event_key[event.record_id] = keys.span_key[span.span_id]
                keys.paired_without_id += 1
                paired_spans.add(span.span_id)
                paired_events.add(event.record_id)
        spans = [s for s in spans if s.span_id not in paired_spans]
        events = [e for e in events if e.record_id not in paired_events]
        if level < 2:
            left = spans, events
        if not spans or not events:
            break
    return left


def _pair_responses(keys: RequestKeys, events: Sequence[Event]) -> None:
    """An ``assistant_response`` whose id names no request joins the request logged last
    before it in its agent context (the CLI logs a request, then its response)."""
    known = set(keys.event_key.values())
    last: dict[tuple[str, str, str], str | None] = {}
    # only request and response events are looked at; in their order (stable: as before)
    ordered = sorted(events, key=_sequence)
    untraced = [_sequence(e) for e in ordered if not e.trace_id]
    keys.untraced = (untraced[0], untraced[-1]) if untraced else None
    for event in ordered:
        context = (event.trace_id, event.span_id, query_kind(event.attr("query_source")))
        if event.name in REQUEST_EVENTS:
            last[context] = keys.event_key[event.record_id]
        elif event.name == RESPONSE_EVENT:
            rid = request_id_of(event)
            if rid and rid in known:
                keys.event_key[event.record_id] = rid
                last[context] = None
                continue
            if context not in last:
                keys.started.add(context)
            owner = last.get(context)
            keys.event_key[event.record_id] = owner or rid or f"event:{event.record_id}"
            last[context] = None  # one response per request
    keys.awaiting = {context for context, owner in last.items() if owner is not None}


def requests_logged(spans: Sequence[Span], events: Sequence[Event]) -> bool:
    """Every model request the spans record has its ``api_request``/``api_error`` event, paired
    by request id or, without one, by context and order (the finalizer's completeness rule).
    True when no request event arrived at all: such logs are not exported, or name no request."""
    requests = [e for e in events if e.name in REQUEST_EVENTS]
    if not requests:
        return True
    keys = pair_requests(spans, requests)
    logged = {keys.event_key[e.record_id] for e in requests}
    return all(keys.span_key[s.span_id] in logged for s in spans if s.name == REQUEST_SPAN)
