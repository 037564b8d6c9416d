"""The durable spool on its own: what a crash leaves is read back, nothing more and nothing less.

Records appended and synced come back after the process is gone unless marked done; a torn
last record (a crash mid-append, never acknowledged) is ignored; a segment whose records are all
done is deleted; one process per folder; a full spool refuses rather than grows. Also the flag
receivers wait on, and the per-project limiter.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from skillsight.errors import ConfigError
from skillsight.ingest.flag import Flag, FlagFailed
from skillsight.ingest.limits import PerProject, ProjectLimiter, RateLimited
from skillsight.ingest.spool import Record, Spool, SpoolFull


def record(n: int, size: int = 100) -> Record:
    return Record("traces", "protobuf", f"p{n % 2}", n, bytes([n % 256]) * size)


def synced(spool: Spool, flags: list[Flag]) -> None:
    async def wait() -> None:
        for flag in flags:
            await flag.wait(10)

    asyncio.run(wait())


def test_records_not_done_come_back_after_the_process_is_gone(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1 << 20, segment_bytes=350)  # a few records a segment
    spool.start()
    appended = [spool.append(record(n)) for n in range(10)]
    synced(spool, [flag for _, flag in appended])
    spool.done([appended[i][0] for i in (0, 1, 2, 5)])
    spool.close()
    assert len(list(tmp_path.glob("seg-*.log"))) < 4  # the first segment, all done, is gone

    again = Spool(tmp_path, max_bytes=1 << 20, segment_bytes=350)
    found = again.recover()
    assert [r.rows for _, r in found] == [3, 4, 6, 7, 8, 9]
    assert found[0][1] == record(3)
    again.start()
    seq, flag = again.append(record(42))
    assert seq > max(s for s, _ in found)  # numbering goes on, never reused
    synced(again, [flag])
    again.done([s for s, _ in found] + [seq])
    again.close()
    assert list(tmp_path.glob("seg-*")) == []  # everything done: nothing left


def test_a_torn_last_record_was_never_acknowledged_and_is_ignored(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1 << 20)
    spool.start()
    flags = [spool.append(record(n))[1] for n in range(3)]
    synced(spool, flags)
    spool.close()
    segment = next(tmp_path.glob("seg-*.log"))
    size = segment.stat().st_size
    with segment.open("r+b") as out:
        out.truncate(size - 7)  # the crash cut the last record short
    reopened = Spool(tmp_path, max_bytes=1 << 20)
    assert [r.rows for _, r in reopened.recover()] == [0, 1]
    reopened.close()
    with segment.open("r+b") as out:
        out.seek(size // 2)  # inside the second record
        out.write(b"\xff" * 10)  # garbage where its bytes should be: its CRC fails
    reopened = Spool(tmp_path, max_bytes=1 << 20)
    assert [r.rows for _, r in reopened.recover()] == [0]
    reopened.close()


def test_one_process_per_folder(tmp_path: Path) -> None:
    first = Spool(tmp_path, max_bytes=1 << 20)
    with pytest.raises(ConfigError, match="SKILLSIGHT_SPOOL_DIR"):
        Spool(tmp_path, max_bytes=1 << 20)
    first.close()
    Spool(tmp_path, max_bytes=1 << 20).close()


def test_a_full_spool_refuses_and_frees_room_as_records_are_done(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1000, segment_bytes=250)
    spool.start()
    taken = []
    with pytest.raises(SpoolFull):
        while True:
            taken.append(spool.append(record(len(taken), 200)))
    assert 2 <= len(taken) <= 5
    synced(spool, [flag for _, flag in taken])
    spool.done([seq for seq, _ in taken])
    spool.append(record(99, 200))  # room again
    spool.close()


def test_a_failed_sync_fails_the_waiting_answers(tmp_path: Path) -> None:
    flag = Flag()
    flag.set("the spool cannot be synced to disk: EIO")

    async def wait() -> None:
        await flag.wait(1)

    with pytest.raises(FlagFailed, match="EIO"):
        asyncio.run(wait())
    unset = Flag()
    with pytest.raises(TimeoutError):
        asyncio.run(unset.wait(0.01))


def test_records_are_synced_before_their_flag_is_set(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1 << 20)
    spool.start()
    seq, flag = spool.append(record(1, 5000))
    synced(spool, [flag])
    # on disk, whole, for a reader that is not this process
    size = os.stat(next(tmp_path.glob("seg-*.log"))).st_size
    assert size > 5000 and spool.unsynced_rows == 0 and spool.pending_records == 1
    spool.done([seq])
    spool.close()


def test_limits_per_project() -> None:
    limiter = ProjectLimiter(
        PerProject.parse("100,big=1000", "RATE"), PerProject.parse("", "QUOTA"), burst_s=1
    )
    limiter.admit("small", 500)  # a quiet project's bucket lets one large request through
    with pytest.raises(RateLimited) as refused:
        limiter.admit("small", 1)
    assert 1 < refused.value.retry_after_s < 10
    limiter.admit("big", 900)  # another project, its own bucket
    limiter.refund("small", 500)
    limiter.admit("small", 10)
    with pytest.raises(ConfigError, match="project=number"):
        PerProject.parse("team-a=lots", "SKILLSIGHT_PROJECT_RATE_LIMIT")
    quota = ProjectLimiter(PerProject(), PerProject.parse("team=10", "QUOTA"))
    quota.admit("team", 10)
    with pytest.raises(RateLimited, match="used 10 of its 10"):
        quota.admit("team", 1)
    quota.admit("other", 10**6)  # no quota for other projects
