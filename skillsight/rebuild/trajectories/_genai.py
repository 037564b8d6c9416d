"""OpenTelemetry GenAI spans, and skillsight's own instrumentors' (which follow them) → a draft.

``invoke_agent`` spans are agent contexts (one nested under a tool call is a subagent), ``chat``
spans are LLM calls (agent steps), ``execute_tool`` spans are tool calls (joined to the latest
LLM call of their agent that started before them), and ``activate_skill`` spans are explicit
skill activations: every tool call and LLM call beneath one is marked with its span id, so the
activation's boundaries are exact. DESIGN.md, *Span conventions emitted by the instrumentors*.
"""

from __future__ import annotations

from typing import Any

from skillsight import semconv as sc
from skillsight.rebuild.trajectories._draft import AgentDraft, CallDraft, StepDraft, Usage
from skillsight.rebuild.trajectories._rows import Span, json_object, json_value
from skillsight.rebuild.trajectories._transcript import attach_call, visible_skills

SOURCE = "gen_ai"


def _is_activation(span: Span) -> bool:
    return (
        span.operation == sc.OP_ACTIVATE_SKILL
        or span.attr(sc.SKILLSIGHT_SPAN_KIND) == sc.SPAN_KIND_SKILL_ACTIVATION
    )


def message_text(raw: str, role: str) -> str:
    """Text of the last ``role`` message in a GenAI messages attribute (or the raw text)."""
    value = json_value(raw)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return raw
    texts = [_text_of(m) for m in value if isinstance(m, dict) and m.get("role", role) == role]
    texts = [t for t in texts if t]
    return texts[-1] if texts else ""


def _text_of(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if isinstance(parts, list):
        return "\n".join(
            str(p.get("content", "") or p.get("text", ""))
            for p in parts
            if isinstance(p, dict) and p.get("type", "text") == "text"
        ).strip()
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text", "")) for c in content if isinstance(c, dict) and "text" in c
        ).strip()
    return ""


def _usage(span: Span) -> Usage | None:
    cached = span.cache_read_tokens + span.cache_creation_tokens
    usage = Usage.of(
        input_tokens=span.input_tokens,
        output_tokens=span.output_tokens,
        cache_read=span.cache_read_tokens,
        cache_creation=span.cache_creation_tokens,
        cost_usd=span.cost_usd or None,
        # GenAI's input tokens include cached ones; instrumentors that copy Anthropic's usage
        # (input_tokens without the cache) report fewer input tokens than cached ones
        input_includes_cache=span.input_tokens >= cached,
    )
    return None if usage.empty else usage


def _contract(span: Span) -> dict[str, Any]:
    allowed = json_value(span.attr(sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS))
    if isinstance(allowed, str):
        allowed = allowed.split()
    return {
        "span_id": span.span_id,
        "trace_id": span.trace_id,
        "parent_span_id": span.parent_span_id,
        "skill_name": span.skill_name or span.attr(sc.GEN_AI_SKILL_NAME),
        "trigger": span.attr(sc.SKILLSIGHT_ACTIVATION_TRIGGER),
        "call_id": span.attr(sc.SKILLSIGHT_ACTIVATION_CALL_ID),
        "input": span.attr(sc.SKILLSIGHT_ACTIVATION_INPUT),
        "description": span.attr(sc.GEN_AI_SKILL_DESCRIPTION),
        "version": span.attr(sc.GEN_AI_SKILL_VERSION),
        "source_uri": span.attr(sc.GEN_AI_SKILL_SOURCE_URI),
        "allowed_tools": allowed if isinstance(allowed, list) else None,
        "start_ns": span.start_ns,
        "end_ns": span.end_ns,
        "is_error": span.failed,
        "cost_usd": span.cost_usd,
    }


def _skills(raw: str) -> list[dict[str, str]]:
    value = json_value(raw)
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if isinstance(item, dict) and item.get("name"):
            out.append({"name": str(item["name"]), "description": str(item.get("description", ""))})
        elif isinstance(item, str):
            out.append({"name": item, "description": ""})
    return out


