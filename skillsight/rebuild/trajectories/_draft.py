"""The mutable shape every source is first read into, before it becomes an ATIF document.

Each source reader (Claude Code native, OpenInference, traceAI, GenAI / skillsight spans) fills
an :class:`AgentDraft`; merging, subagent nesting and the ATIF conversion then work on this one
shape, so they are written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Tools that hand work to a subagent (Claude Code calls it Agent; older CLIs and the SDK, Task).
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})

# The text Claude Code puts in place of prompts and responses when prompt logging is off.
REDACTED = "<REDACTED>"


@dataclass
class Usage:
    """One LLM call's usage; ``prompt`` is the full prompt, cached tokens included."""

    prompt: int = 0
    completion: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    cost_usd: float | None = None

    def add(self, other: Usage) -> None:
        self.prompt += other.prompt
        self.completion += other.completion
        self.cache_read += other.cache_read
        self.cache_creation += other.cache_creation
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd

    @classmethod
    def of(
        cls,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read: int,
        cache_creation: int,
        cost_usd: float | None,
        input_includes_cache: bool,
    ) -> Usage:
        prompt = (
            input_tokens if input_includes_cache else input_tokens + cache_read + cache_creation
        )
        return cls(prompt, output_tokens, cache_read, cache_creation, cost_usd)

    @property
    def empty(self) -> bool:
        return not (self.prompt or self.completion or self.cache_read or self.cache_creation) and (
            self.cost_usd is None
        )


@dataclass
class CallDraft:
    call_id: str
    name: str
    arguments: dict[str, Any] | None = None  # None: the source did not log the input
    result: str | None = None  # None: the source did not log the output
    is_error: bool = False
    start_ns: int = 0
    end_ns: int = 0
    span_id: str = ""
    trace_id: str = ""
    sources: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    subagent: AgentDraft | None = None


@dataclass
class StepDraft:
    source: str  # "user" | "agent" | "system"
    time_ns: int = 0
    end_ns: int = 0
    message: str = ""
    message_logged: bool = True
    calls: list[CallDraft] = field(default_factory=list)
    model: str = ""
    usage: Usage | None = None
    llm_calls: int = 0
    span_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentDraft:
    """One agent context: the main agent of a session, or one subagent run."""

    session_id: str
    trajectory_id: str
    source: str
    name: str = ""
    version: str = ""
    model: str = ""
    steps: list[StepDraft] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trace_ids: list[str] = field(default_factory=list)
    visible_skills: list[dict[str, str]] = field(default_factory=list)
    # explicit skill activation spans: dicts with span_id, skill_name, trigger, times, contract
    activation_spans: list[dict[str, Any]] = field(default_factory=list)
    # Claude Code skill_activated events no tool call claimed
    skill_events: list[dict[str, Any]] = field(default_factory=list)
    side_usage: Usage = field(default_factory=Usage)
    side_requests: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def calls(self) -> list[CallDraft]:
        return [call for step in self.steps for call in step.calls]
