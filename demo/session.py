"""One Claude Code session through ``claude_agent_sdk``, and what its messages say happened.

:func:`run_claude` starts the real CLI in a project directory against a model endpoint
(the scripted server) and returns the SDK messages; :func:`transcript` reads those messages
back into the tool calls the CLI really executed (with their results and error flags, subagent
calls included), the agent's text messages and the final answer. Both the demo workload and
the scenario library use them.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "ClientKind",
    "ExecutedCall",
    "Transcript",
    "key_argument",
    "run_claude",
    "session_env",
    "transcript",
]

ClientKind = Literal["query", "client"]
"""``query``: ``claude_agent_sdk.query()``; ``client``: ``ClaudeSDKClient`` (all traceAI wraps)."""


def session_env(
    base_url: str, config_dir: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The CLI's environment: scripted endpoint, any API key, a private config dir, quiet."""
    env = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-skillsight-demo",
        # A private config dir keeps the user's ~/.claude (settings, skills, transcripts) out.
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
        # The agent's `python3` is this interpreter, not a version manager's shim: a shim adds
        # its own start-up and, while it rehashes, its own output to the scripts' (seen once:
        # pyenv's "rm: cannot remove .../shims/tmp..." in a tool output the test compared).
        "PATH": os.pathsep.join(
            [str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]
        ),
        # The Bash tool's shell starts from the user's shell start-up files; one that runs
        # `pyenv init` rehashes pyenv's shims in every such shell, and shells of concurrent
        # sessions race on the shims folder (seen twice: "rm: cannot remove .../shims/tmp..."
        # in a tool output the tests compare). The private config dir is its home instead.
        "HOME": str(config_dir),
    }
    env.update(extra or {})
    return env


async def run_claude(
    cwd: Path,
    *,
    base_url: str,
    prompt: str,
    skills: Sequence[str],
    allowed_tools: Sequence[str],
    env: Mapping[str, str] | None = None,
    model: str | None = None,
    client: ClientKind = "query",
    max_turns: int = 8,
    timeout_s: float = 90.0,
    stderr: Any = None,
    add_dirs: Sequence[Path] = (),
) -> list[Any]:
    """Run one Claude Code session in ``cwd`` against the model at ``base_url``.

    Project settings (``.claude/skills``, ``.claude/agents``) are loaded; ``skills`` and
    ``allowed_tools`` become allow rules, because running as root rules out
    ``bypassPermissions``. ``env`` is merged over :func:`session_env`. Returns the SDK
    messages once the CLI has exited, i.e. after its telemetry shutdown flush. ``add_dirs``
    are extra working directories (the CLI asks before touching paths outside them).
    """
    # Looked up at call time, not import time: instrumentors replace these package attributes.
    import claude_agent_sdk
    from claude_agent_sdk import ClaudeAgentOptions

    config_dir = cwd.parent / f".{cwd.name}-claude-config"
    config_dir.mkdir(parents=True, exist_ok=True)
    options = ClaudeAgentOptions(
        cwd=str(cwd),
        setting_sources=["project"],
        skills=list(skills),
        allowed_tools=list(allowed_tools),
        env=session_env(base_url, config_dir, env),
        model=model,
        max_turns=max_turns,
        stderr=stderr,
        add_dirs=list(add_dirs),
    )
    messages: list[Any] = []

    async def consume() -> None:
        if client == "query":
            async for message in claude_agent_sdk.query(prompt=prompt, options=options):
                messages.append(message)
            return
        async with claude_agent_sdk.ClaudeSDKClient(options=options) as sdk_client:
            await sdk_client.query(prompt)
            async for message in sdk_client.receive_response():
                messages.append(message)

    await asyncio.wait_for(consume(), timeout_s)
    return messages


def key_argument(name: str, tool_input: Mapping[str, Any]) -> str:
    """The argument that identifies a call: skill, command, file path or subagent type."""
    for key in ("skill", "command", "file_path", "subagent_type", "pattern", "url"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return ""


@dataclass(frozen=True)
class ExecutedCall:
    """A tool call the model asked for, and what the CLI answered."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    parent_tool_use_id: str | None
    """The ``Agent`` call whose subagent made this call; None for the main agent."""
    result: str | None
    """The tool result text the CLI sent back (None if it never answered)."""
    is_error: bool

    @property
    def key(self) -> str:
        """See :func:`key_argument`."""
        return key_argument(self.name, self.input)


@dataclass(frozen=True)
class AgentText:
    """A text block the model wrote, and in which agent context."""

    text: str
    parent_tool_use_id: str | None


@dataclass
class Transcript:
    """What the SDK messages of one session say happened."""

    session_id: str | None = None
    calls: list[ExecutedCall] = field(default_factory=list)
    texts: list[AgentText] = field(default_factory=list)
    result_text: str | None = None
    is_error: bool = False

    def main_texts(self) -> list[str]:
        """The main agent's text blocks, in order."""
        return [t.text for t in self.texts if t.parent_tool_use_id is None]


def _result_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def transcript(messages: Sequence[Any]) -> Transcript:
    """Read SDK messages into a :class:`Transcript` (calls in the order the model made them)."""
    from claude_agent_sdk import (
        AssistantMessage,
        ResultMessage,
        SystemMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )

    out = Transcript()
    requested: list[tuple[ToolUseBlock, str | None]] = []
    results: dict[str, tuple[str, bool]] = {}
    for message in messages:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            out.session_id = out.session_id or str(message.data.get("session_id") or "") or None
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    requested.append((block, message.parent_tool_use_id))
                elif isinstance(block, TextBlock):
                    out.texts.append(AgentText(block.text, message.parent_tool_use_id))
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    results[block.tool_use_id] = (
                        _result_content(block.content),
                        bool(block.is_error),
                    )
        elif isinstance(message, ResultMessage):
            out.session_id = message.session_id or out.session_id
            out.result_text = message.result
            out.is_error = message.is_error
    for block, parent in requested:
        result, is_error = results.get(block.id, (None, False))
        out.calls.append(
            ExecutedCall(block.id, block.name, dict(block.input), parent, result, is_error)
        )
    return out
