"""The span tree of one Claude Agent SDK session, and the operations that grow and prune it.

The main agent and each subagent is an :class:`AgentContext`: its span, the skill activation open
in it, the model call (:class:`Chat`) being answered. Tool spans hang under the open activation,
or under the agent when none is; a subagent's span under the tool call that started it. Hooks
(:mod:`._claude_session`) and messages (:mod:`._claude_messages`) both drive these operations.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from skillsight import semconv as sc
from skillsight.instrumentation._skillinfo import SkillResolver, skill_md_name
from skillsight.instrumentation._spans import SkillInfo, SpanEmitter, Usage

__all__ = ["AgentContext", "Chat", "ClaudeSpanTree", "now"]

SKILL_TOOL = "Skill"
READ_TOOL = "Read"
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})


def now() -> int:
    """The time of an event, in nanoseconds since the epoch."""
    return time.time_ns()


@dataclass
class _Activation:
    span: Span
    context: Context
    skill: SkillInfo
    call_id: str


@dataclass
class Chat:
    """One model call of an agent context: its span and the answer's blocks so far."""

    message_id: str | None
    span: Span
    model: str | None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    usage: Mapping[str, Any] | None = None
    stop_reason: str | None = None


@dataclass
class AgentContext:
    """The main agent or one subagent: its span, its current activation and model call."""

    span: Span
    context: Context
    last_event_ns: int
    agent_id: str | None = None
    task_call_id: str | None = None
    prompt: str | None = None
    activation: _Activation | None = None
    chat: Chat | None = None


@dataclass
class _Tool:
    span: Span
    owner: AgentContext
    name: str
    subagent_type: str | None = None
    prompt: str | None = None
    """A subagent call's prompt: the input of the activations inside that subagent."""
    subagent: AgentContext | None = None


