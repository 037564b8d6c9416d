"""The agent contract: how ``skillsight rerun`` starts any command-line agent.

``--agent 'CMD …'`` is split like a shell line (no shell runs it); in each argument the
placeholders ``{prompt}`` (the case's question), ``{prompt_file}`` (a file holding it) and
``{workspace}`` (the fresh workspace) are replaced. The command runs in the workspace, with the
rerun process's environment plus:

=================================  ==========================================================
``SKILLSIGHT_RERUN_PROMPT``        the question; ``…_PROMPT_FILE`` the file holding it
``SKILLSIGHT_RERUN_WORKSPACE``     the workspace (also the working directory)
``SKILLSIGHT_RERUN_SKILLS_DIR``    the skills the run may use (``<workspace>/.claude/skills``)
``SKILLSIGHT_RERUN_ID``,           the run, case, condition (``with_skill`` / ``baseline``),
``…_CASE``, ``…_CONDITION``,       attempt, and a key unique to this launch
``…_ATTEMPT``, ``…_KEY``
``OTEL_EXPORTER_OTLP_ENDPOINT``    the rerun's own collector (OTLP/HTTP), with
``OTEL_EXPORTER_OTLP_PROTOCOL``    ``http/protobuf``, traces and logs exporters ``otlp``
``OTEL_RESOURCE_ATTRIBUTES``       ``skillsight.rerun.id``, ``.case``, ``.condition``,
                                   ``.attempt``, ``.key``: how the rerun finds its telemetry
``OTEL_EXPORTER_OTLP_HEADERS``     ``x-skillsight-key=…`` when the service has API keys
Claude Code's telemetry switches   ``CLAUDE_CODE_ENABLE_TELEMETRY=1`` and the rest
                                   (``docs/claude-code-telemetry.md``), harmless to others
=================================  ==========================================================

The agent must export OpenTelemetry (any convention the collector reads) carrying those
resource attributes, and exit when done; its exit code is recorded. Two presets: ``claude``
(the Claude Code CLI, native telemetry, a private config folder per run so no user-level skill
leaks into the baseline) and ``--sdk`` (the Claude Agent SDK in a child process under
skillsight's instrumentor).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillsight import semconv
from skillsight.errors import RerunError

PLACEHOLDERS: tuple[str, ...] = ("{prompt}", "{prompt_file}", "{workspace}")
CLAUDE_TOOLS = "Skill,Read,Write,Edit,Glob,Grep,Bash"

CLAUDE_TELEMETRY: Mapping[str, str] = {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
    "OTEL_LOG_USER_PROMPTS": "1",
    "OTEL_LOG_TOOL_DETAILS": "1",
    "OTEL_LOG_TOOL_CONTENT": "1",
    "OTEL_LOGS_EXPORT_INTERVAL": "500",
    "OTEL_TRACES_EXPORT_INTERVAL": "500",
    "OTEL_BSP_SCHEDULE_DELAY": "500",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


@dataclass(frozen=True)
class Launch:
    """Who and what one attempt is, for the agent's environment."""

    run_id: str
    case_id: str
    condition: str
    attempt: int
    key: str
    prompt: str
    prompt_file: Path
    workspace: Path
    endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentCommand:
    """A command-line agent and the environment its preset adds."""

    name: str
    template: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    private_claude_config: bool = False

    def argv(self, launch: Launch) -> list[str]:
        values = {
            "{prompt}": launch.prompt,
            "{prompt_file}": str(launch.prompt_file),
            "{workspace}": str(launch.workspace),
        }
        out = []
        for token in self.template:
            for placeholder, value in values.items():
                token = token.replace(placeholder, value)
            out.append(token)
        return out

    def environment(self, launch: Launch, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        # per-signal settings inherited from the caller would win over the generic endpoint
        for name in list(env):
            if name.startswith(("OTEL_EXPORTER_OTLP_TRACES_", "OTEL_EXPORTER_OTLP_LOGS_")):
                del env[name]
        tags = {
            semconv.SKILLSIGHT_RERUN_ID: launch.run_id,
            semconv.SKILLSIGHT_RERUN_CASE: launch.case_id,
            semconv.SKILLSIGHT_RERUN_CONDITION: launch.condition,
            semconv.SKILLSIGHT_RERUN_ATTEMPT: str(launch.attempt),
            semconv.SKILLSIGHT_RERUN_KEY: launch.key,
        }
        inherited = env.get("OTEL_RESOURCE_ATTRIBUTES", "")
        resource = ",".join(f"{k}={v}" for k, v in tags.items())
        env.update(CLAUDE_TELEMETRY)
        env.update(
            {
                "SKILLSIGHT_RERUN_PROMPT": launch.prompt,
                "SKILLSIGHT_RERUN_PROMPT_FILE": str(launch.prompt_file),
                "SKILLSIGHT_RERUN_WORKSPACE": str(launch.workspace),
                "SKILLSIGHT_RERUN_SKILLS_DIR": str(launch.workspace / ".claude" / "skills"),
                "SKILLSIGHT_RERUN_ID": launch.run_id,
                "SKILLSIGHT_RERUN_CASE": launch.case_id,
                "SKILLSIGHT_RERUN_CONDITION": launch.condition,
                "SKILLSIGHT_RERUN_ATTEMPT": str(launch.attempt),
                "SKILLSIGHT_RERUN_KEY": launch.key,
                "OTEL_EXPORTER_OTLP_ENDPOINT": launch.endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_LOGS_EXPORTER": "otlp",
                "OTEL_METRICS_EXPORTER": "none",
                "OTEL_RESOURCE_ATTRIBUTES": f"{inherited},{resource}" if inherited else resource,
            }
        )
        if launch.headers:
            env["OTEL_EXPORTER_OTLP_HEADERS"] = ",".join(
                f"{k}={v}" for k, v in launch.headers.items()
            )
        else:
            env.pop("OTEL_EXPORTER_OTLP_HEADERS", None)
        env.update(self.env)
        if self.private_claude_config:
            env["CLAUDE_CONFIG_DIR"] = str(launch.prompt_file.parent / "claude-config")
        return env


def claude_cli() -> str:
    """The Claude Code CLI: ``claude`` on PATH, else the one bundled with claude-agent-sdk."""
    found = shutil.which("claude")
    if found:
        return found
    try:
        import claude_agent_sdk
    except ImportError:
        raise RerunError(
            "no Claude Code CLI: install it (npm i -g @anthropic-ai/claude-code) or "
            "pip install 'skillsight[claude]'"
        ) from None
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not bundled.is_file():
        raise RerunError(f"claude-agent-sdk has no bundled CLI at {bundled}")
    return str(bundled)


def claude_agent(max_turns: int = 20) -> AgentCommand:
    """The Claude Code CLI, headless, project settings only, native telemetry on."""
    template = (
        claude_cli(),
        "-p",
        "{prompt}",
        "--output-format",
        "json",
        "--setting-sources",
        "project",
        "--allowedTools",
        CLAUDE_TOOLS,
        "--max-turns",
        str(max_turns),
    )
    return AgentCommand("claude", template, private_claude_config=True)


def sdk_agent() -> AgentCommand:
    """The Claude Agent SDK under skillsight's instrumentor, in a child Python process."""
    template = (
        sys.executable,
        "-m",
        "skillsight.reruns._sdk_agent",
        "--prompt-file",
        "{prompt_file}",
        "--workspace",
        "{workspace}",
    )
    return AgentCommand("sdk", template, private_claude_config=True)


def parse_agent(spec: str) -> AgentCommand:
    """``claude``, ``sdk``, or a command line with placeholders."""
    text = spec.strip()
    if text == "claude":
        return claude_agent()
    if text == "sdk":
        return sdk_agent()
    try:
        template = tuple(shlex.split(text))
    except ValueError as exc:
        raise RerunError(f"--agent {spec!r} is not a command line: {exc}") from exc
    if not template:
        raise RerunError("--agent is empty: give a command, 'claude' or use --sdk")
    return AgentCommand(Path(template[0]).name, template)
