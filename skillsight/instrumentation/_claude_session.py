"""One Claude Agent SDK session seen through its hooks and its message stream, turned into spans.

Two sources, read for what each does best:

- **hooks** (PreToolUse, PostToolUse, PostToolUseFailure, SubagentStart/Stop, Stop,
  UserPromptSubmit) run while the CLI waits for them, so they arrive in execution order and on
  time: tool spans, skill activations and subagents are built from them;
- **messages** reach us only when the caller consumes them, possibly late: they carry what hooks
  do not (the visible skills, per-call usage, the result's cost) and are used for that, plus
  tool calls no hook reported (which then get their spans after the fact).

An activation starts at a ``Skill`` call (or a ``Read`` of ``…/skills/<name>/SKILL.md``) and lasts
until the next activation of the same agent context, the end of the turn (Stop hook or result
message) or the end of the subagent it runs in. Every tool span of that context meanwhile is its
child, the starting call first. All state lives on the :class:`ClaudeSession` object.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from skillsight import semconv as sc
from skillsight.instrumentation._guard import guard
from skillsight.instrumentation._skillinfo import SkillCache, SkillResolver, skill_md_name
from skillsight.instrumentation._spans import SkillInfo, SpanEmitter, Usage

if TYPE_CHECKING:
    from claude_agent_sdk import HookContext, HookInput, HookJSONOutput

__all__ = ["ClaudeSession"]

SKILL_TOOL = "Skill"
READ_TOOL = "Read"
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "UserPromptSubmit",
)
_BASE_DIRECTORY = re.compile(r"^Base directory for this skill: (.+)$", re.MULTILINE)


def _now() -> int:
    return time.time_ns()


@dataclass
class _Activation:
    span: Span
    context: Context
    skill: SkillInfo
    call_id: str


@dataclass
class _Chat:
    message_id: str | None
    span: Span
    model: str | None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    usage: Mapping[str, Any] | None = None
    stop_reason: str | None = None


@dataclass
class _AgentContext:
    """The main agent or one subagent: its span, its current activation and model call."""

    span: Span
    context: Context
    last_event_ns: int
    agent_id: str | None = None
    task_call_id: str | None = None
    prompt: str | None = None
    activation: _Activation | None = None
    chat: _Chat | None = None


@dataclass
class _Tool:
    span: Span
    owner: _AgentContext
    name: str
    subagent_type: str | None = None
    prompt: str | None = None
    """A subagent call's prompt: the input of the activations inside that subagent."""
    subagent: _AgentContext | None = None


def _tool_result_text(response: Any) -> Any:
    """A tool's output as the agent saw it: shell output as text, anything else as is."""
    if isinstance(response, Mapping) and "stdout" in response:
        stdout = str(response.get("stdout") or "")
        stderr = str(response.get("stderr") or "")
        return f"{stdout}\n{stderr}" if stderr else stdout
    return response


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else json.dumps(content, default=str)


