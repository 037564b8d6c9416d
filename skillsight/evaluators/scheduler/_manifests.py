"""The skill's manifest an activation is judged by: its SKILL.md when readable on this machine
(the catalogue's source URI, else the activation's contract), else the SKILL.md the catalogue
recorded (a catalogue pushed from elsewhere: ``POST /api/v1/skills``), and only when it is the
version the activation ran (a folder changed since: judged by the record alone).

Thread-safe: worker threads of the scheduler ask at the same time.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

from skillsight.errors import SkillError
from skillsight.skills import SkillManifest, load_skill
from skillsight.store import SkillEntry
from skillsight.store.records import Activation

log = logging.getLogger(__name__)

_RECORDED_MAX = 4096  # catalogue entries whose recorded manifest is kept


@lru_cache(maxsize=4096)
def skill_folder(source_uri: str) -> Path | None:
    """The local folder a ``file:`` URI (or absolute path) of a skill names, if any (kept per
    URI: each activation handed over asks it of its skill's, and a path is parsed in ~6 µs)."""
    if not source_uri:
        return None
    path = unquote(urlsplit(source_uri).path) if source_uri.startswith("file:") else source_uri
    if not path.startswith("/"):
        return None
    folder = Path(path)
    return folder.parent if folder.name == "SKILL.md" else folder


@lru_cache(maxsize=4096)
def _skill_md(folder: Path) -> Path:
    return folder / "SKILL.md"


def recorded_manifest(entry: SkillEntry) -> SkillManifest | None:
    """The skill as the catalogue recorded it (frontmatter, body, scripts, version), for a
    folder this machine cannot read; None when the entry lacks the body."""
    body = entry.get("body")
    if body is None:
        return None
    uri = str(entry.get("source_uri") or "")
    folder = skill_folder(uri) or Path("/") / str(entry["name"])
    return SkillManifest(
        name=str(entry["name"]),
        description=str(entry.get("description") or ""),
        allowed_tools=entry.get("allowed_tools"),
        body=str(body),
        path=folder,
        skill_md=folder / "SKILL.md",
        version=str(entry.get("version") or ""),
        frontmatter=dict(entry.get("frontmatter") or {}),
        scripts=list(entry.get("scripts") or []),
    )


class SkillManifests:
    """Manifests loaded from folders (kept per folder and SKILL.md modification time) and
    from catalogue entries (kept per entry object: one entry serves every activation of its
    skill until the catalogue is read again; the entry kept here keeps its id its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[tuple[Path, int], SkillManifest | None] = {}
        self._recorded: dict[int, tuple[SkillEntry, SkillManifest | None]] = {}

    def of(self, activation: Activation, entry: SkillEntry | None) -> SkillManifest | None:
        """The manifest ``activation`` is judged by, given its skill's catalogue entry."""
        uri = entry["source_uri"] if entry is not None else ""
        if not uri and activation.contract is not None:
            uri = activation.contract.source_uri
        manifest = self._loaded_from(skill_folder(uri))
        if manifest is None and entry is not None:
            manifest = self._recorded_in(entry)  # the folder is not on this machine
        if (
            manifest is not None
            and activation.skill_version
            and manifest.version != activation.skill_version
        ):
            return None  # the folder changed since it ran: judge by the record alone
        return manifest

    def _recorded_in(self, entry: SkillEntry) -> SkillManifest | None:
        with self._lock:
            kept = self._recorded.get(id(entry))
        if kept is not None and kept[0] is entry:
            return kept[1]
        manifest = recorded_manifest(entry)
        with self._lock:
            if len(self._recorded) >= _RECORDED_MAX:  # catalogues read again since
                self._recorded.clear()
            self._recorded[id(entry)] = (entry, manifest)
        return manifest

    def _loaded_from(self, folder: Path | None) -> SkillManifest | None:
        if folder is None:
            return None
        try:
            stamp = _skill_md(folder).stat().st_mtime_ns
        except OSError:
            return None
        key = (folder, stamp)
        with self._lock:
            if key in self._loaded:
                return self._loaded[key]
        try:
            manifest: SkillManifest | None = load_skill(folder)
        except (SkillError, OSError) as exc:
            log.warning("cannot load the skill in %s: %s", folder, exc)
            manifest = None
        with self._lock:
            self._loaded[key] = manifest
        return manifest
