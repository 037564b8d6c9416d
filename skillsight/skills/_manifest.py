"""Load a skill folder into a :class:`SkillManifest`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillsight.errors import SkillError
from skillsight.skills._allowed_tools import AllowedTools, split_patterns
from skillsight.skills._frontmatter import FrontmatterProblem, split_frontmatter
from skillsight.skills._version import skill_files, skill_version

SKILL_MD = "SKILL.md"
_SCRIPT_EXTENSIONS = "py|sh|bash|zsh|js|mjs|cjs|ts|rb|pl|php|ps1|lua|R"
# A relative path with a directory part or a leading ./ or a skill-dir variable, ending in a
# script extension; URLs and absolute paths are left out by the look-behind.
_SCRIPT_MENTION = re.compile(
    r"(?<![\w/.:~$@-])"
    r"(?:\{baseDir\}/|\$\{?[A-Z_][A-Z0-9_]*\}?/|\./)?"
    r"((?:[\w.-]+/)+[\w.-]+\.(?:"
    + _SCRIPT_EXTENSIONS
    + r")|(?<=\./)[\w.-]+\.(?:"
    + _SCRIPT_EXTENSIONS
    + r"))(?![\w/-])"
)


@dataclass(frozen=True)
class SkillManifest:
    """A parsed skill: its declared contract, its procedure and the content version."""

    name: str
    description: str
    allowed_tools: list[str] | None
    body: str
    path: Path
    skill_md: Path
    version: str
    frontmatter: dict[str, Any]
    scripts: list[str]

    @property
    def permissions(self) -> AllowedTools:
        """The parsed allowed-tools (unconstrained when none are declared)."""
        return AllowedTools.parse(self.allowed_tools)


def resolve_skill_md(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(folder, SKILL.md) for a path naming either; SkillError when there is no SKILL.md."""
    given = Path(path)
    skill_md = given if given.name == SKILL_MD or given.is_file() else given / SKILL_MD
    if not skill_md.is_file():
        where = "folder" if given.is_dir() else "path"
        raise SkillError(f"{given}: no {SKILL_MD} in this {where}; a skill is a folder with one")
    return skill_md.parent, skill_md


def read_text(skill_md: Path) -> str:
    try:
        return skill_md.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"{skill_md}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise SkillError(f"{skill_md}: cannot be read: {exc.strerror or exc}") from exc


def declared_allowed_tools(value: Any) -> list[str] | None:
    """The allowed-tools list from its YAML value, or raise ValueError saying what is wrong."""
    if value is None:
        return None
    if isinstance(value, str):
        return split_patterns(value)
    if isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            raise ValueError("allowed-tools list items must all be strings")
        return [piece for item in value for piece in (split_patterns(item) or [item])]
    raise ValueError(
        f"allowed-tools must be a string or a list of strings, not {type(value).__name__}"
    )


def mentioned_scripts(body: str, folder: Path) -> list[str]:
    """Skill-relative script paths the procedure mentions (only under the skill's own dirs)."""
    top_level = {"scripts"} | ({p.name for p in folder.iterdir()} if folder.is_dir() else set())
    found: set[str] = set()
    for match in _SCRIPT_MENTION.finditer(body):
        rel = match.group(1)
        parts = rel.split("/")
        if ".." in parts or (len(parts) > 1 and parts[0] not in top_level):
            continue
        found.add(rel)
    return sorted(found)


def list_scripts(body: str, folder: Path, files: list[str]) -> list[str]:
    under_scripts = [f for f in files if f.startswith("scripts/")]
    return sorted(set(under_scripts) | set(mentioned_scripts(body, folder)))


def load_skill(path: str | os.PathLike[str]) -> SkillManifest:
    """Parse the skill at ``path`` (its folder or its SKILL.md).

    Lenient where Claude Code is: a missing ``name`` falls back to the folder name and a missing
    description to ``""`` (:func:`validate` reports both). Raises :class:`SkillError` for what
    cannot be read as a skill at all: no SKILL.md, not UTF-8, no or invalid YAML frontmatter,
    fields of the wrong type.
    """
    folder, skill_md = resolve_skill_md(path)
    text = read_text(skill_md)
    try:
        parsed = split_frontmatter(text)
    except FrontmatterProblem as exc:
        where = f":{exc.line}" if exc.line else ""
        raise SkillError(f"{skill_md}{where}: {exc.message}") from exc
    data = parsed.data
    name = data.get("name", folder.name)
    description = data.get("description", "")
    for key, value in (("name", name), ("description", description)):
        if not isinstance(value, str):
            line = parsed.key_lines.get(key)
            raise SkillError(
                f"{skill_md}:{line}: {key} must be a string, not {type(value).__name__}"
            )
    try:
        allowed = declared_allowed_tools(data.get("allowed-tools"))
    except ValueError as exc:
        raise SkillError(f"{skill_md}:{parsed.key_lines.get('allowed-tools')}: {exc}") from exc
    files = skill_files(folder)
    return SkillManifest(
        name=name.strip(),
        description=description.strip(),
        allowed_tools=allowed,
        body=parsed.body,
        path=folder,
        skill_md=skill_md,
        version=skill_version(folder),
        frontmatter=data,
        scripts=list_scripts(parsed.body, folder, files),
    )
