"""In-process instrumentation: skill-activation spans with the tool calls of the skill nested.

Base install only (OpenTelemetry API/SDK/exporter and PyYAML); the SDKs it wraps are imported
when their instrumentor is used.

- :func:`configure` — export to skillsight over OTLP, with content-capture settings;
- :class:`ClaudeAgentSDKInstrumentor` — ``claude-agent-sdk`` (``query()`` and ``ClaudeSDKClient``);
- the manual API for any other agent: :func:`agent_session`, :func:`skill_activation`,
  :func:`tool_call`, :func:`record_tool_call`, :func:`record_llm_call`;
- :func:`instrument_openai_agents` / :class:`SkillsightTracingProcessor` — the OpenAI Agents
  SDK, loaded on first use so that importing this package never imports ``agents``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillsight.instrumentation._config import configure, shutdown
from skillsight.instrumentation._content import ContentPolicy
from skillsight.instrumentation._guard import STRICT_ENV
from skillsight.instrumentation._manual import (
    AgentSession,
    SkillActivation,
    ToolCall,
    agent_session,
    record_llm_call,
    record_tool_call,
    skill_activation,
    tool_call,
)
from skillsight.instrumentation._spans import SkillInfo, Usage
from skillsight.instrumentation.claude_agent_sdk import ClaudeAgentSDKInstrumentor

if TYPE_CHECKING:
    from skillsight.instrumentation.openai_agents import (
        SkillsightTracingProcessor,
        instrument_openai_agents,
    )

_LAZY = {"SkillsightTracingProcessor", "instrument_openai_agents"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from skillsight.instrumentation import openai_agents

        return getattr(openai_agents, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "STRICT_ENV",
    "AgentSession",
    "ClaudeAgentSDKInstrumentor",
    "ContentPolicy",
    "SkillActivation",
    "SkillInfo",
    "SkillsightTracingProcessor",
    "ToolCall",
    "Usage",
    "agent_session",
    "configure",
    "instrument_openai_agents",
    "record_llm_call",
    "record_tool_call",
    "shutdown",
    "skill_activation",
    "tool_call",
]
