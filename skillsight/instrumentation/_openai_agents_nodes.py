"""An OpenAI Agents SDK trace's span tree as the trace mapper keeps it, and where children go.

Each SDK span becomes a :class:`Node`: the span made for it (None when ``task`` / ``turn`` spans
are folded into their nearest mapped ancestor), its parent and its :class:`Agent`. An agent keeps
its open skill :class:`Activation`, the calls its last model answer asked for and its token
totals. A tool or kept span goes under its nearest mapped ancestor, and when that is an agent,
inside the agent's open activation (:func:`work_context`); a model call goes under its agent,
never inside an activation (:func:`agent_context`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from skillsight.instrumentation._openai_agents_data import Call
from skillsight.instrumentation._spans import SkillInfo

__all__ = ["Activation", "Agent", "Node", "agent_context", "task_of", "work_context"]


@dataclass
class Activation:
    """A skill activation open in an agent: its span, as a context too."""

    span: Span
    context: Context
    skill: SkillInfo


@dataclass
class Agent:
    """An agent span with what its children change: activation, pending calls, token totals."""

    span: Span
    context: Context
    name: str
    activation: Activation | None = None
    calls: list[Call] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    prompt: str | None = None
    final_output: str | None = None
    final_ns: int | None = None

    def take_call(self, name: str) -> Call | None:
        """The first pending model call of this tool, which this function span runs."""
        for index, call in enumerate(self.calls):
            if call.name == name:
                return self.calls.pop(index)
        return None

    def end_activation(self, end: int | None) -> None:
        """End the open activation, if any, at ``end``."""
        if self.activation is not None:
            self.activation.span.end(end_time=end)
            self.activation = None


@dataclass
class Node:
    """An SDK span as seen here: the span made for it (None when folded) and its agent."""

    kind: str
    span: Span | None
    agent: Agent | None
    parent: Node | None
    is_agent: bool = False
    start_ns: int | None = None
    arguments_known: bool = True
    """For a tool: whether its arguments were known when it started (from the model output)."""


def task_of(node: Node | None) -> Node | None:
    """The ``task`` span (one Runner run) a node belongs to; None for SDKs without them."""
    while node is not None and node.kind != "task":
        node = node.parent
    return node


def work_context(node: Node | None) -> Context | None:
    """Where a tool or kept span under ``node`` goes: the active activation, if any."""
    while node is not None and node.span is None:
        node = node.parent
    if node is None:
        return None
    if node.is_agent and node.agent is not None:
        active = node.agent.activation
        return active.context if active is not None else node.agent.context
    return trace.set_span_in_context(node.span) if node.span is not None else None


def agent_context(node: Node | None) -> Context | None:
    """Where a model call under ``node`` goes: its agent, never inside an activation."""
    while node is not None and node.span is None:
        node = node.parent
    if node is not None and node.is_agent and node.agent is not None:
        return node.agent.context
    return work_context(node)
