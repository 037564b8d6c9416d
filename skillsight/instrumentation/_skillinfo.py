"""Fill an activation's ``gen_ai.skill.*`` from the skill's SKILL.md on disk.

Parsing and versioning belong to :mod:`skillsight.skills`; this module only finds the folder
(project, user and plugin skills, as Claude Code does) and turns the manifest into a
:class:`SkillInfo`. A skill that cannot be found or read still gets an activation, named only.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from skillsight.errors import SkillError
from skillsight.instrumentation._spans import SkillInfo
from skillsight.skills import find_skill_dir, load_skill

__all__ = ["SkillCache", "SkillResolver", "skill_md_name"]

logger = logging.getLogger("skillsight.instrumentation")

_UNVERSIONED_DIRS = frozenset({"__pycache__", ".git"})
_SKILL_MD_PATH = re.compile(r"(?:^|[/\\])skills[/\\]([^/\\]+)[/\\]SKILL\.md$")


def skill_md_name(path: str) -> str | None:
    """The skill named by a ``…/skills/<name>/SKILL.md`` path, else None."""
    match = _SKILL_MD_PATH.search(path)
    return match.group(1) if match else None


def _signature(folder: Path) -> tuple[tuple[str, int, int], ...] | None:
    """Path, size and mtime of every file: what changes whenever the content version does."""
    entries: list[tuple[str, int, int]] = []
    try:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if d not in _UNVERSIONED_DIRS]
            for name in filenames:
                stat = os.stat(os.path.join(dirpath, name))
                entries.append((os.path.join(dirpath, name), stat.st_size, stat.st_mtime_ns))
    except OSError:
        return None
    return tuple(sorted(entries))


class SkillCache:
    """Parsed skills shared by the sessions of one instrumentor, re-read when a file changes.

    Parsing SKILL.md and hashing the folder cost milliseconds; a session starting every few
    seconds would pay it each time. Entries are keyed by the folder's file signature, so an
    edited skill is never served stale. Bounded; thread-safe.
    """

    def __init__(self, max_entries: int = 256) -> None:
        self._max_entries = max_entries
        self._entries: dict[Path, tuple[object, SkillInfo | None]] = {}
        self._lock = threading.Lock()

    def info(self, folder: Path, name: str | None) -> SkillInfo | None:
        """The skill in ``folder`` (see :func:`info_from_dir`), from cache when unchanged."""
        signature = _signature(folder)
        key = folder.absolute()
        with self._lock:
            cached = self._entries.get(key)
        if cached is not None and signature is not None and cached[0] == signature:
            info = cached[1]
        else:
            info = _read_info(folder)
            with self._lock:
                if len(self._entries) >= self._max_entries:
                    self._entries.pop(next(iter(self._entries)))
                self._entries[key] = (signature, info)
        if info is not None and name is not None and info.name != name:
            info = dataclasses.replace(info, name=name)
        return info


def info_from_dir(folder: str | os.PathLike[str], name: str | None = None) -> SkillInfo | None:
    """The skill in ``folder``, or None when it has no readable SKILL.md."""
    info = _read_info(Path(folder))
    if info is not None and name is not None and info.name != name:
        info = dataclasses.replace(info, name=name)
    return info


def _read_info(folder: Path) -> SkillInfo | None:
    try:
        manifest = load_skill(folder)
    except (SkillError, OSError) as exc:
        logger.debug("skill folder %s not readable: %s", folder, exc)
        return None
    return SkillInfo(
        name=manifest.name,
        description=manifest.description,
        version=manifest.version,
        source_uri=manifest.path.absolute().as_uri(),
        allowed_tools=manifest.allowed_tools,
    )


class SkillResolver:
    """Looks skills up by name (or SKILL.md path) for one session; remembers what it found."""

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        extra_dirs: Iterable[str | os.PathLike[str]] = (),
        cache: SkillCache | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.extra_dirs = tuple(extra_dirs)
        self._cache = cache
        self._by_name: dict[str, SkillInfo] = {}

    def _info(self, folder: str | os.PathLike[str], name: str) -> SkillInfo | None:
        if self._cache is not None:
            return self._cache.info(Path(folder), name)
        return info_from_dir(folder, name)

    def by_name(self, name: str) -> SkillInfo:
        """The skill called ``name`` as found on disk, or a bare :class:`SkillInfo`."""
        known = self._by_name.get(name)
        if known is not None:
            return known
        folder = find_skill_dir(name, cwd=self.cwd, extra_dirs=self.extra_dirs)
        info = (self._info(folder, name) if folder is not None else None) or SkillInfo(name)
        self._by_name[name] = info
        return info

    def by_dir(self, folder: str | os.PathLike[str], name: str) -> SkillInfo:
        """The skill in ``folder`` (e.g. a SKILL.md the agent read), remembered under ``name``."""
        info = self._info(folder, name) or self.by_name(name)
        self._by_name[name] = info
        return info

    def description(self, name: str) -> str | None:
        """The description of a skill the agent can see (None when not on disk)."""
        return self.by_name(name).description
