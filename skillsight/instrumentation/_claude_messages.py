"""The message stream of one Claude Agent SDK session, read into its span tree.

Messages reach us only when the caller consumes them, possibly late: they carry what hooks do
not (the visible skills, per-call usage, the result's cost) and are used for that, plus tool
calls no hook reported (which then get their spans after the fact) and the folder of a skill
that discovery could not find (announced in the skill's body).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from skillsight import semconv as sc
from skillsight.instrumentation._claude_tree import AgentContext, Chat, ClaudeSpanTree, now
from skillsight.instrumentation._skillinfo import SkillResolver
from skillsight.instrumentation._spans import SpanEmitter, Usage

__all__ = ["ClaudeMessageReader"]

_BASE_DIRECTORY = re.compile(r"^Base directory for this skill: (.+)$", re.MULTILINE)


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else json.dumps(content, default=str)


class ClaudeMessageReader(ClaudeSpanTree):
    """A session's span tree, with what its messages say applied to it."""

    def __init__(
        self,
        emitter: SpanEmitter,
        resolver: SkillResolver,
        agent_span: Span,
        skills_allowlist: list[str] | None,
    ) -> None:
        super().__init__(emitter, resolver, agent_span)
        self._skills_allowlist = skills_allowlist
        self._unhooked: dict[str, tuple[AgentContext, str, dict[str, Any], int]] = {}
        self._usage_total: dict[str, int] = {}

    def _read_message(self, message: Any) -> None:
        kind = type(message).__name__
        if kind == "SystemMessage":
            self._on_system(message)
        elif kind == "AssistantMessage":
            self._on_assistant(message)
        elif kind == "UserMessage":
            self._on_user(message)
        elif kind == "ResultMessage":
            self._on_result(message)

    def _context_of(self, parent_tool_use_id: str | None) -> AgentContext:
        if parent_tool_use_id and parent_tool_use_id in self._by_task_call:
            return self._by_task_call[parent_tool_use_id]
        return self.main

    def _on_system(self, message: Any) -> None:
        if getattr(message, "subtype", None) != "init":
            return
        data: Mapping[str, Any] = getattr(message, "data", None) or {}
        span = self.main.span
        session_id = data.get("session_id")
        if isinstance(session_id, str) and session_id:
            self._conversation_id = session_id
            span.set_attribute(sc.GEN_AI_CONVERSATION_ID, session_id)
        model = data.get("model")
        if isinstance(model, str) and model:
            span.set_attribute(sc.GEN_AI_REQUEST_MODEL, model)
        listed = [str(s) for s in data.get("skills") or [] if isinstance(s, str)]
        if self._skills_allowlist is not None:
            visible = [s for s in self._skills_allowlist if not listed or s in listed]
        else:
            visible = listed
        self._emitter.set_skills_available(
            span, [(name, self._resolver.description(name)) for name in visible]
        )

    def _on_assistant(self, message: Any) -> None:
        owner = self._context_of(getattr(message, "parent_tool_use_id", None))
        message_id = getattr(message, "message_id", None)
        if owner.chat is not None and (message_id is None or owner.chat.message_id != message_id):
            self._close_chat(owner)
        if owner.chat is None:
            model = getattr(message, "model", None)
            span = self._emitter.start_chat(
                model,
                parent=owner.context,
                provider=sc.PROVIDER_ANTHROPIC,
                start_time=owner.last_event_ns,
            )
            owner.chat = Chat(message_id=message_id, span=span, model=model)
        chat = owner.chat
        chat.usage = getattr(message, "usage", None) or chat.usage
        chat.stop_reason = getattr(message, "stop_reason", None) or chat.stop_reason
        now_ns = now()
        for block in getattr(message, "content", None) or []:
            block_kind = type(block).__name__
            if block_kind == "TextBlock":
                chat.blocks.append({"type": "text", "text": block.text})
            elif block_kind == "ToolUseBlock":
                chat.blocks.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
                if block.id not in self._tools and block.id not in self._done_tools:
                    # No hook has reported this call (yet): remember it, so a result without
                    # any hook still gets its span.
                    self._unhooked[block.id] = (owner, block.name, dict(block.input), now_ns)
        if getattr(message, "error", None):
            chat.span.set_status(Status(StatusCode.ERROR, str(message.error)))

    def _on_user(self, message: Any) -> None:
        owner = self._context_of(getattr(message, "parent_tool_use_id", None))
        self._close_chat(owner)
        content = getattr(message, "content", None)
        if isinstance(content, str) or not content:
            return
        for block in content:
            block_kind = type(block).__name__
            if block_kind == "ToolResultBlock":
                self._on_tool_result(owner, block)
            elif block_kind == "TextBlock":
                self._on_skill_body(owner, str(block.text))

    def _on_tool_result(self, owner: AgentContext, block: Any) -> None:
        call_id = str(block.tool_use_id)
        text = _block_text(block.content)
        error = (text or "tool error") if block.is_error else None
        unhooked = self._unhooked.pop(call_id, None)
        if call_id not in self._tools and call_id not in self._done_tools and unhooked:
            tool_owner, name, arguments, started = unhooked
            self._tool_started(tool_owner, name, call_id, arguments, start_time=started)
        if call_id in self._tools:
            # The CLI answered the call without a PostToolUse hook (denied, interrupted...).
            self._tool_finished(call_id, result=None if error else text, error=error)

    def _on_skill_body(self, owner: AgentContext, text: str) -> None:
        # The CLI follows a Skill call with the skill's body, headed by its folder: the one
        # certain location of skills that discovery could not find (plugins, odd layouts).
        activation = owner.activation
        match = _BASE_DIRECTORY.search(text)
        if activation is None or match is None or activation.skill.version is not None:
            return
        skill = self._resolver.by_dir(match.group(1).strip(), activation.skill.name)
        activation.skill = skill
        self._emitter.set_skill(activation.span, skill)

    def _on_result(self, message: Any) -> None:
        for sub in list(self._subagents.values()):
            self._finish_subagent(sub, None, None)
        self._end_turn(self.main)
        for call_id in list(self._tools):
            self._tool_finished(call_id, error="the turn ended before the tool finished")
        usage = getattr(message, "usage", None) or {}
        for key, value in Usage.from_anthropic(usage).attributes().items():
            self._usage_total[key] = self._usage_total.get(key, 0) + value
        span = self.main.span
        span.set_attributes(self._usage_total)
        model_usage = getattr(message, "model_usage", None)
        if model_usage:
            span.set_attribute(sc.SKILLSIGHT_MODEL_USAGE, json.dumps(model_usage, default=str))
        is_error = bool(getattr(message, "is_error", False))
        self._emitter.set_run_result(
            span,
            cost_usd=getattr(message, "total_cost_usd", None),
            output=getattr(message, "result", None),
            error=(getattr(message, "subtype", None) or "error") if is_error else None,
        )
