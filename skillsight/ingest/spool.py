"""The durable spool: each accepted request on disk, fsync'd, before it is acknowledged.

A request is appended to the current segment file in the spool folder; a syncer thread
``fdatasync``s whatever was appended since its last pass (concurrent requests share one fsync)
and then lets their answers go. Once the batch writer has committed a request's rows it marks
the record done; a segment whose records are all done is deleted. At start-up, records not
marked done are read back and written again — so a crash, ``kill -9`` or power loss costs only
requests that were never answered, which their exporters retry.

A record: ``SKSP`` · seq (u64) · header length (u32) · body length (u32) · CRC-32 of header and
body (u32) · header (JSON: signal, encoding, project, rows) · body (the request as decoded from
gzip). A crash mid-append leaves a torn last record, which the CRC finds; it was never
acknowledged (its fsync had not returned). Records marked done are listed, 8 bytes a sequence
number, in the segment's ``.done`` file (not fsync'd: losing it only means writing a batch twice,
which the tables' deduplication absorbs).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import struct
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from skillsight.errors import ConfigError
from skillsight.ingest.flag import Flag

log = logging.getLogger(__name__)

_MAGIC = b"SKSP"
_HEAD = struct.Struct("<4sQIII")
_SEQ = struct.Struct("<Q")


class Record(NamedTuple):
    """One accepted request as spooled."""

    signal: str
    encoding: str
    project_id: str
    rows: int
    body: bytes


class SpoolFull(Exception):
    """The spool holds ``max_bytes`` already (the store is behind or down)."""


@dataclass
class _Segment:
    number: int
    path: Path
    fd: int | None = None
    size: int = 0
    last_seq: int = 0
    sealed: bool = False
    pending: set[int] = field(default_factory=set)
    done_fd: int | None = None

    @property
    def done_path(self) -> Path:
        return self.path.with_suffix(".done")


def _frame(seq: int, record: Record) -> bytes:
    header = json.dumps(
        [record.signal, record.encoding, record.project_id, record.rows], separators=(",", ":")
    ).encode()
    crc = zlib.crc32(record.body, zlib.crc32(header))
    return _HEAD.pack(_MAGIC, seq, len(header), len(record.body), crc) + header + record.body


def _read_segment(path: Path) -> tuple[list[tuple[int, Record]], int]:
    """The whole records of a segment file and the length they cover."""
    data = path.read_bytes()
    out: list[tuple[int, Record]] = []
    at = 0
    while at + _HEAD.size <= len(data):
        magic, seq, head_len, body_len, crc = _HEAD.unpack_from(data, at)
        end = at + _HEAD.size + head_len + body_len
        if magic != _MAGIC or end > len(data):
            break
        header = data[at + _HEAD.size : at + _HEAD.size + head_len]
        body = data[at + _HEAD.size + head_len : end]
        if zlib.crc32(body, zlib.crc32(header)) != crc:
            break
        signal, encoding, project, rows = json.loads(header)
        out.append((seq, Record(signal, encoding, project, int(rows), body)))
        at = end
    return out, at


def _done_seqs(path: Path) -> set[int]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return set()
    whole = len(data) - len(data) % _SEQ.size
    return {_SEQ.unpack_from(data, i)[0] for i in range(0, whole, _SEQ.size)}


class Spool:
    """Requests on disk until their rows are committed. Thread-safe; one process per folder."""

    def __init__(self, folder: Path, *, max_bytes: int, segment_bytes: int = 64 << 20) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.failed = ""  # an fsync failed: nothing more is acknowledged from this spool
        folder.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(folder / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._lock_fd)
            raise ConfigError(
                f"the spool folder {folder} is in use by another process; give each process "
                "its own (SKILLSIGHT_SPOOL_DIR)"
            ) from exc
        self._cond = threading.Condition()
        self._segments: dict[int, _Segment] = {}
        self._segment_of: dict[int, int] = {}
        self._current: _Segment | None = None
        self._next_seq = 1
        self._synced_seq = 0
        self._unsynced: list[tuple[int, Flag]] = []
        self._unsynced_rows = 0
        self._dirty: set[int] = set()
        self._dir_dirty = False
        self._bytes = 0
        self._closing = False
        self._thread: threading.Thread | None = None

    # -- start-up -------------------------------------------------------------------------

    def recover(self) -> list[tuple[int, Record]]:
        """Records a previous process accepted and never saw committed, oldest first."""
        found: list[tuple[int, Record]] = []
        for path in sorted(self.folder.glob("seg-*.log"), key=lambda p: int(p.stem[4:])):
            segment = _Segment(int(path.stem[4:]), path, sealed=True)
            records, length = _read_segment(path)
            if length < path.stat().st_size:
                log.warning(
                    "spool %s: a torn record past byte %d was never acknowledged", path, length
                )
            done = _done_seqs(segment.done_path)
            for seq, record in records:
                self._next_seq = max(self._next_seq, seq + 1)
                segment.last_seq = max(segment.last_seq, seq)
                if seq not in done:
                    segment.pending.add(seq)
                    self._segment_of[seq] = segment.number
                    found.append((seq, record))
            segment.size = path.stat().st_size
            if segment.pending:
                self._segments[segment.number] = segment
                self._bytes += segment.size
            else:
                path.unlink(missing_ok=True)
                segment.done_path.unlink(missing_ok=True)
        self._synced_seq = self._next_seq - 1
        return found

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._sync_loop, name="skillsight-spool", daemon=True
        )
        self._thread.start()

    # -- the request path -----------------------------------------------------------------

    def append(self, record: Record) -> tuple[int, Flag]:
        """Write ``record``; returns its sequence number and a flag set once it is on disk.

        Raises :class:`SpoolFull` past ``max_bytes`` and ``OSError`` when the disk refuses.
        """
        flag = Flag()
        with self._cond:
            if self.failed or self._closing:
                raise OSError(self.failed or "the spool is closing")
            seq = self._next_seq
            frame = _frame(seq, record)
            if self._bytes + len(frame) > self.max_bytes and self._bytes > 0:
                raise SpoolFull(f"the spool holds {self._bytes} of {self.max_bytes} bytes")
            segment = self._current or self._new_segment()
            view = memoryview(frame)
            while view:
                assert segment.fd is not None
                view = view[os.write(segment.fd, view) :]
            self._next_seq += 1
            segment.size += len(frame)
            segment.last_seq = seq
            segment.pending.add(seq)
            self._segment_of[seq] = segment.number
            self._bytes += len(frame)
            self._unsynced.append((seq, flag))
            self._unsynced_rows += record.rows
            self._dirty.add(segment.number)
            if segment.size >= self.segment_bytes:
                segment.sealed = True
                self._current = None
            self._cond.notify()
        return seq, flag

    def done(self, seqs: Iterable[int]) -> None:
        """The rows of these records are committed: forget them."""
        with self._cond:
            for seq in seqs:
                number = self._segment_of.pop(seq, None)
                segment = self._segments.get(number) if number is not None else None
                if segment is None:
                    continue
                segment.pending.discard(seq)
                if not self._collect(segment):
                    if segment.done_fd is None:
                        flags = os.O_CREAT | os.O_WRONLY | os.O_APPEND
                        segment.done_fd = os.open(segment.done_path, flags, 0o600)
                    os.write(segment.done_fd, _SEQ.pack(seq))

    # -- state ----------------------------------------------------------------------------

    @property
    def held_bytes(self) -> int:
        return self._bytes

    @property
    def unsynced_rows(self) -> int:
        """Rows appended and not yet on disk: what a power loss now would cost (their
        requests are not answered yet)."""
        return self._unsynced_rows

    @property
    def pending_records(self) -> int:
        return len(self._segment_of)

    def close(self) -> None:
        """Sync what was appended, stop the syncer, close files; records not done stay."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(30)
        with self._cond:
            for segment in self._segments.values():
                for fd in (segment.fd, segment.done_fd):
                    if fd is not None:
                        os.close(fd)
                segment.fd = segment.done_fd = None
            self._segments.clear()
        os.close(self._lock_fd)

    # -- inside ---------------------------------------------------------------------------

    def _new_segment(self) -> _Segment:
        number = max(self._segments, default=0) + 1
        path = self.folder / f"seg-{number}.log"
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o600)
        segment = _Segment(number, path, fd)
        self._segments[number] = segment
        self._current = segment
        self._dir_dirty = True
        return segment

    def _collect(self, segment: _Segment) -> bool:
        """Delete ``segment`` if nothing in it is pending and all of it is on disk (lock held)."""
        if segment.pending or segment.last_seq > self._synced_seq:
            return False
        for fd in (segment.fd, segment.done_fd):
            if fd is not None:
                os.close(fd)
        segment.fd = segment.done_fd = None
        segment.path.unlink(missing_ok=True)
        segment.done_path.unlink(missing_ok=True)
        del self._segments[segment.number]
        self._bytes -= segment.size
        if self._current is segment:
            self._current = None
        return True

    def _sync_loop(self) -> None:
        dir_fd = os.open(self.folder, os.O_RDONLY)
        try:
            while True:
                with self._cond:
                    while not self._unsynced and not self._closing:
                        self._cond.wait()
                    if not self._unsynced and self._closing:
                        return
                    batch, self._unsynced = self._unsynced, []
                    self._unsynced_rows = 0
                    fds = [self._segments[n].fd for n in self._dirty if n in self._segments]
                    self._dirty.clear()
                    sync_dir, self._dir_dirty = self._dir_dirty, False
                try:
                    for fd in fds:
                        if fd is not None:
                            os.fdatasync(fd)
                    if sync_dir:
                        os.fsync(dir_fd)
                except OSError as exc:
                    self.failed = f"the spool cannot be synced to disk: {exc}"
                    log.error("%s", self.failed)
                    for _, flag in batch:
                        flag.set(self.failed)
                    continue
                with self._cond:
                    self._synced_seq = max(self._synced_seq, batch[-1][0])
                    for segment in list(self._segments.values()):
                        synced = segment.last_seq <= self._synced_seq
                        if segment.sealed and segment.fd is not None and synced:
                            os.close(segment.fd)
                            segment.fd = None
                        self._collect(segment)
                for _, flag in batch:
                    flag.set()
        finally:
            os.close(dir_fd)
