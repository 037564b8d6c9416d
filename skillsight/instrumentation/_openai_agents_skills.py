"""Skills in one OpenAI Agents SDK trace: which are visible, which tool call activates one.

A ``load_skill`` call (any of :attr:`SkillSettings.load_skill_tools`) activates the skill its
arguments name. A tool call whose arguments name a ``…/skills/<name>/SKILL.md`` (a file read,
``cat`` in a sandbox shell), or a ``SKILL.md`` right inside one of the ``skills_dirs``, activates
that skill, unless it is the one already active. The activation span opens under the agent.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace

from skillsight import semconv as sc
from skillsight.instrumentation._openai_agents_nodes import Activation, Agent
from skillsight.instrumentation._skillinfo import SkillResolver, info_from_dir, skill_md_name
from skillsight.instrumentation._spans import SkillInfo, SpanEmitter

__all__ = ["SkillSettings", "TraceSkills"]

_SKILL_ARGUMENT_KEYS = ("skill_name", "name", "skill")
_SKILL_MD = "SKILL.md"


@dataclass(frozen=True)
class SkillSettings:
    """How skills are recognised and looked up on disk."""

    load_skill_tools: frozenset[str] = frozenset({"load_skill"})
    skills_dirs: tuple[Path, ...] = ()
    cwd: Path | None = None


class TraceSkills:
    """The skills of one trace: those visible to its agents, and their activations."""

    def __init__(self, emitter: SpanEmitter, settings: SkillSettings) -> None:
        self._emitter = emitter
        self._settings = settings
        self._visible: list[tuple[str, str | None]] | None = None
        self._resolver = SkillResolver(settings.cwd or Path(os.getcwd()), settings.skills_dirs)

    def visible(self) -> list[tuple[str, str | None]]:
        """The skills in ``skills_dirs`` (read once per trace)."""
        if self._visible is not None:
            return self._visible
        found: list[tuple[str, str | None]] = []
        for root in self._settings.skills_dirs:
            try:
                folders = sorted(p for p in root.iterdir() if (p / _SKILL_MD).is_file())
            except OSError:
                continue
            for folder in folders:
                info = info_from_dir(folder)
                if info is not None and info.name not in {name for name, _ in found}:
                    found.append((info.name, info.description))
        self._visible = found
        return found

    def activated_skill(
        self, agent: Agent, name: str, arguments: Mapping[str, Any]
    ) -> tuple[SkillInfo, str] | None:
        """The skill a tool call activates, with its trigger, or None."""
        if name in self._settings.load_skill_tools:
            skill = next(
                (
                    str(arguments[k]).strip()
                    for k in _SKILL_ARGUMENT_KEYS
                    if isinstance(arguments.get(k), str)
                ),
                None,
            )
            return (self._resolver.by_name(skill), sc.TRIGGER_LOAD_SKILL_TOOL) if skill else None
        path = self._skill_md_path(arguments)
        if path is None:
            return None
        read = skill_md_name(path) or Path(path).parent.name
        active = agent.activation.skill.name if agent.activation is not None else None
        if read == active:
            return None  # reading the SKILL.md of the skill just loaded: the same activation
        folder = Path(path).parent
        if not folder.is_absolute() and self._settings.skills_dirs:
            folder = self._settings.skills_dirs[0] / read
        return self._resolver.by_dir(folder, read), sc.TRIGGER_READ_SKILL_MD

    def _skill_md_path(self, arguments: Mapping[str, Any]) -> str | None:
        """A ``…/SKILL.md`` path among the string arguments (or words of a shell command)."""
        values: list[Any] = list(arguments.values())
        for value in values:
            if isinstance(value, list):
                values += value
                continue
            if not isinstance(value, str) or _SKILL_MD not in value:
                continue
            try:
                words = shlex.split(value)
            except ValueError:
                words = value.split()
            for word in words:
                if word.endswith(_SKILL_MD) and (
                    skill_md_name(word) or self._under_skills_dir(word)
                ):
                    return word
        return None

    def _under_skills_dir(self, path: str) -> bool:
        parent = Path(path).parent.parent
        return any(parent == root for root in self._settings.skills_dirs)

    def start_activation(
        self,
        agent: Agent,
        skill: SkillInfo,
        trigger: str,
        start: int | None,
        call_id: str | None,
    ) -> None:
        """Open ``skill``'s activation under ``agent``, ending the one open before it."""
        agent.end_activation(start)
        span = self._emitter.start_activation(
            skill,
            trigger=trigger,
            input=agent.prompt,
            call_id=call_id or None,
            parent=agent.context,
            start_time=start,
        )
        agent.activation = Activation(span, trace.set_span_in_context(span), skill)
