"""The rebuild pass's collector pause: counted across threads, restored as it was found."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from skillsight.rebuild._gc_pause import gc_paused


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_paused_inside_restored_after_even_on_error() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a failing pass")
    assert gc.isenabled()


def test_overlapping_passes_in_threads_re_enable_at_the_last_end() -> None:
    gc.enable()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gc_paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with gc_paused():
            second_in.set()
            first_out.wait(10)
            seen.append(gc.isenabled())  # the first pass ended; this one still runs
        seen.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [False, True]


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()
