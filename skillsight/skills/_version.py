"""The content version of a skill folder: a SHA-256 over its files, the same on every machine."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from skillsight.errors import SkillError

_IGNORED_DIRS = frozenset({"__pycache__", ".git"})
_IGNORED_SUFFIXES = (".pyc",)


def skill_files(folder: Path) -> list[str]:
    """Relative POSIX paths of the folder's regular files, sorted, caches and VCS data left out.

    Symbolic links to directories are not followed, so a link loop cannot hang the walk.
    """
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in _IGNORED_DIRS]
        base = Path(dirpath)
        for name in filenames:
            if name.endswith(_IGNORED_SUFFIXES):
                continue
            path = base / name
            if path.is_file():
                found.append(path.relative_to(folder).as_posix())
    # sorted on the UTF-8 bytes, not on the locale, so every machine agrees
    return sorted(found, key=lambda p: p.encode("utf-8"))


def skill_version(folder: str | os.PathLike[str]) -> str:
    """SHA-256 hex of every regular file in ``folder``: its relative path, length and bytes.

    Each file is framed as ``path NUL length NUL bytes`` so that moving bytes between the name and
    the content of neighbouring files cannot produce the same digest.
    """
    root = Path(folder)
    if not root.is_dir():
        raise SkillError(f"{root} is not a directory; a skill version is computed over a folder")
    digest = hashlib.sha256()
    for rel in skill_files(root):
        try:
            data = (root / rel).read_bytes()
        except OSError as exc:
            raise SkillError(f"cannot read {root / rel} to version the skill: {exc}") from exc
        digest.update(rel.encode("utf-8"))
        digest.update(b"\0")
        digest.update(str(len(data)).encode("ascii"))
        digest.update(b"\0")
        digest.update(data)
    return digest.hexdigest()