class ClaudeSpanTree:
    """The spans of one session: the main agent, its subagents, their tools and activations."""

    def __init__(self, emitter: SpanEmitter, resolver: SkillResolver, agent_span: Span) -> None:
        self._emitter = emitter
        self._resolver = resolver
        self.main = AgentContext(
            span=agent_span, context=trace.set_span_in_context(agent_span), last_event_ns=now()
        )
        self._subagents: dict[str, AgentContext] = {}
        self._by_task_call: dict[str, AgentContext] = {}
        self._tools: dict[str, _Tool] = {}
        self._done_tools: set[str] = set()
        self._conversation_id: str | None = None

    # --- tools and activations ------------------------------------------------------------------

    def _owner(self, agent_id: Any) -> AgentContext:
        if isinstance(agent_id, str) and agent_id in self._subagents:
            return self._subagents[agent_id]
        return self.main

    def _parent_of_tools(self, owner: AgentContext) -> Context:
        return owner.activation.context if owner.activation is not None else owner.context

    def _tool_started(
        self,
        owner: AgentContext,
        name: str,
        call_id: str,
        arguments: Mapping[str, Any],
        start_time: int | None = None,
    ) -> None:
        if call_id in self._tools or call_id in self._done_tools:
            return
        owner.last_event_ns = start_time or now()
        self._close_chat(owner)
        if name == SKILL_TOOL:
            skill = str(arguments.get("skill") or arguments.get("command") or "").lstrip("/")
            if skill:
                self._start_activation(
                    owner,
                    self._resolver.by_name(skill),
                    sc.TRIGGER_SKILL_TOOL,
                    call_id,
                    arguments.get("args") or owner.prompt,
                    start_time,
                )
        elif name == READ_TOOL:
            path = str(arguments.get("file_path") or "")
            read_skill = skill_md_name(path)
            active = owner.activation.skill.name if owner.activation is not None else None
            if read_skill and read_skill != active:
                self._start_activation(
                    owner,
                    self._resolver.by_dir(Path(path).parent, read_skill),
                    sc.TRIGGER_READ_SKILL_MD,
                    call_id,
                    owner.prompt,
                    start_time,
                )
        span = self._emitter.start_tool(
            name,
            call_id=call_id,
            arguments=dict(arguments),
            parent=self._parent_of_tools(owner),
            start_time=start_time,
        )
        tool = _Tool(span=span, owner=owner, name=name)
        if name in SUBAGENT_TOOLS:
            tool.subagent_type = str(arguments.get("subagent_type") or "") or None
            prompt = arguments.get("prompt")
            tool.prompt = prompt if isinstance(prompt, str) else None
        self._tools[call_id] = tool

    def _start_activation(
        self,
        owner: AgentContext,
        skill: SkillInfo,
        trigger: str,
        call_id: str,
        activation_input: Any,
        start_time: int | None,
    ) -> None:
        self._end_activation(owner, start_time)
        span = self._emitter.start_activation(
            skill,
            trigger=trigger,
            input=activation_input,
            call_id=call_id,
            parent=owner.context,
            start_time=start_time,
        )
        owner.activation = _Activation(
            span=span, context=trace.set_span_in_context(span), skill=skill, call_id=call_id
        )

    def _end_activation(self, owner: AgentContext, end_time: int | None = None) -> None:
        if owner.activation is not None:
            owner.activation.span.end(end_time=end_time)
            owner.activation = None

    def _tool_finished(
        self,
        call_id: str,
        *,
        result: Any = None,
        error: str | None = None,
        end_time: int | None = None,
    ) -> None:
        tool = self._tools.pop(call_id, None)
        if tool is None:
            return
        self._done_tools.add(call_id)
        tool.owner.last_event_ns = end_time or now()
        if tool.subagent is not None:
            self._finish_subagent(tool.subagent, None, end_time)
        activation = tool.owner.activation
        if error is not None and activation is not None and activation.call_id == call_id:
            # The call that was to load the skill failed: the activation failed with it.
            activation.span.set_status(Status(StatusCode.ERROR, "the skill failed to load"))
        self._emitter.finish_tool(tool.span, result=result, error=error, end_time=end_time)

    # --- subagents --------------------------------------------------------------------------

    def _subagent_started(self, agent_id: str, agent_type: str) -> None:
        if not agent_id or agent_id in self._subagents:
            return
        waiting = [
            t for t in self._tools.values() if t.name in SUBAGENT_TOOLS and t.subagent is None
        ]
        task = next((t for t in waiting if t.subagent_type == agent_type), None) or next(
            iter(waiting), None
        )
        parent = trace.set_span_in_context(task.span) if task is not None else self.main.context
        span = self._emitter.start_agent(
            agent_type or "subagent",
            parent=parent,
            agent_id=agent_id,
            provider=sc.PROVIDER_ANTHROPIC,
        )
        if self._conversation_id is not None:
            span.set_attribute(sc.GEN_AI_CONVERSATION_ID, self._conversation_id)
        sub = AgentContext(
            span=span,
            context=trace.set_span_in_context(span),
            last_event_ns=now(),
            agent_id=agent_id,
        )
        if task is not None:
            task.subagent = sub
            call_id = next(k for k, v in self._tools.items() if v is task)
            sub.task_call_id = call_id
            self._by_task_call[call_id] = sub
            sub.prompt = task.prompt
        self._subagents[agent_id] = sub

    def _subagent_stopped(self, agent_id: str, last_message: Any) -> None:
        sub = self._subagents.get(agent_id)
        if sub is not None:
            self._finish_subagent(sub, last_message, None)

    def _finish_subagent(self, sub: AgentContext, output: Any, end_time: int | None) -> None:
        if sub.agent_id is None or self._subagents.pop(sub.agent_id, None) is None:
            return
        self._end_turn(sub, end_time)
        for call_id, tool in list(self._tools.items()):
            if tool.owner is sub:
                self._tool_finished(call_id, error="the subagent ended first", end_time=end_time)
        self._emitter.set_run_result(sub.span, output=output)
        sub.span.end(end_time=end_time)

    def _end_turn(self, owner: AgentContext, end_time: int | None = None) -> None:
        self._close_chat(owner, end_time)
        self._end_activation(owner, end_time)

    # --- model calls ---------------------------------------------------------------------------

    def _close_chat(self, owner: AgentContext, end_time: int | None = None) -> None:
        chat = owner.chat
        if chat is None:
            return
        owner.chat = None
        has_tools = any(b["type"] == "tool_use" for b in chat.blocks)
        finish = chat.stop_reason or ("tool_use" if has_tools else "end_turn")
        self._emitter.set_chat_result(
            chat.span,
            usage=Usage.from_anthropic(chat.usage),
            finish_reason=finish,
            output=[{"role": "assistant", "content": chat.blocks}] if chat.blocks else None,
        )
        chat.span.end(end_time=end_time)
