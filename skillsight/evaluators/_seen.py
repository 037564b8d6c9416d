"""What an evaluation could not see: the inputs its telemetry did not carry.

An evaluation that rests on part of its input says which part was missing, in its reason and in
``Evaluation.unseen`` (the API shows it); one whose essential input is missing is not applicable.
Claude Code is the usual cause: without ``OTEL_LOG_TOOL_CONTENT`` no tool output is exported,
without ``OTEL_LOG_TOOL_DETAILS`` no tool input, without ``OTEL_LOG_USER_PROMPTS`` no text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from skillsight.store.records import Activation, ToolCall

__all__ = [
    "UNSEEN",
    "arguments_unseen",
    "describe_unseen",
    "message_unseen",
    "outputs_unseen",
]

UNSEEN: dict[str, str] = {
    "tool_outputs": "tool outputs (not exported; Claude Code needs OTEL_LOG_TOOL_CONTENT=1)",
    "tool_arguments": "tool arguments (not logged; Claude Code needs OTEL_LOG_TOOL_DETAILS=1)",
    "messages": "message text (not logged; Claude Code needs OTEL_LOG_USER_PROMPTS=1)",
    "request": "the user's request (not logged; Claude Code needs OTEL_LOG_USER_PROMPTS=1)",
    "workspace": "the agent's workspace (not reported: export "
    "OTEL_RESOURCE_ATTRIBUTES=process.working_directory=<dir>)",
    "skill_content": "the skill's content (neither in the catalogue nor in the telemetry)",
}
"""Each code an evaluation may list in ``unseen``, and what it means."""


def outputs_unseen(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls whose output the source did not export."""
    return [c for c in calls if c.result is None]


def arguments_unseen(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls whose input the source did not log."""
    return [c for c in calls if c.arguments is None]


def message_unseen(activation: Activation) -> bool:
    """The integration step is known, its text was not logged."""
    return activation.integration_message is None and activation.integration_step_id is not None


def describe_unseen(codes: Iterable[str]) -> str:
    """``not seen: …`` for a reason ("" when everything was seen)."""
    shown = [UNSEEN.get(code, code) for code in dict.fromkeys(codes)]
    return "not seen: " + "; ".join(shown) if shown else ""
