"""What the completeness rule needs of a session's rows, tallied as they are read.

The completeness rule (:func:`skillsight.rebuild.rebuild_pass.is_complete`): every span's
parent has arrived, and every model request its spans record has its log event. A
:class:`CompletenessTally` counts what the rule needs as rows are added, and answers when the
common case decides: a parent span missing (incomplete), or every request span's id logged by
a request event, or no request events (complete). Otherwise (request ids missing or not
matching) only the pairing by context and order can tell. ``is_complete`` tallies all of a
session's rows; the row cache keeps a tally per session it holds and adds only new rows, so a
session rebuilt after each prompt is not looked at whole each time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillsight.rebuild.trajectories import REQUEST_EVENTS, REQUEST_SPAN

__all__ = ["CompletenessTally"]


def _attributes(row: Mapping[str, Any]) -> Mapping[str, str]:
    value = row.get("attributes")
    return value if isinstance(value, Mapping) else {}


class CompletenessTally:
    """The completeness rule's counts over the rows added so far."""

    __slots__ = ("_logged", "_missing", "_present", "_request_events", "_unlogged", "_unnamed")

    def __init__(self) -> None:
        self._present: set[tuple[str, str]] = set()
        self._missing: set[tuple[str, str]] = set()
        """(trace, parent span) named by a span and not arrived."""
        self._request_events = 0
        self._logged: set[str] = set()
        """Request ids the request events name."""
        self._unlogged: set[str] = set()
        """Request ids request spans name and no request event does."""
        self._unnamed = 0
        """Request spans without a request id."""

    def add_span(self, span: Mapping[str, Any]) -> None:
        """A span first read (not a copy of one added before)."""
        trace = span["trace_id"]
        key = (trace, span["span_id"])
        self._present.add(key)
        self._missing.discard(key)
        parent = span["parent_span_id"]
        if parent and (trace, parent) not in self._present:
            self._missing.add((trace, parent))
        if span["name"] == REQUEST_SPAN:
            attributes = _attributes(span)
            named = attributes.get("request_id", "") or attributes.get("gen_ai.response.id", "")
            if not named:
                self._unnamed += 1
            elif named not in self._logged:
                self._unlogged.add(named)

    def add_event(self, event: Mapping[str, Any]) -> None:
        """An event first read."""
        if event["event_name"] in REQUEST_EVENTS:
            self._request_events += 1
            logged = _attributes(event).get("request_id", "")
            self._logged.add(logged)
            self._unlogged.discard(logged)

    def complete(self) -> bool | None:
        """What :func:`~skillsight.rebuild.rebuild_pass.is_complete` says of the rows added,
        when its common case decides; ``None`` when only the pairing of requests without ids
        can tell."""
        if self._missing:
            return False
        if not self._request_events:
            return True
        if not self._unnamed and not self._unlogged:
            return True
        return None
