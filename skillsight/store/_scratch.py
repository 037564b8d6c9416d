"""Scratch folders for the files a statement reads (``file()``), one per user and process.

Each file lives for one statement and need never reach a disk, so a folder goes on tmpfs
(``/dev/shm``) when it has room for a few large batches (containers often give it only
64 MiB), else in the system's temporary folder. A folder's name carries its process id, so
the folders of a process that died without removing its own (``kill -9``) are swept the next
time a folder of the same kind is made.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_SHM = Path("/dev/shm")
_SHM_ROOM = 1 << 30


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _sweep(parent: Path, prefix: str) -> None:
    """Remove the folders of ``prefix`` whose process is gone."""
    try:
        entries = list(parent.glob(f"{prefix}*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def scratch_dir(kind: str, parent: Path | None = None) -> Path:
    """A new folder ``skillsight-<kind>-<pid>-…`` under ``parent`` (made if missing; default:
    tmpfs when it has room, else the temporary folder), after sweeping the dead processes'
    folders of ``kind``. The caller removes it (``shutil.rmtree``) when done. Raises OSError
    when none can be made."""
    if parent is None and _SHM.is_dir() and os.access(_SHM, os.W_OK):
        room = os.statvfs(_SHM)
        if room.f_bavail * room.f_frsize >= _SHM_ROOM:
            parent = _SHM
    parent = parent or Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f"skillsight-{kind}-"
    _sweep(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
