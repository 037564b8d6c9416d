"""One OpenAI Agents SDK trace, turned into skillsight's spans as the SDK reports its own.

The SDK reports spans as they start and end (``task`` → ``agent`` → ``turn`` → ``response`` /
``generation`` / ``function`` / ``handoff``…), each with its start and end time and its parent.
Each is mapped when the SDK reports it, with the SDK's own timestamps:

- ``agent`` → ``invoke_agent {name}``; a later top-level agent of the same run (the target of
  a handoff) nests under the run's first one, so one run stays one OpenTelemetry trace (each
  ``Runner.run`` in one SDK trace is a trace of its own, with the same conversation id);
- ``response`` / ``generation`` → ``chat {model}`` under its agent, with usage and messages;
- ``function`` → ``execute_tool {name}``, its call id taken from the model output that asked
  for it;
- ``task`` and ``turn`` are structure only: their children go to the nearest mapped ancestor;
- ``handoff``, ``custom``, ``guardrail`` and the rest are kept under their own names.

**Skill activations**: a ``load_skill`` call, or a tool call whose arguments name a
``…/skills/<name>/SKILL.md`` (a file read, ``cat`` in a sandbox shell), opens
``activate_skill {name}`` under the agent. Every tool span of that agent is its child until the
next activation, a handoff, the agent's final output (a model answer asking for no tool), or
the end of the agent; the starting call is its first child. All state lives on
:class:`TraceMapper`, one per trace: its span tree (:mod:`._openai_agents_nodes`) and its skills
(:mod:`._openai_agents_skills`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from skillsight import semconv as sc
from skillsight.instrumentation._openai_agents_data import (
    SdkSpan,
    error_text,
    iso_to_ns,
    json_object,
    model_output,
    output_content,
    plain_list,
    user_text,
)
from skillsight.instrumentation._openai_agents_nodes import (
    Agent,
    Node,
    agent_context,
    task_of,
    work_context,
)
from skillsight.instrumentation._openai_agents_skills import SkillSettings, TraceSkills
from skillsight.instrumentation._spans import SpanEmitter, Usage

__all__ = ["SkillSettings", "TraceMapper"]


class TraceMapper:
    """Maps the spans of one SDK trace; not thread-safe on its own (the processor locks)."""

    def __init__(
        self,
        emitter: SpanEmitter,
        settings: SkillSettings,
        conversation_id: str | None,
        now: Callable[[], int],
    ) -> None:
        self._emitter = emitter
        self._conversation_id = conversation_id
        self._now = now
        self._nodes: dict[str, Node] = {}
        # The first top-level agent of each run (task span): a handoff target nests under it.
        self._first_agents: dict[int, Agent] = {}
        self._skills = TraceSkills(emitter, settings)

    # --- SDK events ---------------------------------------------------------------------------

    def span_started(self, span: SdkSpan) -> None:
        data = span.span_data
        kind = str(getattr(data, "type", "custom"))
        parent = self._nodes.get(span.parent_id) if span.parent_id else None
        agent = parent.agent if parent is not None else None
        start = iso_to_ns(span.started_at)
        node: Node
        if kind == "agent":
            node = self._start_agent(data, parent, start)
        elif kind in ("task", "turn"):
            node = Node(kind, None, agent, parent)
        elif kind in ("response", "generation"):
            chat = self._emitter.start_chat(
                getattr(data, "model", None),
                parent=agent_context(parent),
                provider=sc.PROVIDER_OPENAI,
                start_time=start,
            )
            node = Node(kind, chat, agent, parent)
        elif kind == "function":
            node = self._start_tool(data, parent, agent, start)
        else:
            if kind == "handoff" and agent is not None:
                agent.end_activation(start)
            node = Node(kind, self._start_kept(span, kind, parent, start), agent, parent)
        self._nodes[span.span_id] = node

    def span_ended(self, span: SdkSpan) -> None:
        node = self._nodes.get(span.span_id)
        if node is None or node.span is None:
            return
        end = iso_to_ns(span.ended_at)
        error = error_text(span)
        data = span.span_data
        if node.is_agent and node.agent is not None:
            self._finish_agent(node.agent, data, error, end)
        elif node.kind in ("response", "generation"):
            self._finish_chat(node, data, error, end)
        elif node.kind == "function":
            if not node.arguments_known:
                self._late_arguments(node, data)
            self._emitter.finish_tool(
                node.span, result=getattr(data, "output", None), error=error, end_time=end
            )
        else:
            export = data.export() if callable(getattr(data, "export", None)) else None
            if node.kind == "handoff" and getattr(data, "to_agent", None):
                node.span.update_name(f"handoff {data.to_agent}")  # known only at the end
            self._emitter.set_content(node.span, sc.SKILLSIGHT_SOURCE_SPAN_DATA, export)
            if error is not None:
                node.span.set_status(Status(StatusCode.ERROR, error))
            node.span.end(end_time=end)

    def close(self) -> None:
        """End whatever the SDK left open (a trace cut short), now."""
        now = self._now()
        for node in self._nodes.values():
            if node.agent is not None:
                node.agent.end_activation(now)
            if node.span is not None and node.span.is_recording():
                node.span.end(end_time=now)
        self._nodes.clear()

    # --- agents --------------------------------------------------------------------------------

    def _start_agent(self, data: Any, parent: Node | None, start: int | None) -> Node:
        owner = parent.agent if parent is not None else None
        run = id(task_of(parent))
        first = self._first_agents.get(run) if owner is None else None
        if first is not None:
            parent_context: Context | None = first.context
        else:
            parent_context = work_context(parent)
        name = str(getattr(data, "name", "") or "agent")
        span = self._emitter.start_agent(
            name,
            parent=parent_context,
            conversation_id=self._conversation_id,
            provider=sc.PROVIDER_OPENAI,
            start_time=start,
        )
        skills = self._skills.visible()
        if skills:
            self._emitter.set_skills_available(span, skills)
        agent = Agent(span=span, context=trace.set_span_in_context(span), name=name)
        if owner is None:
            self._first_agents.setdefault(run, agent)
        return Node("agent", span, agent, parent, is_agent=True)

    def _finish_agent(self, agent: Agent, data: Any, error: str | None, end: int | None) -> None:
        agent.end_activation(agent.final_ns or end)
        tools = getattr(data, "tools", None)
        if tools is not None:
            agent.span.set_attribute(sc.SKILLSIGHT_AGENT_TOOLS, json.dumps(list(tools)))
        handoffs = getattr(data, "handoffs", None)
        if handoffs:
            agent.span.set_attribute(sc.SKILLSIGHT_AGENT_HANDOFFS, json.dumps(list(handoffs)))
        usage = Usage(
            input_tokens=agent.input_tokens,
            output_tokens=agent.output_tokens,
            cache_read_input_tokens=agent.cache_read_tokens,
        )
        self._emitter.set_run_result(
            agent.span, usage=usage, output=agent.final_output, error=error
        )
        agent.span.end(end_time=end)

    # --- model calls -------------------------------------------------------------------------

    def _finish_chat(self, node: Node, data: Any, error: str | None, end: int | None) -> None:
        span = node.span
        assert span is not None  # only nodes with a span reach here
        out = model_output(data)
        if out.model and not getattr(data, "model", None):
            # The Responses API names its model only in the answer.
            span.update_name(f"{sc.OP_CHAT} {out.model}")
            span.set_attribute(sc.GEN_AI_REQUEST_MODEL, out.model)
            span.set_attribute(sc.GEN_AI_RESPONSE_MODEL, out.model)
        finish = None
        if out.known:
            finish = "tool_calls" if out.asks_for_tools else "stop"
        model_input = getattr(data, "input", None)
        self._emitter.set_chat_result(
            span,
            usage=out.usage,
            finish_reason=finish,
            input=plain_list(model_input),
            output=output_content(data),
        )
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=end)
        agent = node.agent
        if agent is None:
            return
        if out.usage is not None:
            agent.input_tokens += out.usage.input_tokens or 0
            agent.output_tokens += out.usage.output_tokens or 0
            agent.cache_read_tokens += out.usage.cache_read_input_tokens or 0
        prompt = user_text(model_input)
        if prompt and agent.prompt is None:
            agent.prompt = prompt
            self._emitter.set_content(agent.span, sc.GEN_AI_INPUT_MESSAGES, prompt)
        # The SDK runs the calls of one answer before asking the model again: older ones are stale.
        agent.calls = list(out.calls)
        if out.known and not out.asks_for_tools and error is None:
            agent.final_output = out.text
            agent.final_ns = end
            agent.end_activation(end)

    # --- tools ---------------------------------------------------------------------------------

    def _start_tool(
        self, data: Any, parent: Node | None, agent: Agent | None, start: int | None
    ) -> Node:
        # The SDK fills a function span's input only after starting it, so the arguments come
        # from the model output that asked for the call (matched by name, in order).
        name = str(getattr(data, "name", "") or "tool")
        call = agent.take_call(name) if agent is not None else None
        arguments = call.arguments if call is not None else json_object(data.input)
        if agent is not None and arguments is not None:
            skill = self._skills.activated_skill(agent, name, arguments)
            if skill is not None:
                self._skills.start_activation(
                    agent, skill[0], skill[1], start, call.call_id if call else None
                )
        span = self._emitter.start_tool(
            name,
            call_id=call.call_id or None if call is not None else None,
            arguments=arguments,
            parent=work_context(parent),
            start_time=start,
        )
        return Node(
            "function", span, agent, parent, start_ns=start, arguments_known=arguments is not None
        )

    def _late_arguments(self, node: Node, data: Any) -> None:
        """Arguments seen only at the end (no model output visible): record, maybe activate."""
        assert node.span is not None  # only nodes with a span reach here
        raw = getattr(data, "input", None)
        arguments = json_object(raw)
        self._emitter.set_content(
            node.span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments if arguments is not None else raw
        )
        if node.agent is not None and arguments is not None:
            name = str(getattr(data, "name", "") or "tool")
            skill = self._skills.activated_skill(node.agent, name, arguments)
            if skill is not None:
                self._skills.start_activation(node.agent, skill[0], skill[1], node.start_ns, None)

    # --- kept spans ------------------------------------------------------------------------

    def _start_kept(self, span: SdkSpan, kind: str, parent: Node | None, start: int | None) -> Span:
        data = span.span_data
        if kind == "handoff":
            title = f"handoff {getattr(data, 'to_agent', None) or ''}".strip()
            context = agent_context(parent)
        else:
            label = getattr(data, "name", None) or getattr(data, "server", None)
            title = str(label) if kind == "custom" and label else f"{kind} {label or ''}".strip()
            context = work_context(parent)
        kept = self._emitter.tracer.start_span(title, context=context, start_time=start)
        kept.set_attribute(sc.SKILLSIGHT_SOURCE_SPAN_TYPE, kind)
        return kept
