"""A session rebuilt again reads only its new rows (``SessionRowCache``), and rebuilds exactly
what a full read would: after each prompt, after a newer copy of a span, when a trace joins the
session late, when a row names another session, and when the cache is full."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from benchmarks.rebuild import raw_tables
from benchmarks.rebuild_prompts import prompt_rows
from skillsight.rebuild.finalizer import (
    Finalizer,
    SessionRowCache,
    default_rebuild,
    rebuild_sessions,
)
from skillsight.store import EmbeddedStore, Store

PROJECT = "p"
KEY = "00000000-0000-4000-8000-00000000cafe"
Rows = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def _insert(store: Store, rows: Rows) -> None:
    spans, events = raw_tables(PROJECT, *rows)
    if spans.num_rows:
        store.spans.insert(spans)
    if events.num_rows:
        store.events.insert(events)


def _through(store: Store, key: str = KEY) -> int:
    """What the finalizer's discovery finds: the newest ingested_at of the session's rows."""
    return max(a.last_ingested_us for a in store.sessions.arrivals(0) if a.session_key == key)


def _rebuilt(store: Store, cache: SessionRowCache | None, key: str = KEY) -> tuple[str, list[str]]:
    """The session rebuilt: its ATIF document and activation records, as JSON."""
    return _pass(store, cache, [key])[key]


def _pass(
    store: Store, cache: SessionRowCache | None, keys: list[str]
) -> dict[str, tuple[str, list[str]]]:
    """Sessions rebuilt in one pass (read together)."""
    outcomes, _ = rebuild_sessions(
        store,
        [(PROJECT, key, _through(store, key)) for key in keys],
        rebuild=default_rebuild(),
        cache=cache,
    )
    out = {}
    for outcome in outcomes:
        rebuilt = outcome.rebuilt
        assert rebuilt is not None, outcome
        out[outcome.session_key] = (
            rebuilt.trajectory.model_dump_json(exclude_none=True),
            [a.model_dump_json() for a in rebuilt.activations],
        )
    return out


def _same_as_a_full_read(store: Store, cache: SessionRowCache, key: str = KEY) -> None:
    assert _rebuilt(store, cache, key) == _rebuilt(store, None, key)


def test_a_session_rebuilt_after_each_prompt_reads_only_its_new_rows(store: Store) -> None:
    cache = SessionRowCache(overlap_us=0)  # one writer here: nothing commits out of order
    sizes = []
    for index in range(4):
        rows = prompt_rows(index, 12, KEY)
        sizes.append(len(rows[0]) + len(rows[1]))
        _insert(store, rows)
        read_before = cache.stats.rows_read
        _same_as_a_full_read(store, cache)
        read = cache.stats.rows_read - read_before
        # the first read is whole; then the new prompt's rows and the newest insert's again
        assert read == sizes[0] if index == 0 else sizes[index] <= read < sum(sizes), read
    assert cache.stats.sessions_read_whole == 1
    assert cache.stats.sessions_read_new == 3
    assert cache.rows == sum(sizes) and len(cache) == 1
    trajectory = json.loads(_rebuilt(store, cache)[0])
    assert len({s.get("extra", {}).get("prompt_id") for s in trajectory["steps"]} - {None}) == 4


def test_with_the_overlap_every_read_is_still_the_same(store: Store) -> None:
    """The default overlap reads rows of the last two seconds again (another writer's insert
    may commit rows stamped before ones already read): the same rows, replaced by themselves."""
    cache = SessionRowCache()
    for index in range(3):
        _insert(store, prompt_rows(index, 6, KEY))
        _same_as_a_full_read(store, cache)
    assert cache.stats.sessions_read_new == 2


def test_a_newer_copy_of_a_span_replaces_the_one_held(store: Store) -> None:
    cache = SessionRowCache(overlap_us=0)
    spans, events = prompt_rows(0, 8, KEY)
    _insert(store, (spans, events))
    _same_as_a_full_read(store, cache)
    tool = next(s for s in spans if s["name"] == "claude_code.tool" and s["output"])
    resent = {
        **tool,
        "output": "sent again, changed",
        "end_time_unix_nano": tool["end_time_unix_nano"] + 1,
    }
    resent["span_events"] = json.dumps(
        [
            {
                "time_unix_nano": tool["start_time_unix_nano"],
                "name": "tool.output",
                "attributes": {"output": "sent again, changed"},
            }
        ]
    )
    _insert(store, ([resent], []))
    _insert(store, prompt_rows(1, 8, KEY))
    cached = _rebuilt(store, cache)
    assert cached == _rebuilt(store, None)
    assert "sent again, changed" in cached[0]
    assert cache.stats.sessions_read_new == 1


def _sessionless(rows: Rows) -> Rows:
    spans, events = rows
    strip = [
        {**s, "attributes": {k: v for k, v in s["attributes"].items() if k != "session.id"}}
        for s in spans
    ]
    stripped = [
        {
            **e,
            "session_id": "",
            "attributes": {k: v for k, v in e["attributes"].items() if k != "session.id"},
        }
        for e in events
    ]
    return strip, stripped


def test_a_trace_that_joins_the_session_late_brings_its_earlier_rows(store: Store) -> None:
    """A trace whose rows named no session is a session of its own, until a later row of it
    names one: then its earlier rows are the session's too, however long ago they came."""
    cache = SessionRowCache(overlap_us=0)
    _insert(store, prompt_rows(0, 6, KEY))
    _same_as_a_full_read(store, cache)
    spans, events = _sessionless(prompt_rows(1, 6, KEY))
    root = [s for s in prompt_rows(1, 6, KEY)[0] if not s["parent_span_id"]]
    _insert(store, ([s for s in spans if s["parent_span_id"]], events))
    _insert(store, prompt_rows(2, 6, KEY))  # read after the trace's rows came: they are older
    _same_as_a_full_read(store, cache)  # not the session's yet
    _insert(store, (root, []))  # the root span names the session
    cached = _rebuilt(store, cache)
    assert cached == _rebuilt(store, None)
    assert cache.stats.sessions_read_new == 2 and cache.stats.sessions_read_whole == 1
    prompts = {s.get("extra", {}).get("prompt_id") for s in json.loads(cached[0])["steps"]}
    assert {"p0", "p1", "p2"} <= prompts


