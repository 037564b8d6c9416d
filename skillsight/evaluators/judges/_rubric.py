"""Rubrics: versioned data (``rubrics/<name>.toml``) read into :class:`Rubric`.

A rubric file holds everything that decides a judgement except the model: its version, the
prompt template, the input mapping (which parts of the activation the prompt shows), what must
be present for it to apply, the output schema's id, the checks (or where they come from), the
labels and the pass threshold. Changing any of it means a new ``version``, and the version is
part of each stored evaluation and of the cache key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any

from skillsight.errors import EvaluatorError
from skillsight.evaluators.judges._verdicts import SCHEMAS

INPUTS: tuple[str, ...] = (
    "request",
    "catalogue",
    "skill",
    "procedure",
    "decision",
    "internal",
    "integration",
)
REQUIREMENTS: tuple[str, ...] = (
    "request",
    "decision_step",
    "internal_steps",
    "integration_message",
    "checks",
)
CHECK_SOURCES: tuple[str, ...] = ("rubric", "expected_behavior", "key_steps", "reflection_checks")

RUBRIC_NAMES: tuple[str, ...] = (
    "dispatch",
    "internal_trajectory",
    "integration",
    "behavior_check",
    "following",
    "reflection",
)
"""The shipped rubrics, in the order they are reported."""


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Rubric:
    name: str
    version: str
    summary: str
    threshold: float
    output: str
    inputs: tuple[str, ...]
    requires: tuple[str, ...]
    checks_from: str
    checks: tuple[Check, ...]
    labels: dict[str, str]
    prompt: Template

    @classmethod
    def from_dict(cls, data: dict[str, Any], origin: str) -> Rubric:
        try:
            rubric = cls(
                name=str(data["name"]),
                version=str(data["version"]),
                summary=str(data["summary"]),
                threshold=float(data["threshold"]),
                output=str(data["output"]),
                inputs=tuple(data["inputs"]),
                requires=tuple(data.get("requires", ())),
                checks_from=str(data.get("checks_from", "rubric")),
                checks=tuple(Check(str(c["id"]), str(c["text"])) for c in data.get("checks", ())),
                labels={str(k): str(v) for k, v in data["labels"].items()},
                prompt=Template(str(data["prompt"])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise EvaluatorError(f"{origin}: not a rubric ({type(exc).__name__}: {exc})") from exc
        rubric._check(origin)
        return rubric

    def _check(self, origin: str) -> None:
        problems = [f"unknown input {i!r}" for i in self.inputs if i not in INPUTS]
        problems += [f"unknown requirement {r!r}" for r in self.requires if r not in REQUIREMENTS]
        if self.output not in SCHEMAS:
            problems.append(f"unknown output schema {self.output!r}")
        if self.checks_from not in CHECK_SOURCES:
            problems.append(f"unknown checks_from {self.checks_from!r}")
        if self.checks_from == "rubric" and not self.checks:
            problems.append("no checks")
        if not 0.0 <= self.threshold <= 1.0:
            problems.append(f"threshold {self.threshold} is outside [0, 1]")
        missing = {"pass", "partial", "fail"} - set(self.labels)
        if missing:
            problems.append(f"labels lack {sorted(missing)}")
        placeholders = set(self.prompt.get_identifiers())
        if not {"sections", "checks"} <= placeholders:
            problems.append("the prompt must place $sections and $checks")
        if problems:
            raise EvaluatorError(f"{origin}: " + "; ".join(problems))

    def label(self, score: float) -> str:
        if score >= 1.0:
            return self.labels["pass"]
        return self.labels["fail"] if score <= 0.0 else self.labels["partial"]


def load_rubric(name: str) -> Rubric:
    """A shipped rubric by name."""
    if name not in RUBRIC_NAMES:
        raise EvaluatorError(f"no rubric named {name!r} (known: {', '.join(RUBRIC_NAMES)})")
    text = resources.files("skillsight.evaluators.judges") / "rubrics" / f"{name}.toml"
    return Rubric.from_dict(tomllib.loads(text.read_text(encoding="utf-8")), f"{name}.toml")


def system_prompt() -> Template:
    """The policy every rubric's prompt runs under (``$boundary`` filled per prompt)."""
    text = resources.files("skillsight.evaluators.judges") / "rubrics" / "system.md"
    return Template(text.read_text(encoding="utf-8"))
