"""OpenInference's Claude Agent SDK instrumentor → an agent draft.

The root ``AGENT`` span of each ``query()`` holds the prompt (``input.value``) and the whole
transcript flattened as ``llm.output_messages.<i>.message.*``; ``TOOL`` spans (named after the
tool) add timing, span ids and the tool's result. There are no per-call LLM spans, so token and
cost totals come from the root span only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillsight.collector.trajectories._draft import AgentDraft, CallDraft, StepDraft, Usage
from skillsight.collector.trajectories._rows import Span, json_object
from skillsight.collector.trajectories._transcript import (
    SKILL_BODY_PREFIX,
    attach_call,
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


def read(spans: list[Span], session_id: str) -> AgentDraft:
    draft = AgentDraft(session_id=session_id, trajectory_id=session_id, source=SOURCE)
    draft.name = "claude-agent-sdk"
    tools = {s.tool_call_id: s for s in spans if s.operation == "execute_tool" and s.tool_call_id}
    used: set[str] = set()
    totals = Usage()
    for root in (s for s in spans if s.operation == "invoke_agent"):
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
                draft.steps.append(StepDraft(source="user", time_ns=0, message=text))
                continue
            if text:
                draft.steps.append(
                    StepDraft(source="agent", message=text, model=root.model, span_id="")
                )
            for index in sorted(message.tool_calls):
                raw = message.tool_calls[index]
                call_id = raw.get("id", "")
                call = CallDraft(call_id, raw.get("function.name", ""))
                call.arguments = json_object(raw.get("function.arguments", ""))
                _enrich(call, tools.get(call_id))
                used.add(call_id)
                attach_call(draft.steps, call)
                if call.name == "Skill":
                    last_skill = call
        if root.output and not any(
            s.source == "agent" and s.message == root.output for s in draft.steps
        ):
            draft.steps.append(StepDraft(source="agent", time_ns=root.end_ns, message=root.output))
    for call_id, span in sorted(tools.items(), key=lambda kv: (kv[1].start_ns, kv[0])):
        if call_id not in used:
            attach_call(draft.steps, _enrich(CallDraft(call_id, span.tool_name), span))
    for step in draft.steps:
        step.extra.pop("closed", None)
        if step.source == "agent" and not step.time_ns and step.calls:
            step.time_ns = step.calls[0].start_ns
    if not totals.empty:
        draft.extra["total_usage"] = totals
    draft.notes.append(
        "OpenInference reports no per-call LLM usage: step metrics are absent and final_metrics "
        "come from the root AGENT span."
    )
    return draft
