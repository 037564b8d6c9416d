"""``skillsight bench rebuild --prompts``: a Claude Code session of many prompts.

Claude Code sends one trace per prompt, complete when its root span arrives, and every complete
prompt makes the finalizer rebuild the session. This replays a session of ``prompts`` prompts of
``steps`` steps each (:func:`benchmarks.sessions.synthetic_session`, one trace a prompt, each
prompt after the one before): after each prompt's rows are in, the session is rebuilt as the
finalizer rebuilds it (:func:`rebuild_sessions`, in this one process, so its row cache carries
over from one prompt to the next as in ``skillsight serve``, and each rebuild extends the one
before by the new prompt). The total CPU of those rebuilds is compared with one rebuild of the
whole session by a fresh process (no cache), split into the store's reads, the algorithm and the
writes; the same replay with the row cache but every rebuild whole, and with neither, say what
each part gives.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.rebuild import raw_tables
from benchmarks.rebuild_long import whole_rebuild_cpu_s
from benchmarks.sessions import synthetic_session
from skillsight.rebuild import session as algorithm_module
from skillsight.rebuild.finalizer import SessionRowCache, default_rebuild, rebuild_sessions
from skillsight.store import EmbeddedStore

PROJECT = "prompts"
KEY = "00000000-0000-4000-8000-0000prompts0"
_GAP_NS = 60_000_000_000  # a minute between two prompts
T = TypeVar("T")


def prompt_rows(
    index: int, steps: int, session_id: str = KEY, *, seed: int = 1000
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of a session's ``index``-th prompt: its own trace (from ``seed + index``),
    request and prompt ids, and times after the prompts before it."""
    spans, events = synthetic_session(
        steps, skill_every=10, seed=seed + index, session_id=session_id
    )
    shift = index * ((steps + 2) * 100_000_000 + _GAP_NS)
    for span in spans:
        span["start_time_unix_nano"] += shift
        span["end_time_unix_nano"] += shift
        attributes = span["attributes"]
        if "request_id" in attributes:
            attributes["request_id"] = f"p{index}_{attributes['request_id']}"
    for event in events:
        event["time_unix_nano"] += shift
        event["prompt_id"] = f"p{index}"
        attributes = event["attributes"]
        if "request_id" in attributes:
            attributes["request_id"] = f"p{index}_{attributes['request_id']}"
        if "prompt.id" in attributes:
            attributes["prompt.id"] = f"p{index}"
    return spans, events


class CpuClock:
    """CPU seconds spent inside the wrapped calls (process time: every thread's)."""

    def __init__(self) -> None:
        self.cpu = 0.0

    def wrap(self, fn: Callable[..., T]) -> Callable[..., T]:
        def timed(*args: Any, **kwargs: Any) -> T:
            started = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu += time.process_time() - started

        return timed


MODES = ("extended", "cached", "whole")


def run_many_prompts_bench(
    *, prompts: int = 20, steps: int = 50, mode: str = "extended"
) -> dict[str, Any]:
    """Rebuild work of a session rebuilt after each of ``prompts`` prompts, against one
    rebuild of the whole session, split into the algorithm, the writes and the rest (the
    reads and the look at its span ids). ``mode``: ``extended`` as the finalizer runs (the row
    cache, and each rebuild extending the one before), ``cached`` the row cache with every
    rebuild whole, ``whole`` the session read and rebuilt whole every time."""
    if mode not in MODES:
        raise ValueError(f"mode is one of {', '.join(MODES)}")
    algorithm, write = CpuClock(), CpuClock()
    rebuild = None if mode == "extended" else algorithm.wrap(default_rebuild())
    extend = algorithm_module.rebuild_or_extend
    algorithm_module.rebuild_or_extend = algorithm.wrap(extend)
    ident = (PROJECT, KEY)
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-prompts-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            # one writer: no overlap
            cache = SessionRowCache(overlap_us=0) if mode != "whole" else None
            cpu, rows_in, rows_read, watermark, through, activations = 0.0, 0, 0, 0, 0, 0
            writes = store.rebuilds.write
            store.rebuilds.write = write.wrap(writes)  # type: ignore[method-assign]
            for index in range(prompts):
                spans, events = raw_tables(PROJECT, *prompt_rows(index, steps))
                store.spans.insert(spans)
                store.events.insert(events)
                rows_in += spans.num_rows + events.num_rows
                rows_read += rows_in  # a whole read after each prompt (the cache counts its own)
                for arrival in store.sessions.arrivals(watermark):  # discovery: not counted
                    watermark = max(watermark, arrival.last_ingested_us)
                    if arrival.session_key == KEY:
                        through = arrival.last_ingested_us
                started = time.process_time()
                outcomes, _ = rebuild_sessions(
                    store,
                    [(PROJECT, KEY, through)],
                    rebuild=rebuild,
                    require_complete={ident},
                    cache=cache,
                )
                cpu += time.process_time() - started
                rebuilt = outcomes[0].rebuilt
                assert rebuilt is not None, outcomes[0]
                activations = len(rebuilt.activations)
            if cache is not None:
                rows_read = cache.stats.rows_read
            split = {"algorithm_cpu_s": algorithm.cpu, "write_cpu_s": write.cpu}
            store.rebuilds.write = writes  # type: ignore[method-assign]
            one = whole_rebuild_cpu_s(store, PROJECT, KEY, default_rebuild())
            extended = cache.stats.extended if cache is not None else 0
        finally:
            algorithm_module.rebuild_or_extend = extend
            store.close()
    return {
        "prompts": prompts,
        "steps_per_prompt": steps,
        "mode": mode,
        "extended": extended,
        "activations": activations,
        "rows_read": rows_read,
        "total_cpu_s": round(cpu, 2),
        "read_cpu_s": round(cpu - sum(split.values()), 2),
        **{name: round(value, 2) for name, value in split.items()},
        "one_rebuild_cpu_s": round(one, 3),
        "ratio": round(cpu / one, 2),
    }
