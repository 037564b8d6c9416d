"""A Claude Code session's trajectory extended by its new prompts, instead of rebuilt whole.

Claude Code sends one trace per prompt, and each complete prompt makes the finalizer rebuild the
session: rebuilt from all its rows every time, a session of many prompts costs time quadratic in
their number. When the rows that arrived since the last rebuild are new traces that start after
everything before them and name nothing of it (no id, no agent context awaiting them, no
masked skill name that later steps may tell), the reader reads them on their own exactly as it
would read them with the rest (:meth:`ReadFacts.extended_by` holds every rule of the reader that
looks across rows). The trajectory is then the previous one with the new steps appended: the
previous steps are kept as validated models, only the new ones are converted, and the
document's totals, notes and tags are summed from what the previous rebuild kept
(:class:`Basis`). Anything else (a late row of an earlier trace, another source's spans, a
rule the new rows would reach back through) returns ``None``, and the session is rebuilt
whole. ``tests/test_rebuild_extend.py`` checks that both give the same document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from skillsight.rebuild.trajectories import _claude_code, atif
from skillsight.rebuild.trajectories._cc_facts import ReadFacts
from skillsight.rebuild.trajectories._convert import (
    assemble,
    convert_steps,
    steps_usage,
    subagent_usage,
)
from skillsight.rebuild.trajectories._draft import AgentDraft, Usage
from skillsight.rebuild.trajectories._merge import nest_subagents
from skillsight.rebuild.trajectories._rows import Span, unique_events, unique_spans
from skillsight.rebuild.trajectories.build import build_draft, tag, tags_of

__all__ = ["Basis", "build_with_basis", "extend"]


@dataclass(frozen=True)
class Basis:
    """What a rebuild of a Claude Code session keeps for the next one to extend."""

    facts: ReadFacts
    steps_usage: Usage
    """The main agent's steps' usage, summed in step order."""
    side_usage: Usage
    side_requests: int
    subagent_usage: tuple[Usage, ...]
    """Each embedded subagent trajectory's totals, in order."""
    workspaces: Counter[str]
    rerun: str


def _claude_code_only(spans: list[Span]) -> bool:
    return all(span.source == _claude_code.SOURCE for span in spans)


def build_with_basis(
    spans: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    *,
    session_id: str,
) -> tuple[atif.Trajectory, Basis | None]:
    """The session's trajectory (what ``build_trajectory`` returns) and, for a session of
    Claude Code's rows alone with more than one prompt (traces, or prompt ids when its events
    carry no trace context), what a later :func:`extend` starts from. A single prompt keeps
    none: while its turn runs, every rebuild of it is whole (its rows arrive in the same
    trace), and what a basis costs would be spent on each."""
    unique, unique_ev = unique_spans(spans), unique_events(events)
    traces = {s.trace_id for s in unique}
    traces.update(e.trace_id for e in unique_ev if e.trace_id)
    prompts = {e.prompt_id for e in unique_ev if e.prompt_id}
    several = len(traces) > 1 or len(prompts) > 1
    keep = session_id and several and _claude_code_only(unique)
    facts = ReadFacts() if keep else None
    draft = build_draft(unique, unique_ev, session_id=session_id, facts=facts)
    subagents: list[dict[str, Any]] = []
    steps = convert_steps(draft.steps, 1, subagents)
    usage = steps_usage(draft)
    subagent_totals = tuple(map(subagent_usage, subagents))
    trajectory = atif.Trajectory.model_validate(
        assemble(draft, steps, subagents, replace(usage), subagent_totals)
    )
    if facts is None or draft.source != _claude_code.SOURCE or not draft.steps:
        return trajectory, None
    workspaces, rerun = tags_of(unique, unique_ev)
    basis = Basis(
        facts, usage, draft.side_usage, draft.side_requests, subagent_totals, workspaces, rerun
    )
    return trajectory, basis


def extend(
    previous: atif.Trajectory,
    basis: Basis,
    spans: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    *,
    session_id: str,
) -> tuple[atif.Trajectory, Basis] | None:
    """``previous`` (rebuilt from some rows, with ``basis``) extended by the rows that came
    since, or ``None`` when those cannot be read on their own (then rebuild the session)."""
    unique, unique_ev = unique_spans(spans), unique_events(events)
    if not unique and not unique_ev:
        return previous, basis
    if not session_id or not _claude_code_only(unique):
        return None
    facts = ReadFacts()
    cc_events = [e for e in unique_ev if e.source == _claude_code.SOURCE]
    draft = _claude_code.read(unique, cc_events, session_id, facts)
    if not draft.steps or not basis.facts.extended_by(facts):
        return None
    both = basis.facts.then(facts)
    if previous.subagent_trajectories and (
        both.version != basis.facts.version or both.model != basis.facts.model
    ):
        return None  # the earlier subagent runs carry the session's version and model
    # the new subagent runs are carved with what the whole session tells
    draft.trace_ids, draft.version, draft.model = both.trace_ids, both.version, both.model
    nest_subagents(draft)

    subagents: list[dict[str, Any]] = []
    steps = convert_steps(draft.steps, len(previous.steps) + 1, subagents)
    usage = replace(basis.steps_usage)
    for step in draft.steps:
        if step.usage is not None:
            usage.add(step.usage)
    side = replace(basis.side_usage)
    for call in facts.side:
        side.add(call)
    new_workspaces, new_rerun = tags_of(unique, unique_ev)
    workspaces = basis.workspaces + new_workspaces
    rerun = min(filter(None, (basis.rerun, new_rerun)), default="")

    header = AgentDraft(
        session_id=draft.session_id,
        trajectory_id=draft.trajectory_id,
        source=_claude_code.SOURCE,
        name=draft.name,
        version=both.version,
        model=both.model,
        trace_ids=both.trace_ids,
        skill_events=[*(previous.extra or {}).get("skill_events", ()), *draft.skill_events],
        side_usage=side,
        side_requests=basis.side_requests + len(facts.side),
    )
    _claude_code.note(header, logs_received=both.has_events, unlogged=both.unlogged)
    tag(header, workspaces, rerun)
    earlier = [_retraced(sub, both.trace_ids) for sub in previous.subagent_trajectories or ()]
    subagent_totals = basis.subagent_usage + tuple(map(subagent_usage, subagents))
    trajectory = atif.extended(
        assemble(
            header,
            [*previous.steps, *steps],  # validated already: taken as they are
            [*earlier, *subagents],
            replace(usage),
            subagent_totals,
        ),
        previous,
    )
    trajectory.continues(previous)  # the earlier steps' stored text is written once
    return trajectory, Basis(
        both, usage, side, header.side_requests, subagent_totals, workspaces, rerun
    )


def _retraced(sub: atif.Trajectory, trace_ids: list[str]) -> atif.Trajectory:
    """An earlier subagent run, naming the session's traces as a whole rebuild does."""
    nested = [_retraced(inner, trace_ids) for inner in sub.subagent_trajectories or ()]
    return sub.model_copy(
        update={
            "extra": {**(sub.extra or {}), "trace_ids": list(trace_ids)},
            "subagent_trajectories": nested or sub.subagent_trajectories,
        }
    )
