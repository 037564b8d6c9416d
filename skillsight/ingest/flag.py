"""A flag set once from any thread and awaited from any event loop: "this request is durable".

Receivers answer an export only once its rows are durable. Who makes them so runs on another
thread (the spool's syncer after its fsync, the batch writer after its INSERT), and the one
waiting is a coroutine on the HTTP server's loop or on gRPC's. Waiting costs no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

_LOCK = threading.Lock()  # shared: held for a few instructions, by few threads


class FlagFailed(Exception):
    """The flag was set with an error: what it stood for will not happen."""


def _resolve(future: asyncio.Future[None], error: str | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(FlagFailed(error))


class Flag:
    """Set once (or failed once); every waiter, on any loop, then resumes."""

    __slots__ = ("_error", "_set", "_waiters")

    def __init__(self, *, done: bool = False) -> None:
        self._set = done
        self._error: str | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def is_set(self) -> bool:
        return self._set

    def set(self, error: str | None = None) -> None:
        """Mark done (``error``: failed, with why); wakes every waiter. Later calls do nothing."""
        with _LOCK:
            if self._set:
                return
            self._set, self._error = True, error
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there any more
                loop.call_soon_threadsafe(_resolve, future, error)

    async def wait(self, timeout_s: float) -> None:
        """Return once set; :class:`FlagFailed` if set with an error, TimeoutError after
        ``timeout_s``."""
        if not self._set:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            with _LOCK:
                pending = not self._set
                if pending:
                    self._waiters.append((loop, future))
            if pending:
                try:
                    await asyncio.wait_for(future, timeout_s)
                except TimeoutError:
                    with _LOCK:
                        if (loop, future) in self._waiters:
                            self._waiters.remove((loop, future))
                    raise
                return
        if self._error is not None:
            raise FlagFailed(self._error)


DONE = Flag(done=True)
