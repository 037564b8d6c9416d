"""Combining drafts of one session from several sources, and carving out subagent runs."""

from __future__ import annotations

import difflib
from typing import Any

from skillsight.rebuild.trajectories._draft import (
    SUBAGENT_TOOLS,
    AgentDraft,
    CallDraft,
    StepDraft,
    Usage,
)


def merge(primary: AgentDraft, other: AgentDraft) -> None:
    """Fill what ``primary`` lacks from ``other``; never add a second copy of a call."""
    theirs = {call.call_id: call for call in _all_calls(other)}
    for call in _all_calls(primary):
        twin = theirs.get(call.call_id)
        if twin is None:
            continue
        if call.arguments is None:
            call.arguments = twin.arguments
        if call.result is None:
            call.result = twin.result
        call.is_error = call.is_error or twin.is_error
        for key, value in twin.extra.items():
            call.extra.setdefault(key, value)
        if twin.span_id and twin.span_id != call.span_id:
            call.extra.setdefault("other_spans", []).append(
                {"source": other.source, "span_id": twin.span_id, "trace_id": twin.trace_id}
            )
        call.sources.extend(s for s in twin.sources if s not in call.sources)
    known = {skill["name"] for skill in primary.visible_skills}
    primary.visible_skills += [s for s in other.visible_skills if s["name"] not in known]
    primary.trace_ids += [t for t in other.trace_ids if t not in primary.trace_ids]
    if not primary.version:
        primary.version = other.version
    if not primary.model:
        primary.model = other.model
    _fill_request(primary, other)
    adopted = other.source == "claude_code" and _adopt_usage(primary, other)
    no_usage = all(step.usage is None for step in primary.steps)
    if not adopted and no_usage and "total_usage" not in primary.extra:
        totals = _usage_of(other)
        if not totals.empty:
            primary.extra["total_usage"] = totals
    primary.extra.setdefault("merged_sources", []).append(other.source)


def _llm_steps(draft: AgentDraft) -> list[StepDraft]:
    """The agent's LLM calls, its subagents' included, in time order."""
    steps = [s for s in draft.steps if s.source == "agent" and s.llm_calls]
    for call in draft.calls():
        if call.subagent is not None:
            steps += _llm_steps(call.subagent)
    return sorted(steps, key=lambda s: s.time_ns)


def _adopt_usage(primary: AgentDraft, other: AgentDraft) -> bool:
    """Take Claude Code's own per-call accounting (exact counts, cost) for the LLM calls the
    primary source also recorded; True when every call was matched.

    Calls are matched as sequences of the tool calls each made (an answer without tool calls by
    its text), so a source that saw the subagents nested and one that saw them flat still
    align.
    """
    mine, theirs = _llm_steps(primary), _llm_steps(other)

    def signature(step: StepDraft) -> tuple[str, ...]:
        # an answer without tool calls is told apart by its text (both sources log it)
        return tuple(sorted(c.call_id for c in step.calls)) or ("", step.message.strip())

    matcher = difflib.SequenceMatcher(
        a=[signature(s) for s in mine], b=[signature(s) for s in theirs], autojunk=False
    )
    pairs = [
        (mine[block.a + offset], theirs[block.b + offset])
        for block in matcher.get_matching_blocks()
        for offset in range(block.size)
    ]
    if not mine or len(pairs) != len(mine) or any(t.usage is None for _, t in pairs):
        return False  # one accounting per trajectory: all of the calls, or none
    for step, twin in pairs:
        step.usage = twin.usage
        step.extra["usage_from"] = other.source
    primary.side_usage.add(other.side_usage)
    primary.side_requests += other.side_requests
    # calls only Claude Code recorded still cost: counted in the totals, not shown as steps
    paired = {id(twin) for _, twin in pairs}
    for twin in theirs:
        if id(twin) not in paired and twin.usage is not None:
            primary.side_usage.add(twin.usage)
            primary.side_requests += 1
    primary.extra.pop("total_usage", None)
    return True


def _all_calls(draft: AgentDraft) -> list[CallDraft]:
    out: list[CallDraft] = []
    for call in draft.calls():
        out.append(call)
        if call.subagent is not None:
            out.extend(_all_calls(call.subagent))
    return out


def _fill_request(primary: AgentDraft, other: AgentDraft) -> None:
    mine = next((s for s in primary.steps if s.source == "user"), None)
    theirs = next((s for s in other.steps if s.source == "user" and s.message_logged), None)
    if mine is not None and not mine.message_logged and theirs is not None:
        mine.message, mine.message_logged = theirs.message, True
        mine.extra["message_from"] = other.source


def _usage_of(draft: AgentDraft) -> Usage:
    totals = Usage()
    for step in draft.steps:
        if step.usage is not None:
            totals.add(step.usage)
    if totals.empty and "total_usage" in draft.extra:
        totals.add(draft.extra["total_usage"])
    totals.add(draft.side_usage)
    return totals


def nest_subagents(draft: AgentDraft) -> None:
    """Move what ran inside a ``Task``/``Agent`` call's time window into its own draft.

    Sources with a real agent hierarchy (GenAI ``invoke_agent`` spans) nest while reading; the
    flat ones are carved here: by what the source marks (Claude Code parents a subagent's spans
    to the delegating call's execution span, which also holds for background agents), else by
    time: a subagent blocks its caller, so what started after the delegating call and before it
    returned is the subagent's.
    """
    for step in list(draft.steps):
        for call in step.calls:
            if call.name in SUBAGENT_TOOLS and call.subagent is None:
                _carve(draft, step, call)


def _carve(draft: AgentDraft, owner: StepDraft, task: CallDraft) -> None:
    marked = any(
        step.extra.get("_parent_call") == task.call_id
        or any(c.extra.get("_parent_call") == task.call_id for c in step.calls)
        for step in draft.steps
    )

    def inside(ns: int, mark: Any) -> bool:
        # the source says whose it is (a span parented to the call's execution), else timing
        if marked:
            return bool(mark == task.call_id)
        return task.start_ns < ns < task.end_ns

    moved: list[StepDraft] = []
    kept: list[StepDraft] = []
    for step in draft.steps:
        if (
            step is not owner
            and step.time_ns
            and inside(step.time_ns, step.extra.get("_parent_call"))
        ):
            moved.append(step)
            continue
        stray = [
            c
            for c in step.calls
            if c is not task and c.start_ns and inside(c.start_ns, c.extra.get("_parent_call"))
        ]
        if stray:
            step.calls = [c for c in step.calls if c not in stray]
            for call in stray:
                orphan = StepDraft(source="agent", time_ns=call.start_ns, calls=[call])
                orphan.message_logged = False
                moved.append(orphan)
        kept.append(step)
    if not moved:
        return
    draft.steps = kept
    arguments = task.arguments or {}
    agent_type = str(arguments.get("subagent_type") or arguments.get("agent") or "subagent")
    sub = AgentDraft(
        session_id=draft.session_id,
        trajectory_id=f"{draft.trajectory_id}/{task.call_id}",
        source=draft.source,
        name=agent_type,
        version=draft.version,
        model=draft.model,
        trace_ids=list(draft.trace_ids),
    )
    prompt = arguments.get("prompt")
    if isinstance(prompt, str):
        sub.steps.append(StepDraft(source="user", time_ns=task.start_ns, message=prompt))
    sub.steps += sorted(moved, key=lambda s: s.time_ns)
    sub.extra["parent_tool_call_id"] = task.call_id
    task.subagent = sub
    nest_subagents(sub)
