"""Find every skill below some directories, load and validate each."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillsight.errors import SkillError
from skillsight.skills._manifest import SKILL_MD, SkillManifest, load_skill
from skillsight.skills._validate import Violation, validate

_SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".tox"})


@dataclass(frozen=True)
class ScanReport:
    """What a scan found: the SKILL.md files, the skills that load, every violation."""

    files: list[Path] = field(default_factory=list)
    skills: list[SkillManifest] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def valid_skills(self) -> list[SkillManifest]:
        """The skills with no violation at all."""
        broken = {v.file for v in self.violations}
        return [s for s in self.skills if str(s.skill_md) not in broken]

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [str(f) for f in self.files],
            "skills": [
                {
                    "name": s.name,
                    "version": s.version,
                    "path": str(s.path),
                    "description": s.description,
                    "allowed_tools": s.allowed_tools,
                    "scripts": s.scripts,
                    "valid": str(s.skill_md) not in {v.file for v in self.violations},
                }
                for s in self.skills
            ],
            "violations": [
                {"file": v.file, "line": v.line, "rule": v.rule, "message": v.message}
                for v in self.violations
            ],
        }


def find_skill_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every SKILL.md at or below the given paths, sorted, each once."""
    found: set[Path] = set()
    for given in paths:
        root = Path(given)
        if root.is_file():
            found.add(root)
            continue
        if not root.is_dir():
            raise SkillError(f"{root}: no such file or directory to scan for skills")
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
            if SKILL_MD in filenames:
                found.add(Path(dirpath) / SKILL_MD)
    return sorted(found)


def scan(paths: Iterable[str | os.PathLike[str]]) -> ScanReport:
    """Load and validate every skill found below ``paths`` (folders or SKILL.md files)."""
    report = ScanReport()
    for skill_md in find_skill_files(paths):
        report.files.append(skill_md)
        report.violations.extend(validate(skill_md))
        try:
            report.skills.append(load_skill(skill_md))
        except SkillError:
            # validate() has already reported why it does not load
            continue
    return report
