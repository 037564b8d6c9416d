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
child, the starting call first. All state lives on the :class:`ClaudeSession` object, built in
layers: the span tree and its operations (:mod:`._claude_tree`), the reading of messages
(:mod:`._claude_messages`), and here the hooks and the entry points, which take the lock.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode

from skillsight import semconv as sc
from skillsight.instrumentation._claude_messages import ClaudeMessageReader
from skillsight.instrumentation._claude_tree import now
from skillsight.instrumentation._guard import guard
from skillsight.instrumentation._skillinfo import SkillCache, SkillResolver
from skillsight.instrumentation._spans import SpanEmitter

if TYPE_CHECKING:
    from claude_agent_sdk import HookContext, HookInput, HookJSONOutput

__all__ = ["ClaudeSession"]

HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "UserPromptSubmit",
)


def _tool_result_text(response: Any) -> Any:
    """A tool's output as the agent saw it: shell output as text, anything else as is."""
    if isinstance(response, Mapping) and "stdout" in response:
        stdout = str(response.get("stdout") or "")
        stderr = str(response.get("stderr") or "")
        return f"{stdout}\n{stderr}" if stderr else stdout
    return response


class ClaudeSession(ClaudeMessageReader):
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
        self._lock = threading.RLock()
        resolver = SkillResolver(cwd or Path.cwd(), plugin_dirs, skill_cache)
        allowlist = list(skills_allowlist) if skills_allowlist is not None else None
        span = emitter.start_agent(agent_name, provider=sc.PROVIDER_ANTHROPIC, model=model)
        super().__init__(emitter, resolver, span, allowlist)
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
            self.main.last_event_ns = now()
        elif event == "UserPromptSubmit":
            # The next model call answers this prompt: its span starts here.
            self.main.last_event_ns = now()
            prompt = data.get("prompt")
            if isinstance(prompt, str):
                self.note_prompt(prompt)

    def note_prompt(self, prompt: str) -> None:
        """The user's latest request (the input of activations that do not name their own)."""
        with self._lock:
            if self.main.prompt is None and not self._ended:
                self._emitter.set_content(self.main.span, sc.GEN_AI_INPUT_MESSAGES, prompt)
            self.main.prompt = prompt

    # --- messages ----------------------------------------------------------------------------

    def handle_message(self, message: Any) -> None:
        """Apply one message of the SDK's stream."""
        with guard("reading a Claude Agent SDK message"), self._lock:
            if self._ended:
                return
            self._read_message(message)

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
