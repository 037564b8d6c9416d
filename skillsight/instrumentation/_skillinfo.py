"""Fill an activation's ``gen_ai.skill.*`` from the skill's SKILL.md on disk.

Parsing and versioning belong to :mod:`skillsight.skills`; this module only finds the folder
(project, user and plugin skills, as Claude Code does) and turns the manifest into a
:class:`SkillInfo`. A skill that cannot be found or read still gets an activation, named only.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

from skillsight.errors import SkillError
from skillsight.instrumentation._spans import SkillInfo
from skillsight.skills import find_skill_dir, load_skill

__all__ = ["SkillResolver", "skill_md_name"]

logger = logging.getLogger("skillsight.instrumentation")

_SKILL_MD_PATH = re.compile(r"(?:^|[/\\])skills[/\\]([^/\\]+)[/\\]SKILL\.md$")


def skill_md_name(path: str) -> str | None:
    """The skill named by a ``…/skills/<name>/SKILL.md`` path, else None."""
    match = _SKILL_MD_PATH.search(path)
    return match.group(1) if match else None


def info_from_dir(folder: str | os.PathLike[str], name: str | None = None) -> SkillInfo | None:
    """The skill in ``folder``, or None when it has no readable SKILL.md."""
    try:
        manifest = load_skill(folder)
    except (SkillError, OSError) as exc:
        logger.debug("skill folder %s not readable: %s", folder, exc)
        return None
    return SkillInfo(
        name=name or manifest.name,
        description=manifest.description,
        version=manifest.version,
        source_uri=manifest.path.absolute().as_uri(),
        allowed_tools=manifest.allowed_tools,
    )


class SkillResolver:
    """Looks skills up by name (or SKILL.md path) for one session; remembers what it found."""

    def __init__(
        self, cwd: str | os.PathLike[str], extra_dirs: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
        self.cwd = Path(cwd)
        self.extra_dirs = tuple(extra_dirs)
        self._by_name: dict[str, SkillInfo] = {}

    def by_name(self, name: str) -> SkillInfo:
        """The skill called ``name`` as found on disk, or a bare :class:`SkillInfo`."""
        known = self._by_name.get(name)
        if known is not None:
            return known
        folder = find_skill_dir(name, cwd=self.cwd, extra_dirs=self.extra_dirs)
        info = (info_from_dir(folder, name) if folder is not None else None) or SkillInfo(name)
        self._by_name[name] = info
        return info

    def by_dir(self, folder: str | os.PathLike[str], name: str) -> SkillInfo:
        """The skill in ``folder`` (e.g. a SKILL.md the agent read), remembered under ``name``."""
        info = info_from_dir(folder, name) or self.by_name(name)
        self._by_name[name] = info
        return info

    def description(self, name: str) -> str | None:
        """The description of a skill the agent can see (None when not on disk)."""
        return self.by_name(name).description
