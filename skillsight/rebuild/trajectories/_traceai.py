"""traceAI's Claude Agent SDK instrumentor (``claude_agent.*``) → an agent draft.

A ``claude_agent.conversation`` root holds the prompt and the cost; one
``claude_agent.assistant_turn`` span per SDK assistant message holds its text (``[Tool: X]``
for a message that is only a tool use); ``tool.<Name>`` spans, siblings of the turns, hold each
call's input and output. Token counts from this instrumentor are always zero, so they are ignored.
"""

from __future__ import annotations

import re

from skillsight.rebuild.trajectories._draft import AgentDraft, CallDraft, StepDraft, Usage
from skillsight.rebuild.trajectories._rows import Span, json_object
from skillsight.rebuild.trajectories._transcript import attach_call, tool_output

SOURCE = "traceai"

_TOOL_ONLY = re.compile(r"^(\s*\[Tool: [^\]]*\]\s*)+$")


def _call(span: Span) -> CallDraft:
    call = CallDraft(span.tool_call_id, span.tool_name)
    call.arguments = json_object(span.input)
    call.result = tool_output(span.output) if span.output else None
    call.is_error = span.failed or span.attr("claude_agent.tool.is_error") == "true"
    call.start_ns, call.end_ns = span.start_ns, span.end_ns
    call.span_id, call.trace_id = span.span_id, span.trace_id
    if call.name == "Skill" and call.arguments:
        skill = call.arguments.get("skill") or call.arguments.get("command")
        if isinstance(skill, str):
            call.extra["skill"] = skill
        declared = json_object(span.output)
        if declared and isinstance(declared.get("allowedTools"), list):
            call.extra["allowed_tools"] = [str(t) for t in declared["allowedTools"]]
    call.sources.append(SOURCE)
    return call


def read(spans: list[Span], session_id: str) -> AgentDraft:
    draft = AgentDraft(session_id=session_id, trajectory_id=session_id, source=SOURCE)
    draft.name = "claude-agent-sdk"
    cost = 0.0
    timeline: list[tuple[int, int, Span]] = []
    for span in spans:
        kind = span.attr("claude_agent.span_kind")
        if span.operation == "invoke_agent" and kind != "subagent":
            if span.trace_id not in draft.trace_ids:
                draft.trace_ids.append(span.trace_id)
            cost += span.cost_usd
            timeline.append((span.start_ns, 0, span))
        elif span.operation == "chat":
            timeline.append((span.start_ns, 1, span))
        elif span.operation == "execute_tool" and span.tool_call_id:
            timeline.append((span.start_ns, 2, span))
    timeline.sort(key=lambda item: (item[0], item[1], item[2].span_id))
    for _, rank, span in timeline:
        if rank == 0:
            prompt = span.attr("claude_agent.prompt") or span.input
            if prompt:
                step = StepDraft(source="user", time_ns=span.start_ns, message=prompt)
                step.span_id = span.span_id
                draft.steps.append(step)
        elif rank == 1:
            draft.model = draft.model or span.model
            text = span.attr("claude_agent.message.content") or span.output
            if text and not _TOOL_ONLY.match(text):
                step = StepDraft(
                    source="agent",
                    time_ns=span.start_ns,
                    message=text,
                    model=span.model,
                    span_id=span.span_id,
                )
                draft.steps.append(step)
        else:
            attach_call(draft.steps, _call(span))
    if cost:
        draft.extra["total_usage"] = Usage(cost_usd=cost)
    draft.notes.append(
        "traceAI reports neither per-call usage nor token totals; final_metrics carry its cost."
    )
    return draft
