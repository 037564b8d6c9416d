"""Fresh workspaces for the paired protocol.

Each attempt gets a folder of its own, ``<workdir>/<run>/<case>/<condition>-<attempt>/``,
holding ``workspace/`` (the case's fixture files, and the skills under ``.claude/skills/``) and
the launch's own files (``prompt.txt``, the agent's ``stdout.txt`` / ``stderr.txt``). Both
conditions get the same fixtures and the same support and decoy skills; with-skill adds the
target skill, the baseline withholds only it.

- **isolation** mode: the target skill plus the support and decoy skills named;
- **group** mode: every skill folder beside the target (its skills folder), plus those named.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from skillsight.errors import RerunError
from skillsight.goldens import GoldenCase

MODES: tuple[str, ...] = ("isolation", "group")


@dataclass(frozen=True)
class SkillFolders:
    """The skills a run installs: the target and the ones kept in both conditions."""

    target: Path
    others: tuple[Path, ...] = ()

    @classmethod
    def of(cls, target: Path, others: Sequence[Path], mode: str) -> SkillFolders:
        if mode not in MODES:
            raise RerunError(f"mode {mode!r} is not one of {', '.join(MODES)}")
        if not (target / "SKILL.md").is_file():
            raise RerunError(f"no SKILL.md in {target}")
        kept = list(others)
        if mode == "group":
            kept += [p for p in sorted(target.parent.iterdir()) if (p / "SKILL.md").is_file()]
        resolved = target.resolve()
        unique: dict[str, Path] = {}
        for folder in kept:
            if not (folder / "SKILL.md").is_file():
                raise RerunError(f"no SKILL.md in {folder} (a support or decoy skill)")
            if folder.resolve() != resolved:
                unique.setdefault(folder.name, folder)
        if target.name in unique:
            raise RerunError(f"a kept skill has the target's folder name {target.name!r}")
        return cls(target, tuple(unique.values()))

    def for_condition(self, condition: str) -> list[Path]:
        return [*self.others, self.target] if condition == "with_skill" else list(self.others)


def attempt_dir(workdir: Path, run_id: str, case_id: str, condition: str, attempt: int) -> Path:
    return workdir / run_id / case_id / f"{condition}-{attempt}"


def prepare(
    folder: Path,
    case: GoldenCase,
    condition: str,
    skills: SkillFolders,
    files_root: Path | None,
) -> Path:
    """Create the attempt's folder afresh (an earlier launch's leftovers removed) and return
    its workspace."""
    if folder.exists():
        shutil.rmtree(folder)
    workspace = folder / "workspace"
    workspace.mkdir(parents=True)
    for relative in case.files:
        if files_root is None:
            raise RerunError(
                f"case {case.case_id} has fixture files but no --files folder was given"
            )
        source = files_root / relative
        if not source.is_file():
            raise RerunError(f"case {case.case_id}: no fixture file {source}")
        target = workspace / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    installed = workspace / ".claude" / "skills"
    installed.mkdir(parents=True, exist_ok=True)
    for skill in skills.for_condition(condition):
        shutil.copytree(skill, installed / skill.name, symlinks=True)
    (folder / "prompt.txt").write_text(case.question, encoding="utf-8")
    return workspace
