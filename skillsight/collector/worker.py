"""``skillsight worker``: the trace finalizer as a process of its own.

When collectors run as separate processes on a ClickHouse server, rebuilds need not run inside
them: workers poll the store for sessions that got rows (:meth:`Store.touched_sessions`) and
rebuild the completed ones. ``--shard INDEX/COUNT`` splits sessions between workers by a hash of
the session key, without coordination. Run collectors with ``SKILLSIGHT_REBUILD_ENABLED=0`` then.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

from skillsight.collector.finalizer import Finalizer, store_catalogue
from skillsight.collector.store import open_store
from skillsight.config import Settings
from skillsight.errors import ConfigError


def parse_shard(text: str) -> tuple[int, int]:
    """``"1/3"`` -> (1, 3); a clear error for anything else."""
    index, sep, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        shard = (-1, 0)
    if not sep or not 0 <= shard[0] < shard[1]:
        raise ConfigError(f"--shard {text!r}: expected INDEX/COUNT with 0 <= INDEX < COUNT")
    return shard


async def run_worker(
    settings: Settings,
    *,
    shard: tuple[int, int] = (0, 1),
    on_ready: Callable[[], None] | None = None,
    stop: asyncio.Event | None = None,
) -> Finalizer:
    """Rebuild until SIGTERM/SIGINT (or ``stop``); pending sessions are rebuilt on the way out."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    store = await asyncio.to_thread(open_store, settings)
    try:
        finalizer = Finalizer(
            store,
            quiet_s=settings.rebuild_quiet_s,
            max_wait_s=settings.rebuild_max_wait_s,
            settle_s=settings.rebuild_settle_s,
            poll_s=settings.rebuild_poll_s,
            batch_max=settings.rebuild_batch_max,
            catchup_s=settings.rebuild_catchup_s,
            catalogue=store_catalogue(store),
            shard=shard,
        )
        async with finalizer:
            if on_ready is not None:
                on_ready()
            await stop.wait()
        return finalizer
    finally:
        await asyncio.to_thread(store.close)
