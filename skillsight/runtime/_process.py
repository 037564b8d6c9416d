"""Running a process's background services until it is told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

from skillsight.config import Settings
from skillsight.runtime._services import Role, Services, build_services


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set ``stop`` on SIGTERM or SIGINT (where the loop can take signal handlers)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)


async def run_services(
    settings: Settings,
    *,
    role: Role | str,
    shard: tuple[int, int] | None = None,
    on_ready: Callable[[Services], None] | None = None,
    stop: asyncio.Event | None = None,
) -> Services:
    """Run the role's services (no listeners) until SIGTERM/SIGINT or ``stop``; leaving drains
    them in order. Returns them, stopped, for their final counters."""
    stop = stop or asyncio.Event()
    stop_on_signals(stop)
    async with build_services(settings, role=role, shard=shard, warm_up=True) as services:
        if on_ready is not None:
            on_ready(services)
        await stop.wait()
    return services


def parse_shard(text: str) -> tuple[int, int]:
    """``"1/3"`` -> (1, 3); a clear error for anything else."""
    from skillsight.errors import ConfigError

    index, sep, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        shard = (-1, 0)
    if not sep or not 0 <= shard[0] < shard[1]:
        raise ConfigError(f"expected INDEX/COUNT with 0 <= INDEX < COUNT, not {text!r}")
    return shard
