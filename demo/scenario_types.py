"""What a scenario is: a project, a prompt, scripted model turns, and the facts it must produce.

A :class:`Scenario` is built for one project directory (paths in tool inputs are absolute
where Claude Code wants them), so it is made by a factory in
:mod:`demo.scenario_library` rather than written as a constant. Its
:class:`ExpectedFacts` are what the run must show, whichever telemetry source observes it:
every tool call in the order the model makes it (subagent calls included), every skill
activation with its trigger, internal calls and integration message, and what the evaluators
of issue 5 should find. Tool-use ids are fixed by the scenario, so the expectation names the
same ids the CLI reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from demo.scripted_anthropic import MAIN_AGENT, AgentScript, Turn

__all__ = [
    "ExpectedActivation",
    "ExpectedCall",
    "ExpectedEvaluation",
    "ExpectedFacts",
    "Scenario",
    "Trigger",
]

Trigger = Literal["skill_tool", "read_skill_md", "subagent"]


@dataclass(frozen=True)
class ExpectedCall:
    """One tool call the model makes and how the CLI answers it."""

    tool_use_id: str
    name: str
    key: str
    """The identifying argument: skill name, Bash command, file path or subagent type."""
    input: dict[str, Any]
    agent: str = MAIN_AGENT
    """:data:`MAIN_AGENT` or the subagent type whose conversation made the call."""
    is_error: bool = False
    result: str | None = None
    """The exact tool result text when the scenario fixes it (script output), else None."""


@dataclass(frozen=True)
class ExpectedActivation:
    """One skill activation: decision, internal trajectory and integration."""

    skill: str
    trigger: Trigger
    start: ExpectedCall
    """The call that starts it: ``Skill``, the ``Read`` of SKILL.md, or the ``Agent`` call."""
    tool_calls: tuple[ExpectedCall, ...]
    """The internal calls in order, the starting call excluded (see ``load_call``)."""
    integration_message: str
    """The first text of the activating agent after the internal trajectory."""
    agent: str = MAIN_AGENT
    """The agent context the skill ran in (the subagent type for ``subagent``)."""
    load_call: ExpectedCall | None = None
    """For ``subagent``: the ``Skill`` call inside the subagent, if it makes one."""

    @property
    def has_error(self) -> bool:
        """Whether any internal call fails."""
        return any(call.is_error for call in self.tool_calls)


@dataclass(frozen=True)
class ExpectedEvaluation:
    """What one issue-5 evaluator should conclude about the scenario's activation(s)."""

    evaluator: str
    passed: bool
    cites: tuple[str, ...] = ()
    """Tool-use ids the finding must cite (empty when it passes)."""
    note: str = ""


@dataclass(frozen=True)
class ExpectedFacts:
    """Everything a correct observer of the run must find."""

    tool_calls: tuple[ExpectedCall, ...]
    activations: tuple[ExpectedActivation, ...]
    final_answer: str
    visible_skills: tuple[str, ...]
    """The project skills the agent could see."""
    expected_skills: tuple[str, ...]
    """The skills a golden case would say should be used for the prompt."""
    evaluations: tuple[ExpectedEvaluation, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (dataclass fields, tuples as lists)."""
        data: dict[str, Any] = asdict(self)
        return data


@dataclass(frozen=True)
class Scenario:
    """A scenario built for one project directory."""

    name: str
    summary: str
    root: Path
    files: Mapping[str, str]
    """Project files by path relative to ``root`` (skills, agents, scripts, data)."""
    prompt: str
    turns: tuple[Turn, ...]
    """The main agent's scripted turns."""
    expected: ExpectedFacts
    skills: tuple[str, ...]
    """Skills to allow (``Skill(name)`` rules)."""
    allowed_tools: tuple[str, ...] = ("Bash(python3:*)", "Read")
    subagents: Mapping[str, AgentScript] = field(default_factory=dict)
    """Scripts of the subagents, keyed by subagent type."""
    outside_dir: Path | None = None
    """A fresh directory outside the project the scenario touches (``security``)."""

    def write(self) -> None:
        """Write the project files (and create ``outside_dir``) on disk."""
        for relative, text in self.files.items():
            path = self.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if self.outside_dir is not None:
            self.outside_dir.mkdir(parents=True, exist_ok=True)
