"""Skill folders as one archive, and back: how a catalogue travels to a service elsewhere.

``skillsight skills scan DIR --api URL`` packs the skill folders it found into a gzipped tar
(each folder under its own name, the files :func:`skill_version` hashes, nothing else); the
service unpacks it into a fresh directory and scans that with the same rules, so the versions
and violations it records are the ones the local scan printed. Unpacking refuses what a hostile
archive could do: absolute names, ``..``, links, devices, and more files or bytes than a skill
folder has any business holding.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from skillsight.errors import SkillError
from skillsight.skills._version import skill_files

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_ARCHIVE_FILES",
    "MAX_UNPACKED_BYTES",
    "pack_skills",
    "unpack_skills",
]

MAX_ARCHIVE_BYTES = 8 * 1024 * 1024
"""The largest archive accepted (as sent)."""
MAX_UNPACKED_BYTES = 32 * 1024 * 1024
"""The most bytes its files may hold in all."""
MAX_ARCHIVE_FILES = 2000


def pack_skills(folders: Sequence[Path]) -> bytes:
    """A gzipped tar of ``folders``, each under its own name; deterministic (sorted, no times)."""
    names = [folder.name for folder in folders]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SkillError(f"two skill folders share a name, pack them apart: {', '.join(twice)}")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for folder in sorted(folders, key=lambda f: f.name):
            for relative in skill_files(folder):
                data = (folder / relative).read_bytes()
                info = tarfile.TarInfo(f"{folder.name}/{relative}")
                info.size = len(data)
                info.mode = 0o755 if (folder / relative).stat().st_mode & 0o111 else 0o644
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _member_path(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or "\\" in name:
        raise SkillError(f"archive member {name!r} is not a relative path inside the archive")
    return path


def _write(dest: Path, name: str, data: bytes, budget: list[int]) -> None:
    budget[0] -= 1
    budget[1] -= len(data)
    if budget[0] < 0:
        raise SkillError(f"the archive holds more than {MAX_ARCHIVE_FILES} files")
    if budget[1] < 0:
        raise SkillError(f"the archive unpacks to more than {MAX_UNPACKED_BYTES} bytes")
    target = dest.joinpath(*_member_path(name).parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def unpack_skills(data: bytes, dest: Path) -> None:
    """Unpack a gzipped (or plain) tar or a zip of skill folders into ``dest``; a
    :class:`SkillError` says why an archive is refused."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise SkillError(f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")
    budget = [MAX_ARCHIVE_FILES, MAX_UNPACKED_BYTES]
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for entry in archive.infolist():
                    if entry.is_dir():
                        continue
                    if entry.file_size > MAX_UNPACKED_BYTES:
                        raise SkillError(f"{entry.filename} is too large")
                    _write(dest, entry.filename, archive.read(entry), budget)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise SkillError(f"not a readable zip archive: {exc}") from exc
        return
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                if member.isdir():
                    continue
                if not member.isfile():
                    raise SkillError(f"archive member {member.name!r} is not a regular file")
                if member.size > MAX_UNPACKED_BYTES:
                    raise SkillError(f"{member.name} is too large")
                extracted = archive.extractfile(member)
                if extracted is None:
                    raise SkillError(f"archive member {member.name!r} cannot be read")
                _write(dest, member.name, extracted.read(), budget)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SkillError(f"not a readable tar or zip archive: {exc}") from exc