def test_a_trace_without_a_session_is_its_own_session_and_is_read_incrementally_too(
    store: Store,
) -> None:
    cache = SessionRowCache(overlap_us=0)
    spans, events = _sessionless(prompt_rows(0, 6, KEY))
    trace = spans[0]["trace_id"]
    root = [s for s in spans if not s["parent_span_id"]]
    _insert(store, ([s for s in spans if s["parent_span_id"]], events))
    _same_as_a_full_read(store, cache, trace)
    _insert(store, (root, []))
    _same_as_a_full_read(store, cache, trace)
    assert cache.stats.sessions_read_whole == 1 and cache.stats.sessions_read_new == 1
    assert cache.rows == len(spans) + len(events)


def test_a_row_naming_another_session_makes_the_session_read_whole(store: Store) -> None:
    """Whose such a row is depends on which sessions are read together (here: the other
    session's when both are), so a session with one is not kept."""
    cache = SessionRowCache(overlap_us=0)
    other = "00000000-0000-4000-8000-0000000other"
    _insert(store, prompt_rows(0, 6, KEY))
    _insert(store, prompt_rows(0, 6, other, seed=7000))
    _same_as_a_full_read(store, cache)
    spans, _ = prompt_rows(1, 6, KEY)
    stray = [{**spans[1], "attributes": {**spans[1]["attributes"], "session.id": other}}]
    _insert(store, prompt_rows(1, 6, KEY))
    _insert(store, (stray, []))
    _same_as_a_full_read(store, cache)  # alone, the row is the session's (its trace's owner)
    assert cache.stats.dropped == 1 and len(cache) == 0
    both = _pass(store, cache, [KEY, other])
    assert both == _pass(store, None, [KEY, other])  # together, it is the other session's
    assert both[KEY] != _rebuilt(store, None)
    assert len(cache) == 1  # the other session: all its rows name it, or none
    assert cache.stats.sessions_read_whole == 4


