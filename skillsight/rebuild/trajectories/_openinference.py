"""OpenInference's Claude Agent SDK instrumentor → an agent draft.

The root ``AGENT`` span of each ``query()`` holds the prompt (``input.value``) and the whole
transcript flattened as ``llm.output_messages.<i>.message.*``; ``TOOL`` spans (named after the
tool) add timing, span ids and the tool's result. There are no per-call LLM spans, so token and
cost totals come from the root span only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillsight.rebuild.trajectories._draft import (
    SUBAGENT_TOOLS,
    AgentDraft,
    CallDraft,
    StepDraft,
    Usage,
)
from skillsight.rebuild.trajectories._rows import Span, json_object
from skillsight.rebuild.trajectories._transcript import (
    SKILL_BODY_PREFIX,
    attach_call,
    subagent_report,
    tool_output,
    visible_skills,
)

SOURCE = "openinference"

_KEY = re.compile(r"^llm\.output_messages\.(\d+)\.message\.(.+)$")
_CONTENT = re.compile(r"^content(?:\.(\d+))?$|^contents\.(\d+)\.message_content\.text$")
_TOOL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$")


@dataclass
class _Message:
    role: str = ""
    texts: dict[int, str] = field(default_factory=dict)
    tool_calls: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(self.texts[k] for k in sorted(self.texts) if self.texts[k])


def messages(span: Span) -> list[_Message]:
    found: dict[int, _Message] = {}
    for key, value in span.attributes.items():
        match = _KEY.match(key)
        if match is None:
            continue
        message = found.setdefault(int(match.group(1)), _Message())
        rest = match.group(2)
        if rest == "role":
            message.role = value
            continue
        content = _CONTENT.match(rest)
        if content is not None:
            index = content.group(1) or content.group(2) or "0"
            message.texts[int(index)] = value
            continue
        tool = _TOOL.match(rest)
        if tool is not None:
            message.tool_calls.setdefault(int(tool.group(1)), {})[tool.group(2)] = value
    return [found[i] for i in sorted(found)]


def _enrich(call: CallDraft, span: Span | None) -> CallDraft:
    if span is not None:
        call.start_ns, call.end_ns = span.start_ns, span.end_ns
        call.span_id, call.trace_id = span.span_id, span.trace_id
        if call.arguments is None:
            call.arguments = json_object(span.input)
        call.result = tool_output(span.output) if span.output else None
        if call.name in SUBAGENT_TOOLS:
            call.extra["_raw_output"] = span.output
        call.is_error = span.failed
    if call.name == "Skill" and call.arguments:
        skill = call.arguments.get("skill") or call.arguments.get("command")
        if isinstance(skill, str):
            call.extra["skill"] = skill
        declared = json_object(span.output) if span is not None else None
        if declared and isinstance(declared.get("allowedTools"), list):
            call.extra["allowed_tools"] = [str(t) for t in declared["allowedTools"]]
    call.sources.append(SOURCE)
    return call


def _fill_times(steps: list[StepDraft]) -> None:
    """Transcript messages carry no time: a step starts with its first call, and a text-only
    step right after the latest call it follows (the model answered once the result was in)."""
    latest = 0
    for step in steps:
        step.extra.pop("closed", None)
        if not step.time_ns:
            step.time_ns = step.calls[0].start_ns if step.calls else latest
        latest = max([latest, step.time_ns, *(c.end_ns for c in step.calls)])


def read(spans: list[Span], session_id: str) -> AgentDraft:
    draft = AgentDraft(session_id=session_id, trajectory_id=session_id, source=SOURCE)
    draft.name = "claude-agent-sdk"
    by_id = {s.span_id: s for s in spans}

    def owner_agent(span: Span) -> Span | None:
        """The nearest AGENT ancestor (the context the span ran in)."""
        seen = {span.span_id}
        current = by_id.get(span.parent_span_id)
        while current is not None and current.span_id not in seen:
            if current.operation == "invoke_agent":
                return current
            seen.add(current.span_id)
            current = by_id.get(current.parent_span_id)
        return None

    agents = [s for s in spans if s.operation == "invoke_agent"]
    roots = [a for a in agents if owner_agent(a) is None]
    tools_of: dict[str, dict[str, Span]] = {}
    for span in spans:
        if span.operation == "execute_tool" and span.tool_call_id:
            context = owner_agent(span)
            tools_of.setdefault(context.span_id if context else "", {})[span.tool_call_id] = span
    totals = Usage()
    calls: dict[str, CallDraft] = {}
    for root in roots:
        if root.trace_id not in draft.trace_ids:
            draft.trace_ids.append(root.trace_id)
        draft.model = draft.model or root.model
        totals.add(
            Usage.of(
                input_tokens=root.input_tokens,
                output_tokens=root.output_tokens,
                cache_read=root.cache_read_tokens,
                cache_creation=root.cache_creation_tokens,
                cost_usd=root.cost_usd or None,
                input_includes_cache=True,
            )
        )
        _read_root(draft, root, tools_of.get(root.span_id, {}), calls)
    for call_id, span in sorted(tools_of.get("", {}).items(), key=lambda kv: kv[1].start_ns):
        if call_id not in calls:
            calls[call_id] = _enrich(CallDraft(call_id, span.tool_name), span)
            attach_call(draft.steps, calls[call_id])
    for agent in agents:
        if agent in roots:
            continue
        task = next(
            (calls[s.tool_call_id] for s in _chain(agent, by_id) if s.tool_call_id in calls), None
        )
        if task is None:
            continue
        task.subagent = _subagent(draft, agent, task, tools_of.get(agent.span_id, {}), calls)
    _fill_times(draft.steps)
    if not totals.empty:
        draft.extra["total_usage"] = totals
    draft.notes.append(
        "OpenInference reports no per-call LLM usage: step metrics are absent and final_metrics "
        "come from the root AGENT span."
    )
    return draft


def _chain(span: Span, by_id: dict[str, Span]) -> list[Span]:
    out: list[Span] = []
    current = by_id.get(span.parent_span_id)
    while current is not None and current not in out:
        out.append(current)
        current = by_id.get(current.parent_span_id)
    return out


def _read_root(
    draft: AgentDraft, root: Span, tools: dict[str, Span], calls: dict[str, CallDraft]
) -> None:
    if root.input:
        step = StepDraft(source="user", time_ns=root.start_ns, message=root.input)
        step.span_id = root.span_id
        draft.steps.append(step)
    last_skill: CallDraft | None = None
    for message in messages(root):
        text = message.text
        if message.role == "system":
            draft.visible_skills += visible_skills(text)
            continue
        if text.startswith(SKILL_BODY_PREFIX):
            # the body Claude Code injects after a Skill call is that call's result to the model
            if last_skill is not None:
                last_skill.extra["skill_body"] = text
            if draft.steps and draft.steps[-1].source == "agent":
                draft.steps[-1].extra["closed"] = True
            continue
        if message.role == "user":
            # tool results come back as user messages without text: not a new request
            if text:
                draft.steps.append(StepDraft(source="user", message=text))
            continue
        if text:
            draft.steps.append(StepDraft(source="agent", message=text, model=root.model))
        for index in sorted(message.tool_calls):
            raw = message.tool_calls[index]
            call_id = raw.get("id", "")
            call = CallDraft(call_id, raw.get("function.name", ""))
            call.arguments = json_object(raw.get("function.arguments", ""))
            calls[call_id] = _enrich(call, tools.get(call_id))
            attach_call(draft.steps, call)
            if call.name == "Skill":
                last_skill = call
    if root.output and not any(
        s.source == "agent" and s.message == root.output for s in draft.steps
    ):
        draft.steps.append(StepDraft(source="agent", time_ns=root.end_ns, message=root.output))
    for call_id, span in sorted(tools.items(), key=lambda kv: (kv[1].start_ns, kv[0])):
        if call_id not in calls:
            calls[call_id] = _enrich(CallDraft(call_id, span.tool_name), span)
            attach_call(draft.steps, calls[call_id])


def _subagent(
    parent: AgentDraft,
    agent: Span,
    task: CallDraft,
    tools: dict[str, Span],
    calls: dict[str, CallDraft],
) -> AgentDraft:
    """A nested AGENT span (a Task/Agent run): only its tool spans and the report it returned."""
    arguments = task.arguments or {}
    sub = AgentDraft(
        session_id=parent.session_id,
        trajectory_id=f"{parent.trajectory_id}/{task.call_id}",
        source=SOURCE,
        name=str(arguments.get("subagent_type") or agent.agent or "subagent"),
        model=agent.model or parent.model,
        trace_ids=[agent.trace_id],
    )
    prompt = arguments.get("prompt")
    if isinstance(prompt, str):
        sub.steps.append(StepDraft(source="user", time_ns=agent.start_ns, message=prompt))
    for call_id, span in sorted(tools.items(), key=lambda kv: (kv[1].start_ns, kv[0])):
        calls[call_id] = _enrich(CallDraft(call_id, span.tool_name), span)
        attach_call(sub.steps, calls[call_id])
    report = subagent_report(task.extra.get("_raw_output", ""))
    if report:
        sub.steps.append(StepDraft(source="agent", time_ns=agent.end_ns, message=report))
    sub.extra["parent_tool_call_id"] = task.call_id
    sub.notes.append(
        "The subagent's messages are not in the OpenInference transcript: its steps are its tool "
        "calls and the report it returned."
    )
    _fill_times(sub.steps)
    return sub
