"""Helpers shared by the readers of SDK instrumentors (OpenInference, traceAI).

They see the agent through the Claude Agent SDK's message stream, which splits one API response
into one message per content block, and shows a skill's injected body as an assistant message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skillsight._json_text import loads
from skillsight.rebuild.trajectories._draft import CallDraft, StepDraft

# Claude Code injects a skill's SKILL.md body after the Skill call with this first line.
SKILL_BODY_PREFIX = "Base directory for this skill:"

# Claude Code's catalogue message, which some transcripts keep as a system message.
_CATALOGUE_HEAD = re.compile(r"The following skills are available", re.IGNORECASE)
_CATALOGUE_LINE = re.compile(r"^\s*[-*]\s+([A-Za-z0-9_.:/-]+)\s*:\s*(.*?)\s*$")


def visible_skills(text: str) -> list[dict[str, str]]:
    """``[{name, description}]`` listed in a skill catalogue message, else ``[]``."""
    if not _CATALOGUE_HEAD.search(text):
        return []
    found: list[dict[str, str]] = []
    for line in text.splitlines():
        match = _CATALOGUE_LINE.match(line)
        if match:
            found.append({"name": match.group(1), "description": match.group(2)})
    return found


def _texts(value: Any) -> list[str]:
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return []
    return [
        str(block["text"])
        for block in value["content"]
        if isinstance(block, dict)
        and isinstance(block.get("text"), str)
        # Claude Code prefixes a subagent's report with a note of the tools it used
        and not str(block["text"]).startswith("<tools-used")
    ]


def tool_output(text: str) -> str:
    """What the model read from a tool, out of the SDK's structured ``tool_use_result``.

    Bash comes as ``{"stdout", "stderr", …}``, Read as ``{"file": {"content", …}}``, a
    subagent's report as ``{"content": [text blocks], …}``; anything else is kept as sent.
    """
    if not text.startswith("{"):
        return text
    try:
        value = loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(value, dict) and isinstance(value.get("stdout"), str):
        stderr = value.get("stderr")
        out: str = value["stdout"]
        return f"{out}\n{stderr}" if isinstance(stderr, str) and stderr else out
    if isinstance(value, dict) and isinstance(value.get("file"), dict):
        content = value["file"].get("content")  # Read: {"type": "text", "file": {...}}
        if isinstance(content, str):
            return content
    texts = _texts(value)
    return "\n".join(texts) if texts else text


def subagent_report(text: str) -> str:
    """The subagent's final message inside a Task/Agent tool result ('' when absent)."""
    try:
        texts = _texts(loads(text)) if text.startswith("{") else []
    except json.JSONDecodeError:
        return ""
    return texts[-1] if texts else ""


def attach_call(steps: list[StepDraft], call: CallDraft) -> None:
    """Add a tool call to the current agent step, or open one.

    A call joins the step when the step has text but no call yet (text, then tool use, of one
    response) or when it overlaps the step's last call in time (parallel calls of one response).
    """
    current = steps[-1] if steps and steps[-1].source == "agent" else None
    if current is not None and not current.calls and not current.extra.get("closed"):
        current.calls.append(call)
        return
    if current is not None and current.calls:
        last = current.calls[-1]
        if call.start_ns and last.end_ns and call.start_ns < last.end_ns:
            current.calls.append(call)
            return
    steps.append(StepDraft(source="agent", time_ns=call.start_ns, calls=[call]))