def test_a_full_cache_drops_the_least_recently_read_and_rebuilds_the_same(store: Store) -> None:
    rows = prompt_rows(0, 6, KEY)
    probe = SessionRowCache(overlap_us=0)
    _insert(store, rows)
    _same_as_a_full_read(store, probe)
    size = probe.bytes  # the session's rows, estimated
    assert size >= 2_200 * (len(rows[0]) + len(rows[1]))
    cache = SessionRowCache(max_bytes=size + 1_000, overlap_us=0)
    other = "00000000-0000-4000-8000-00000000beef"
    _insert(store, prompt_rows(0, 6, other, seed=5000))
    _same_as_a_full_read(store, cache)
    _same_as_a_full_read(store, cache, other)  # the first no longer fits beside it
    assert len(cache) == 1 and cache.bytes <= size + 1_000
    _insert(store, prompt_rows(1, 6, KEY))
    _same_as_a_full_read(store, cache)
    assert cache.stats.sessions_read_whole == 3 and cache.stats.sessions_read_new == 0


def test_the_finalizer_rebuilds_the_next_prompt_from_its_new_rows(
    embedded_store: EmbeddedStore,
) -> None:
    async def until(finalizer: Finalizer, condition: Any) -> None:
        async with asyncio.timeout(60):
            while not condition(finalizer.health()):
                await asyncio.sleep(0.02)

    async def run() -> dict[str, Any]:
        finalizer = Finalizer(embedded_store, quiet_s=0.05, poll_s=0.02)
        async with finalizer:
            for index in range(3):
                _insert(embedded_store, prompt_rows(index, 6, KEY))
                await until(finalizer, lambda h, n=index + 1: h["sessions_rebuilt"] >= n)
            return finalizer.health()

    health = asyncio.run(run())
    cache = health["row_cache"]
    assert cache["sessions_read_whole"] == 1 and cache["sessions_read_new"] >= 2, cache
    assert cache["sessions"] == 1 and cache["rows"] > 0
    stored = embedded_store.trajectories.get(PROJECT, KEY)
    assert stored is not None
    assert json.loads(stored)["steps"] == json.loads(_rebuilt(embedded_store, None)[0])["steps"]


def test_a_held_turn_is_read_instead_of_looked_at_and_held_below_its_mark_the_same(
    store: Store,
) -> None:
    """A turn whose rows the cache holds is not looked at through its span ids: its new rows
    are read, and the same rules hold it (below its growth mark, a parent missing) or show it."""
    cache = SessionRowCache(overlap_us=0)
    spans, events = prompt_rows(0, 12, KEY)
    inner = [s for s in spans if s["parent_span_id"]]
    ident = (PROJECT, KEY)

    def due(mark: int) -> Any:
        outcomes, _ = rebuild_sessions(
            store,
            [(PROJECT, KEY, _through(store))],
            rebuild=default_rebuild(),
            provisional={ident},
            hold_below={ident: mark},
            cache=cache,
        )
        return outcomes[0]

    _insert(store, (inner[:10], events))
    first = due(0)  # shown provisionally, its rows now held
    assert first.rebuilt is not None and not first.settled and first.looked
    _insert(store, (inner[10:14], []))
    held = due(2 * first.spans)  # 14 spans < 20: held, from its rows, not a look
    assert held.incomplete and held.rebuilt is None and not held.looked
    assert (held.spans, held.waits_for_root) == (14, True)
    _insert(store, (inner[14:], []))
    shown = due(2 * first.spans)  # 25 spans: shown again
    assert shown.rebuilt is not None and not shown.settled and not shown.looked
    assert cache.stats.sessions_read_new == 2
