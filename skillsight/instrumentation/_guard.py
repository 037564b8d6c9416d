"""Telemetry never breaks the host: instrumentation errors are logged and swallowed.

Every hook, wrapper and message handler of the instrumentors runs its own body inside
:func:`guarded` (or under :func:`guard`). An exception there is logged once with its traceback and
the agent runs on. Under ``SKILLSIGHT_INSTRUMENTATION_STRICT=1`` (the test suite sets it) the
exception is re-raised instead, so instrumentation bugs fail tests rather than vanish in a log.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["STRICT_ENV", "guard", "guarded", "is_strict"]

STRICT_ENV = "SKILLSIGHT_INSTRUMENTATION_STRICT"

logger = logging.getLogger("skillsight.instrumentation")

P = ParamSpec("P")
R = TypeVar("R")


def is_strict() -> bool:
    """Whether instrumentation errors are re-raised (read each time: tests flip it)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


@contextmanager
def guard(what: str) -> Iterator[None]:
    """Run a block of instrumentation code; log (or, when strict, raise) what it raises."""
    try:
        yield
    except Exception:
        if is_strict():
            raise
        logger.exception("skillsight instrumentation failed in %s; the agent continues", what)


def guarded(default: R) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator form of :func:`guard`: a failing call returns ``default`` instead."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return func(*args, **kwargs)
            except Exception:
                if is_strict():
                    raise
                logger.exception(
                    "skillsight instrumentation failed in %s; the agent continues",
                    func.__qualname__,
                )
                return default

        return wrapper

    return decorate
