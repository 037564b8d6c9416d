"""What one read of Claude Code's rows found that reaches beyond those rows.

The reader (:mod:`._claude_code`) fills a :class:`ReadFacts` when asked; an extension of a
session by its new prompts (:mod:`._extend`) compares the facts of the rows read before with
those of the new rows read on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillsight.rebuild.trajectories._cc_pairing import RequestKeys
from skillsight.rebuild.trajectories._draft import Usage
from skillsight.rebuild.trajectories._rows import Event, Span

__all__ = ["ReadFacts", "names_in"]


@dataclass
class ReadFacts:
    """What one read of Claude Code rows found that reaches beyond its own rows.

    A session's rows extended by new prompts read the same as all of its rows read at once
    when nothing of the new rows reaches back into the old ones: :meth:`extended_by` tells
    (trajectories/_extend.py uses it). Every rule of the reader that looks across rows is
    covered here: ids that join rows, the time order, the request pairing, the latest request
    a call without request id belongs to, whether response texts were logged, and skill names
    looked up in later steps."""

    span_traces: list[str] = field(default_factory=list)
    """Trace ids in the order spans name them; then ``event_traces``, those only events name."""
    event_traces: list[str] = field(default_factory=list)
    version: str = ""
    model: str = ""
    names: set[str] = field(default_factory=set)
    """Every id the rows name: spans, parents, records, tool calls, requests, prompts."""
    first_ns: int = 0
    last_ns: int = 0
    keys: RequestKeys = field(default_factory=RequestKeys)
    contexts: set[str] = field(default_factory=set)
    """The agent contexts of the model requests (the delegating call, "" for the main agent)."""
    fallbacks: list[tuple[str, bool]] = field(default_factory=list)
    """Calls without a request id whose own context had no request before them: (context,
    whether a request of another context was taken)."""
    logged_text: bool = False
    open_names: bool = False
    """A masked skill name was looked for in steps after the last one."""
    side: list[Usage] = field(default_factory=list)
    """The usage of the CLI's side requests (titles, compaction), in time order."""
    has_events: bool = False
    unlogged: bool = False
    """Some prompt or answer text was not logged."""

    @property
    def trace_ids(self) -> list[str]:
        return self.span_traces + self.event_traces

    def extended_by(self, new: ReadFacts) -> bool:
        """``new``'s rows (read on their own) read the same in a read of both."""
        ours, theirs = self.keys, new.keys
        return (
            new.first_ns > self.last_ns
            and not (self.names & new.names)
            and not (set(new.span_traces) & set(self.span_traces + self.event_traces))
            and not (set(new.event_traces) & set(self.span_traces + self.event_traces))
            and new.logged_text == self.logged_text
            and not self.open_names
            # request ids trusted on both sides, or on neither, or named on one side only
            and (ours.trusted == theirs.trusted or not ours.named or not theirs.named)
            # the session-wide pairing by kind alone never runs
            and not (
                (ours.unpaired_spans or theirs.unpaired_spans)
                and (ours.unpaired_events or theirs.unpaired_events)
            )
            and not (ours.awaiting & theirs.started)
            and not (theirs.awaiting & ours.started)  # event sequence numbers start again
            # requests and responses without trace context share their contexts: the new
            # ones must follow the old ones in the CLI's order (not after a restart)
            and (
                ours.untraced is None
                or theirs.untraced is None
                or ours.untraced[1] < theirs.untraced[0]
            )
            and all(
                context not in self.contexts and (taken or not self.contexts)
                for context, taken in new.fallbacks
            )
        )

    def then(self, new: ReadFacts) -> ReadFacts:
        """The facts of a read of both (``extended_by(new)`` holds); where a rule's state is
        not kept exactly (contexts awaiting a response), a superset: a later extension is
        refused more often, never read differently."""
        ours, theirs = self.keys, new.keys
        keys = RequestKeys()
        keys.named, keys.trusted = ours.named or theirs.named, ours.trusted or theirs.trusted
        keys.unpaired_spans = ours.unpaired_spans or theirs.unpaired_spans
        keys.unpaired_events = ours.unpaired_events or theirs.unpaired_events
        keys.awaiting = ours.awaiting | theirs.awaiting
        keys.started = ours.started | theirs.started
        if ours.untraced is None or theirs.untraced is None:
            keys.untraced = ours.untraced or theirs.untraced
        else:
            keys.untraced = (ours.untraced[0], theirs.untraced[1])
        return ReadFacts(
            span_traces=self.span_traces + new.span_traces,
            event_traces=self.event_traces + new.event_traces,
            version=self.version or new.version,
            model=self.model or new.model,
            names=self.names | new.names,
            first_ns=self.first_ns,
            last_ns=max(self.last_ns, new.last_ns),
            keys=keys,
            contexts=self.contexts | new.contexts,
            logged_text=self.logged_text,
            open_names=new.open_names,
            side=[],  # summed into the basis (trajectories/_extend.py)
            has_events=self.has_events or new.has_events,
            unlogged=self.unlogged or new.unlogged,
        )


def names_in(spans: list[Span], events: list[Event], keys: RequestKeys) -> set[str]:
    """Every id that joins rows: span and record ids, parents, tool calls, requests, prompts."""
    names = {s.span_id for s in spans}
    names.update(s.parent_span_id for s in spans)
    names.update(s.tool_call_id for s in spans)
    for event in events:
        names.update((event.record_id, event.span_id, event.tool_call_id, event.prompt_id))
        names.add(event.attributes.get("request_id", ""))
    names.update(keys.span_key.values())
    names.update(keys.event_key.values())
    names.discard("")
    return names
