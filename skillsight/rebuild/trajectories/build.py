"""Normalized spans and events of one session → one ATIF-v1.7 trajectory.

Every convention is read into the same draft shape by its own reader; when one session arrives
through several (Claude Code's native export and an SDK instrumentor share a trace and the
``toolu_…`` ids), the richest source is the spine and the others only fill what it lacks, so no
tool call, token or dollar is counted twice. docs/activations.md explains the mapping per source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from skillsight.rebuild.trajectories import (
    _claude_code,
    _genai,
    _openinference,
    _traceai,
)
from skillsight.rebuild.trajectories._cc_facts import ReadFacts
from skillsight.rebuild.trajectories._convert import to_atif
from skillsight.rebuild.trajectories._draft import AgentDraft
from skillsight.rebuild.trajectories._merge import merge, nest_subagents
from skillsight.rebuild.trajectories._rows import Event, Span, unique_events, unique_spans
from skillsight.rebuild.trajectories.atif import Trajectory
from skillsight.semconv import SKILLSIGHT_RERUN_ID

# Richest first: explicit activation spans, then per-call texts/costs, then transcripts.
_PRECEDENCE = ("skillsight", "gen_ai", "claude_code", "openinference", "traceai")


def build_trajectory(
    spans: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]] = (),
    *,
    session_id: str = "",
) -> Trajectory:
    """The session's trajectory; rows in any order, repeated rows counted once."""
    return to_atif(build_draft(unique_spans(spans), unique_events(events), session_id=session_id))


def build_draft(
    spans: list[Span],
    events: list[Event],
    *,
    session_id: str = "",
    facts: ReadFacts | None = None,
) -> AgentDraft:
    """The session's draft, every source merged; ``facts`` is filled by the Claude Code reader
    (:class:`~skillsight.rebuild.trajectories.ReadFacts`) when it reads."""
    session = session_id or _session_of(spans, events)
    drafts: dict[str, AgentDraft] = {}
    by_source: dict[str, list[Span]] = {}
    for span in spans:
        by_source.setdefault(span.source, []).append(span)
    cc_spans = by_source.get("claude_code", [])
    cc_events = [e for e in events if e.source == "claude_code"]
    if cc_spans or cc_events:
        drafts["claude_code"] = _claude_code.read(cc_spans, cc_events, session, facts)
    if "openinference" in by_source:
        drafts["openinference"] = _openinference.read(by_source["openinference"], session)
    if "traceai" in by_source:
        drafts["traceai"] = _traceai.read(by_source["traceai"], session)
    genai = by_source.get("gen_ai", []) + by_source.get("skillsight", [])
    if genai:
        draft = _genai.read(genai, session)
        if draft.steps:
            drafts["gen_ai"] = draft
    ordered = [drafts[name] for name in _PRECEDENCE if name in drafts and drafts[name].steps]
    if not ordered:
        empty = AgentDraft(session_id=session, trajectory_id=session, source="")
        empty.notes.append("No agent, LLM or tool telemetry was received for this session.")
        return empty
    primary = ordered[0]
    for other in ordered[1:]:
        merge(primary, other)
    nest_subagents(primary)
    tag(primary, *tags_of(spans, events))
    return primary


def tag(draft: AgentDraft, workspaces: Counter[str], rerun: str) -> None:
    """The working directory most rows report, and the paired rerun, in the draft's extra."""
    if workspaces:
        draft.extra["workspace"] = sorted(workspaces.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    if rerun:
        draft.extra["rerun_id"] = rerun


# The agent's working directory, when its telemetry reports it (OpenTelemetry's process
# attribute; Claude Code passes OTEL_RESOURCE_ATTRIBUTES into its resource).
WORKSPACE_ATTRIBUTE = "process.working_directory"


def tags_of(spans: list[Span], events: list[Event]) -> tuple[Counter[str], str]:
    """How many rows report each working directory, and the paired rerun (``skillsight
    rerun``) whose agent sent the rows: their ``skillsight.rerun.id`` resource attribute, the
    least when several ("" when no row tells; production traffic has no rerun id)."""
    counts: Counter[str] = Counter()
    found = ""
    for rows in (spans, events):
        for row in rows:
            resource = row.resource
            where = row.attributes.get(WORKSPACE_ATTRIBUTE) or resource.get(WORKSPACE_ATTRIBUTE)
            if where and where.startswith("/"):
                counts[where] += 1
            tag = resource.get(SKILLSIGHT_RERUN_ID)
            if tag and (not found or tag < found):
                found = tag
    return counts, found


def _session_of(spans: list[Span], events: list[Event]) -> str:
    counts = Counter(s.session_id for s in spans if s.session_id)
    counts.update(e.session_id for e in events if e.session_id)
    if counts:
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    trace_ids = sorted({s.trace_id for s in spans})
    return trace_ids[0] if trace_ids else ""