class _Reader:
    def __init__(self, spans: list[Span], session_id: str) -> None:
        self.spans = spans
        self.session_id = session_id
        self.by_id = {s.span_id: s for s in spans}

    def ancestors(self, span: Span) -> list[Span]:
        chain: list[Span] = []
        seen = {span.span_id}
        current = self.by_id.get(span.parent_span_id)
        while current is not None and current.span_id not in seen:
            chain.append(current)
            seen.add(current.span_id)
            current = self.by_id.get(current.parent_span_id)
        return chain

    def context_of(self, span: Span) -> str:
        """Span id of the agent span a span belongs to ('' when none)."""
        for ancestor in self.ancestors(span):
            if ancestor.operation == sc.OP_INVOKE_AGENT:
                return ancestor.span_id
        return ""

    def activation_of(self, span: Span) -> str:
        for ancestor in self.ancestors(span):
            if _is_activation(ancestor):
                return ancestor.span_id
            if ancestor.operation == sc.OP_INVOKE_AGENT:
                return ""
        return ""

    def read(self) -> AgentDraft:
        agents = [s for s in self.spans if s.operation == sc.OP_INVOKE_AGENT]
        contexts: dict[str, AgentDraft] = {}
        root = AgentDraft(session_id=self.session_id, trajectory_id=self.session_id, source=SOURCE)
        contexts[""] = root
        for agent in agents:
            if self.context_of(agent) == "":
                contexts[agent.span_id] = root  # top-level agent spans: the session's turns
            else:
                contexts[agent.span_id] = AgentDraft(
                    session_id=self.session_id,
                    trajectory_id=f"{self.session_id}/{agent.span_id}",
                    source=SOURCE,
                )
            self._agent(contexts[agent.span_id], agent)
        calls_by_span: dict[str, CallDraft] = {}
        for span in self.spans:
            draft = contexts.get(self.context_of(span), root)
            if span.trace_id and span.trace_id not in draft.trace_ids:
                draft.trace_ids.append(span.trace_id)
            if _is_activation(span):
                draft.activation_spans.append(_contract(span))
            elif span.operation == sc.OP_CHAT:
                self._chat(draft, span)
            elif span.operation == sc.OP_EXECUTE_TOOL:
                calls_by_span[span.span_id] = self._tool(draft, span)
        for agent in agents:
            sub = contexts[agent.span_id]
            if sub is root:
                continue
            owner = next(
                (
                    calls_by_span[a.span_id]
                    for a in self.ancestors(agent)
                    if a.span_id in calls_by_span
                ),
                None,
            )
            if owner is not None:
                owner.subagent = sub
                sub.extra["parent_tool_call_id"] = owner.call_id
                prompt = (owner.arguments or {}).get("prompt")
                if isinstance(prompt, str) and not any(x.source == "user" for x in sub.steps):
                    # the task the subagent was given, when its own span did not record it
                    sub.steps.insert(
                        0, StepDraft(source="user", time_ns=agent.start_ns, message=prompt)
                    )
            else:
                root.steps += sub.steps  # an agent span with no delegating call: same context
        for draft in {id(d): d for d in contexts.values()}.values():
            draft.steps.sort(key=lambda s: (s.time_ns, 0 if s.source == "user" else 1))
            self._final_answers(draft)
        return root

    def _agent(self, draft: AgentDraft, span: Span) -> None:
        draft.name = draft.name or span.agent or span.name.removeprefix("invoke_agent ").strip()
        draft.version = draft.version or span.resource.get("service.version", "")
        draft.model = draft.model or span.model
        draft.visible_skills += _skills(span.attr(sc.SKILLSIGHT_SKILLS_AVAILABLE))
        request = message_text(span.attr(sc.GEN_AI_INPUT_MESSAGES), "user")
        if request:
            step = StepDraft(source="user", time_ns=span.start_ns, message=request)
            step.span_id = span.span_id
            draft.steps.append(step)
        answer = message_text(span.attr(sc.GEN_AI_OUTPUT_MESSAGES), "assistant")
        if answer:
            draft.extra.setdefault("_answers", []).append((span.end_ns, span.span_id, answer))
        usage = _usage(span)
        if usage is not None:
            total = draft.extra.setdefault("total_usage", Usage())
            total.add(usage)

    def _chat(self, draft: AgentDraft, span: Span) -> None:
        if not draft.visible_skills:
            # Claude Code lists the skills in a system message the model receives
            shown = visible_skills(message_text(span.attr(sc.GEN_AI_INPUT_MESSAGES), "system"))
            draft.visible_skills += shown
        text = message_text(span.attr(sc.GEN_AI_OUTPUT_MESSAGES), "assistant")
        step = StepDraft(
            source="agent",
            time_ns=span.start_ns,
            end_ns=span.end_ns,
            message=text,
            model=span.model,
            usage=_usage(span),
            llm_calls=1,
            span_id=span.span_id,
        )
        finish = json_value(span.attr(sc.GEN_AI_RESPONSE_FINISH_REASONS))
        if isinstance(finish, list) and finish:
            step.extra["stop_reason"] = str(finish[0])
        activation = self.activation_of(span)
        if activation:
            step.extra["activation_span_id"] = activation
        draft.steps.append(step)

    def _tool(self, draft: AgentDraft, span: Span) -> CallDraft:
        call = CallDraft(span.tool_call_id or span.span_id, span.tool_name)
        raw_arguments = span.attr(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
        call.arguments = json_object(raw_arguments)
        if call.arguments is None and raw_arguments:
            call.arguments = {"input": raw_arguments}
        result = span.attr(sc.GEN_AI_TOOL_CALL_RESULT)
        call.result = result if result or sc.GEN_AI_TOOL_CALL_RESULT in span.attributes else None
        call.is_error = span.failed
        if span.failed and span.status_message:
            call.extra["error"] = span.status_message
        call.start_ns, call.end_ns = span.start_ns, span.end_ns
        call.span_id, call.trace_id = span.span_id, span.trace_id
        call.sources.append(SOURCE)
        if span.skill_name:
            call.extra["skill"] = span.skill_name
        activation = self.activation_of(span)
        if activation:
            call.extra["activation_span_id"] = activation
        owner = None
        for step in draft.steps:
            if step.source == "agent" and step.llm_calls and step.time_ns <= span.start_ns:
                owner = step
        if owner is not None:
            owner.calls.append(call)
            owner.calls.sort(key=lambda c: (c.start_ns, c.call_id))
        else:
            draft.extra.setdefault("_loose", []).append(call)
        return call

    @staticmethod
    def _final_answers(draft: AgentDraft) -> None:
        for call in sorted(draft.extra.pop("_loose", []), key=lambda c: (c.start_ns, c.call_id)):
            position = len([s for s in draft.steps if s.time_ns <= call.start_ns])
            head, tail = draft.steps[:position], draft.steps[position:]
            attach_call(head, call)
            draft.steps = head + tail
        for end_ns, span_id, answer in sorted(draft.extra.pop("_answers", [])):
            if not any(s.source == "agent" and s.message == answer for s in draft.steps):
                step = StepDraft(source="agent", time_ns=end_ns, message=answer)
                step.extra["from_agent_span"] = span_id
                draft.steps.append(step)
        draft.steps.sort(key=lambda s: (s.time_ns, 0 if s.source == "user" else 1))


def read(spans: list[Span], session_id: str) -> AgentDraft:
    return _Reader(spans, session_id).read()