class ClaudeSession:
    """Spans of one ``query()`` run or one ``ClaudeSDKClient`` connection."""

    def __init__(
        self,
        emitter: SpanEmitter,
        *,
        agent_name: str,
        cwd: str | None,
        model: str | None = None,
        skills_allowlist: Sequence[str] | None = None,
        plugin_dirs: Sequence[str] = (),
        skill_cache: SkillCache | None = None,
    ) -> None:
        self._emitter = emitter
        self._lock = threading.RLock()
        self._resolver = SkillResolver(cwd or Path.cwd(), plugin_dirs, skill_cache)
        self._skills_allowlist = list(skills_allowlist) if skills_allowlist is not None else None
        span = emitter.start_agent(agent_name, provider=sc.PROVIDER_ANTHROPIC, model=model)
        self.main = _AgentContext(
            span=span, context=trace.set_span_in_context(span), last_event_ns=_now()
        )
        self._subagents: dict[str, _AgentContext] = {}
        self._by_task_call: dict[str, _AgentContext] = {}
        self._tools: dict[str, _Tool] = {}
        self._done_tools: set[str] = set()
        self._unhooked: dict[str, tuple[_AgentContext, str, dict[str, Any], int]] = {}
        self._usage_total: dict[str, int] = {}
        self._conversation_id: str | None = None
        self._ended = False

    @property
    def context(self) -> Context:
        """The agent span as an OpenTelemetry context (current while the CLI is spawned)."""
        return self.main.context

    # --- wiring ---------------------------------------------------------------------------

    def hooks(self, user_hooks: Mapping[str, Sequence[Any]] | None) -> dict[str, list[Any]]:
        """The user's hooks with this session's callbacks added after them, event by event."""
        from claude_agent_sdk import HookMatcher

        merged: dict[str, list[Any]] = {k: list(v) for k, v in (user_hooks or {}).items()}
        for event in HOOK_EVENTS:
            merged.setdefault(event, []).append(HookMatcher(matcher=None, hooks=[self._on_hook]))
        return merged

    def with_hooks(self, options: Any) -> Any:
        """A copy of ``ClaudeAgentOptions`` carrying this session's hooks beside the user's."""
        return dataclasses.replace(options, hooks=self.hooks(options.hooks))

    # --- hooks -----------------------------------------------------------------------------

    async def _on_hook(
        self, hook_input: HookInput, tool_use_id: str | None, hook_context: HookContext
    ) -> HookJSONOutput:
        # An instrumentation hook never decides anything: it always answers "no opinion".
        with guard("a Claude Agent SDK hook"), self._lock:
            self.handle_hook(dict(hook_input), tool_use_id)
        return {}

    def handle_hook(self, data: Mapping[str, Any], tool_use_id: str | None = None) -> None:
        """Apply one hook input (the dict the CLI sends) to the span tree."""
        if self._ended:
            return
        event = data.get("hook_event_name")
        call_id = str(data.get("tool_use_id") or tool_use_id or "")
        if event == "PreToolUse":
            self._tool_started(
                self._owner(data.get("agent_id")),
                str(data.get("tool_name") or "?"),
                call_id,
                data.get("tool_input") or {},
            )
        elif event == "PostToolUse":
            self._tool_finished(call_id, result=_tool_result_text(data.get("tool_response")))
        elif event == "PostToolUseFailure":
            self._tool_finished(call_id, error=str(data.get("error") or "tool failed"))
        elif event == "SubagentStart":
            self._subagent_started(
                str(data.get("agent_id") or ""), str(data.get("agent_type") or "")
            )
        elif event == "SubagentStop":
            self._subagent_stopped(
                str(data.get("agent_id") or ""), data.get("last_assistant_message")
            )
        elif event == "Stop":
            self._end_turn(self.main)
            self.main.last_event_ns = _now()
        elif event == "UserPromptSubmit":
            # The next model call answers this prompt: its span starts here.
            self.main.last_event_ns = _now()
            prompt = data.get("prompt")
            if isinstance(prompt, str):
                self.note_prompt(prompt)

    def note_prompt(self, prompt: str) -> None:
        """The user's latest request (the input of activations that do not name their own)."""
        with self._lock:
            if self.main.prompt is None and not self._ended:
                self._emitter.set_content(self.main.span, sc.GEN_AI_INPUT_MESSAGES, prompt)
            self.main.prompt = prompt

    def _owner(self, agent_id: Any) -> _AgentContext:
        if isinstance(agent_id, str) and agent_id in self._subagents:
            return self._subagents[agent_id]
        return self.main

    def _parent_of_tools(self, owner: _AgentContext) -> Context:
        return owner.activation.context if owner.activation is not None else owner.context

    def _tool_started(
        self,
        owner: _AgentContext,
        name: str,
        call_id: str,
        arguments: Mapping[str, Any],
        start_time: int | None = None,
    ) -> None:
        if call_id in self._tools or call_id in self._done_tools:
            return
        owner.last_event_ns = start_time or _now()
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
        owner: _AgentContext,
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

    def _end_activation(self, owner: _AgentContext, end_time: int | None = None) -> None:
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
        tool.owner.last_event_ns = end_time or _now()
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
        sub = _AgentContext(
            span=span,
            context=trace.set_span_in_context(span),
            last_event_ns=_now(),
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

    def _finish_subagent(self, sub: _AgentContext, output: Any, end_time: int | None) -> None:
        if sub.agent_id is None or self._subagents.pop(sub.agent_id, None) is None:
            return
        self._end_turn(sub, end_time)
        for call_id, tool in list(self._tools.items()):
            if tool.owner is sub:
                self._tool_finished(call_id, error="the subagent ended first", end_time=end_time)
        self._emitter.set_run_result(sub.span, output=output)
        sub.span.end(end_time=end_time)

    def _end_turn(self, owner: _AgentContext, end_time: int | None = None) -> None:
        self._close_chat(owner, end_time)
        self._end_activation(owner, end_time)

    # --- messages ----------------------------------------------------------------------------

    def handle_message(self, message: Any) -> None:
        """Apply one message of the SDK's stream."""
        with guard("reading a Claude Agent SDK message"), self._lock:
            if self._ended:
                return
            kind = type(message).__name__
            if kind == "SystemMessage":
                self._on_system(message)
            elif kind == "AssistantMessage":
                self._on_assistant(message)
            elif kind == "UserMessage":
                self._on_user(message)
            elif kind == "ResultMessage":
                self._on_result(message)

    def _context_of(self, parent_tool_use_id: str | None) -> _AgentContext:
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
            owner.chat = _Chat(message_id=message_id, span=span, model=model)
        chat = owner.chat
        chat.usage = getattr(message, "usage", None) or chat.usage
        chat.stop_reason = getattr(message, "stop_reason", None) or chat.stop_reason
        now = _now()
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
                    self._unhooked[block.id] = (owner, block.name, dict(block.input), now)
        if getattr(message, "error", None):
            chat.span.set_status(Status(StatusCode.ERROR, str(message.error)))

    def _close_chat(self, owner: _AgentContext, end_time: int | None = None) -> None:
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

    def _on_tool_result(self, owner: _AgentContext, block: Any) -> None:
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

    def _on_skill_body(self, owner: _AgentContext, text: str) -> None:
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

    # --- end -----------------------------------------------------------------------------------

    def end(self, error: BaseException | None = None) -> None:
        """Close every span still open; the session is over (idempotent)."""
        with guard("ending a Claude Agent SDK session"), self._lock:
            if self._ended:
                return
            for sub in list(self._subagents.values()):
                self._finish_subagent(sub, None, None)
            self._end_turn(self.main)
            for call_id in list(self._tools):
                self._tool_finished(call_id, error="the session ended before the tool finished")
            if error is not None:
                self.main.span.record_exception(error)
                self.main.span.set_status(
                    Status(StatusCode.ERROR, f"{type(error).__name__}: {error}")
                )
            self._ended = True
            self.main.span.end()
