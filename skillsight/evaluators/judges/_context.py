"""What a judge may know beyond the activation and the deterministic evaluators' context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from skillsight.evaluators import EvaluationContext
from skillsight.rebuild.trajectories.atif import Trajectory


@dataclass(frozen=True, slots=True)
class SkillRubric:
    """SkillCoach-style checks a skill's author lists: the key steps its procedure must show
    (``following``) and the checks the agent should make of its own work (``reflection``)."""

    key_steps: tuple[str, ...] = ()
    reflection_checks: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkillRubric:
        return cls(
            key_steps=_texts(data.get("key_steps"), "key_steps"),
            reflection_checks=_texts(data.get("reflection_checks"), "reflection_checks"),
        )


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ValueError(f"{name} must be a list of strings")
    return tuple(str(item) for item in value)


@dataclass(frozen=True, slots=True)
class JudgeContext(EvaluationContext):
    """An :class:`EvaluationContext` with what only judges use; a plain one works too (the
    rubrics that need these then do not apply)."""

    expected_behavior: tuple[str, ...] = ()
    """A golden case's ``expected_behavior`` assertions (``behavior_check``)."""
    skill_rubric: SkillRubric | None = None
    """Key steps and reflection checks (``following``, ``reflection``)."""
    trajectory: Trajectory | None = None
    """The session's trajectory, for the agent's text before the activation (``dispatch``)."""


def judge_context(context: EvaluationContext, **extra: Any) -> JudgeContext:
    """``context`` extended with judge-only inputs (``expected_behavior=…`` and the like)."""
    base = {f.name: getattr(context, f.name) for f in fields(EvaluationContext)}
    if isinstance(context, JudgeContext):
        base.update(
            expected_behavior=context.expected_behavior,
            skill_rubric=context.skill_rubric,
            trajectory=context.trajectory,
        )
    base.update(extra)
    if "expected_behavior" in extra:
        base["expected_behavior"] = tuple(extra["expected_behavior"])
    return JudgeContext(**base)
