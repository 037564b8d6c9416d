"""Check a skill folder against the Agent Skills specification; one stable id per rule.

Rules (``Violation.rule``):

============================  =====================================================================
``skill-md-missing``          the folder has no SKILL.md
``skill-md-encoding``         SKILL.md is not UTF-8 text
``frontmatter-missing``       SKILL.md does not start with a ``---`` line
``frontmatter-unclosed``      the frontmatter is never closed by a ``---`` line
``frontmatter-yaml``          the frontmatter is not valid YAML, or not a mapping
``name-required``             no ``name``, or not a non-empty string
``name-length``               ``name`` longer than 64 characters
``name-format``               ``name`` not lowercase letters, digits and single inner hyphens
``name-matches-folder``       ``name`` differs from the folder's name
``description-required``      no ``description``, or not a non-empty string
``description-length``        ``description`` longer than 1024 characters
``compatibility-format``      ``compatibility`` not a string, or longer than 500 characters
``license-format``            ``license`` not a string
``metadata-format``           ``metadata`` not a mapping of strings to strings
``unknown-key``               a top-level key neither the specification nor Claude Code defines
``field-type``                a Claude Code key (``model``, ``user-invocable``…) of the wrong type
``allowed-tools-format``      ``allowed-tools`` not a string or a list of strings
``allowed-tools-pattern``     one ``allowed-tools`` pattern that does not parse
``script-missing``            a script the procedure mentions is not in the folder
============================  =====================================================================

Names follow the reference validator (``skills-ref``): NFKC-normalised, lowercase letters
(Unicode lowercase letters included) and digits, hyphens only between them.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillsight.errors import SkillError
from skillsight.skills._allowed_tools import AllowedTools
from skillsight.skills._frontmatter import Frontmatter, FrontmatterProblem, split_frontmatter
from skillsight.skills._manifest import (
    SKILL_MD,
    SkillManifest,
    declared_allowed_tools,
    mentioned_scripts,
)

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500

SPEC_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
# Keys Claude Code reads beyond the specification, with the type each must have.
CLAUDE_CODE_KEYS: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "disable-model-invocation": bool,
    "user-invocable": bool,
    "argument-hint": (str, list),
    "context": str,
    "agent": str,
    "hooks": dict,
    "when_to_use": str,
    "version": (str, int, float),
}


@dataclass(frozen=True, order=True)
class Violation:
    """One broken rule: where (``file``, ``line`` when known), which ``rule``, and why."""

    file: str
    rule: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.rule}: {self.message}"


def validate(manifest_or_path: SkillManifest | str | os.PathLike[str]) -> list[Violation]:
    """Every violation of the skill at a path (folder or SKILL.md) or of a loaded manifest."""
    given = (
        manifest_or_path.path
        if isinstance(manifest_or_path, SkillManifest)
        else Path(manifest_or_path)
    )
    skill_md = given if given.name == SKILL_MD or given.is_file() else given / SKILL_MD
    file = str(skill_md)
    if not skill_md.is_file():
        return [Violation(file, "skill-md-missing", f"no {SKILL_MD} in {given}")]
    try:
        text = skill_md.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Violation(file, "skill-md-encoding", f"not UTF-8 text (byte {exc.start})")]
    except OSError as exc:
        raise SkillError(f"{skill_md}: cannot be read: {exc.strerror or exc}") from exc
    try:
        parsed = split_frontmatter(text)
    except FrontmatterProblem as exc:
        return [Violation(file, exc.rule, exc.message, exc.line)]
    return _Checker(file, skill_md.parent, parsed).run()


class _Checker:
    def __init__(self, file: str, folder: Path, parsed: Frontmatter) -> None:
        self.file = file
        self.folder = folder
        self.parsed = parsed
        self.data = parsed.data
        self.found: list[Violation] = []

    def report(self, rule: str, message: str, key: str | None = None) -> None:
        line = self.parsed.key_lines.get(key, 1) if key else None
        self.found.append(Violation(self.file, rule, message, line))

    def run(self) -> list[Violation]:
        self.check_name()
        self.check_description()
        self.check_optional()
        self.check_keys()
        self.check_allowed_tools()
        self.check_scripts()
        return self.found

    def check_name(self) -> None:
        raw = self.data.get("name")
        if not isinstance(raw, str) or not raw.strip():
            what = "missing" if raw is None else f"{type(raw).__name__}, not a non-empty string"
            self.report("name-required", f"name is required ({what})", "name")
            return
        name = unicodedata.normalize("NFKC", raw.strip())
        if len(name) > MAX_NAME:
            self.report(
                "name-length", f"name is {len(name)} characters; at most {MAX_NAME}", "name"
            )
        problems = []
        if name != name.lower():
            problems.append("must be lowercase")
        if not all(ch.isalnum() or ch == "-" for ch in name):
            problems.append("only letters, digits and hyphens are allowed")
        if name.startswith("-") or name.endswith("-"):
            problems.append("cannot start or end with a hyphen")
        if "--" in name:
            problems.append("cannot contain two hyphens in a row")
        if problems:
            self.report("name-format", f"name {name!r}: {'; '.join(problems)}", "name")
        folder = unicodedata.normalize("NFKC", self.folder.name)
        if folder != name:
            self.report(
                "name-matches-folder",
                f"name {name!r} differs from the folder name {self.folder.name!r}",
                "name",
            )

    def check_description(self) -> None:
        raw = self.data.get("description")
        if not isinstance(raw, str) or not raw.strip():
            what = (
                "missing"
                if raw is None
                else ("empty" if isinstance(raw, str) else f"{type(raw).__name__}, not a string")
            )
            self.report("description-required", f"description is required ({what})", "description")
            return
        if len(raw) > MAX_DESCRIPTION:
            self.report(
                "description-length",
                f"description is {len(raw)} characters; at most {MAX_DESCRIPTION}",
                "description",
            )

    def check_optional(self) -> None:
        if "compatibility" in self.data:
            value = self.data["compatibility"]
            if not isinstance(value, str):
                self.report(
                    "compatibility-format",
                    f"compatibility must be a string, not {type(value).__name__}",
                    "compatibility",
                )
            elif len(value) > MAX_COMPATIBILITY:
                self.report(
                    "compatibility-format",
                    f"compatibility is {len(value)} characters; at most {MAX_COMPATIBILITY}",
                    "compatibility",
                )
        if "license" in self.data and not isinstance(self.data["license"], str):
            kind = type(self.data["license"]).__name__
            self.report("license-format", f"license must be a string, not {kind}", "license")
        if "metadata" in self.data:
            self.check_metadata(self.data["metadata"])

    def check_metadata(self, value: Any) -> None:
        if not isinstance(value, dict):
            self.report(
                "metadata-format",
                f"metadata must be a mapping of strings to strings, not {type(value).__name__}",
                "metadata",
            )
            return
        bad = sorted(
            str(k) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)
        )
        if bad:
            self.report(
                "metadata-format",
                f"metadata values must be strings (quote them in YAML): {', '.join(bad)}",
                "metadata",
            )

    def check_keys(self) -> None:
        for key, value in self.data.items():
            if key in SPEC_KEYS:
                continue
            expected = CLAUDE_CODE_KEYS.get(key)
            if expected is None:
                self.report(
                    "unknown-key",
                    f"unknown frontmatter key {key!r}; custom fields belong under metadata",
                    key,
                )
            elif not isinstance(value, expected):
                names = (
                    " or ".join(t.__name__ for t in expected)
                    if isinstance(expected, tuple)
                    else expected.__name__
                )
                self.report("field-type", f"{key} must be {names}, not {type(value).__name__}", key)

    def check_allowed_tools(self) -> None:
        if "allowed-tools" not in self.data:
            return
        try:
            patterns = declared_allowed_tools(self.data["allowed-tools"])
        except ValueError as exc:
            self.report("allowed-tools-format", str(exc), "allowed-tools")
            return
        for problem in AllowedTools.parse(patterns).problems:
            self.report(
                "allowed-tools-pattern", f"{problem.pattern!r}: {problem.message}", "allowed-tools"
            )

    def check_scripts(self) -> None:
        body_lines = self.parsed.body.splitlines()
        for rel in mentioned_scripts(self.parsed.body, self.folder):
            if (self.folder / rel).is_file():
                continue
            offset = next((i for i, text in enumerate(body_lines) if rel in text), 0)
            self.found.append(
                Violation(
                    self.file,
                    "script-missing",
                    f"the procedure mentions {rel}, which is not in the skill folder",
                    self.parsed.body_line + offset,
                )
            )
