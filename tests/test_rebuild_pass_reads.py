"""What a rebuild pass reads: sessions that must be complete and still miss a parent span are
found from span ids alone, with the same verdict as the completeness rule on their rows; and a
turn running past max_wait_s is rebuilt provisionally at a bounded rate."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from benchmarks.rebuild import raw_tables
from benchmarks.sessions import synthetic_session
from skillsight.rebuild.finalizer import (
    ActivationsReady,
    Finalizer,
    default_rebuild,
    rebuild_sessions,
)
from skillsight.rebuild.rebuild_pass import is_complete, waits_for_root
from skillsight.store import EmbeddedStore, SpanParents, Store

PROJECT = "p"


def _session(store: Store, seed: int, *, drop: str = "") -> str:
    """A synthetic Claude Code session; ``drop``: its root span left out ('root'), the root's
    parent never sent ('parent': a parent in a service that does not export here), or a
    span's below the root ('inner')."""
    key = f"00000000-0000-4000-8000-{seed:012d}"
    spans, events = synthetic_session(8, skill_every=3, seed=seed, session_id=key)
    if drop == "root":
        spans = [s for s in spans if s["parent_span_id"]]
    elif drop == "parent":
        spans[-1] = {**spans[-1], "parent_span_id": "00000000000000ff"}
    elif drop == "inner":
        index = next(i for i, s in enumerate(spans) if s["parent_span_id"])
        spans[index] = {**spans[index], "parent_span_id": "00000000000000ff"}
    span_table, event_table = raw_tables(PROJECT, spans, events)
    store.spans.insert(span_table)
    store.events.insert(event_table)
    return key


def test_missing_parents_agree_with_the_completeness_rule(store: Store) -> None:
    keys = {
        "whole": _session(store, 1),
        "no root": _session(store, 2, drop="root"),
        "no parent": _session(store, 3, drop="parent"),
        "whole too": _session(store, 4),
        "no inner parent": _session(store, 7, drop="inner"),
    }
    missing = store.sessions.missing_parents(PROJECT, [*keys.values(), "never-seen"])
    assert missing == {keys["no root"], keys["no parent"], keys["no inner parent"]}
    rows = store.sessions.rows_of(PROJECT, list(keys.values()))
    for key, (spans, _events) in rows.items():
        parents_in = is_complete(spans, [])  # the parent rule alone
        assert parents_in == (key not in missing), key
    # Only the rootless ones wait for a root span: the last misses a parent below its root.
    found = store.sessions.parents(PROJECT, list(keys.values()))
    waiting = {k for k, parents in found.items() if parents.waits_for_root}
    assert waiting == {keys["no root"], keys["no parent"]}
    assert all(found[k].waits_for_root == waits_for_root(rows[k][0]) for k in keys.values())


def test_a_pass_holds_what_misses_a_parent_and_rebuilds_the_rest(store: Store) -> None:
    whole, rootless = _session(store, 5), _session(store, 6, drop="root")
    keys: list[Any] = [(PROJECT, whole, 0), (PROJECT, rootless, 0)]
    waiting = {(PROJECT, whole), (PROJECT, rootless)}
    outcomes, stamps = rebuild_sessions(
        store, keys, rebuild=default_rebuild(), require_complete=waiting
    )
    by_key = {o.session_key: o for o in outcomes}
    assert by_key[rootless].incomplete and not by_key[rootless].complete
    assert by_key[rootless].rebuilt is None
    rebuilt = by_key[whole].rebuilt
    assert rebuilt is not None and rebuilt.activations
    assert len(stamps) == 1
    # not required complete: rebuilt from what there is, as before
    outcomes, _ = rebuild_sessions(store, keys, rebuild=default_rebuild())
    assert all(o.rebuilt is not None and not o.incomplete for o in outcomes)
    assert {o.session_key: o.complete for o in outcomes} == {whole: True, rootless: False}


def test_provisional_rebuilds_are_rate_limited_and_a_root_settles_at_once(
    embedded_store: EmbeddedStore,
) -> None:
    """A turn running past max_wait_s is rebuilt provisionally once per provisional_every_s,
    not after every batch of its rows; its root span ends the wait at once."""
    key = "00000000-0000-4000-8000-000000000077"
    spans, events = synthetic_session(12, skill_every=4, seed=77, session_id=key)
    root = [s for s in spans if not s["parent_span_id"]]
    rest = [s for s in spans if s["parent_span_id"]]
    half = len(rest) // 2

    def insert(part: list[dict[str, Any]], with_events: bool = False) -> None:
        span_table, event_table = raw_tables(PROJECT, part, events if with_events else [])
        embedded_store.spans.insert(span_table)
        if with_events:
            embedded_store.events.insert(event_table)

    announced: list[ActivationsReady] = []

    async def note(item: ActivationsReady) -> None:
        announced.append(item)

    async def until(finalizer: Finalizer, condition: Any) -> None:
        async with asyncio.timeout(30):
            while not condition(finalizer.health()):
                await asyncio.sleep(0.02)

    async def run() -> dict[str, Any]:
        finalizer = Finalizer(
            embedded_store,
            quiet_s=0.05,
            max_wait_s=0.0,
            settle_s=3600,
            poll_s=0.02,
            provisional_every_s=3600,
        )
        finalizer.subscribe(note)
        async with finalizer:
            insert(rest[:half], with_events=True)
            await until(finalizer, lambda h: h["provisional_rebuilds"] == 1)
            insert(rest[half:])  # more of the running turn: held, not rebuilt again
            await until(finalizer, lambda h: h["incomplete_sessions"] == 1)
            assert finalizer.health()["provisional_rebuilds"] == 1 and not announced
            insert(root)  # the turn ends: complete, rebuilt and announced at once
            await until(finalizer, lambda h: h["sessions_rebuilt"] == 2)
            return finalizer.health()

    health = asyncio.run(run())
    assert health["provisional_rebuilds"] == 1 and health["settled_incomplete"] == 0
    [item] = announced
    assert item.session_id == key and item.activations


def _growing_turn(store: Store, seed: int) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """A turn of 30 steps whose spans are inserted a part at a time: (insert, spans, root)."""
    key = f"00000000-0000-4000-8000-{seed:012d}"
    spans, _ = synthetic_session(30, skill_every=4, seed=seed, session_id=key)
    [root] = [s for s in spans if not s["parent_span_id"]]

    def insert(part: list[dict[str, Any]]) -> None:
        store.spans.insert(raw_tables(PROJECT, part, [])[0])

    return insert, [s for s in spans if s["parent_span_id"]], root


def _announcing(store: Store, **settings: Any) -> tuple[Finalizer, list[ActivationsReady]]:
    """A finalizer of short waits, a turn past max_wait_s at once, and what it announces."""
    announced: list[ActivationsReady] = []

    async def note(item: ActivationsReady) -> None:
        announced.append(item)

    defaults = {"max_wait_s": 0.0, "settle_s": 3600, "provisional_every_s": 0.0}
    finalizer = Finalizer(store, quiet_s=0.05, poll_s=0.02, **{**defaults, **settings})
    finalizer.subscribe(note)
    return finalizer, announced


async def _until(finalizer: Finalizer, condition: Any) -> None:
    async with asyncio.timeout(30):
        while not condition(finalizer.health()):
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("cache_mb", [0, 256], ids=["looked-at", "read-from-cache"])
def test_a_growing_turn_is_rebuilt_again_only_once_its_spans_have_doubled(
    embedded_store: EmbeddedStore, cache_mb: int
) -> None:
    """Below its mark and still without its root span, the turn is held without a look at its
    span ids (the discovery query counted its new spans); its root ends the wait at once. Past
    its mark it is looked at, or, its rows held by the row cache, read (what is new) instead."""
    insert, rest, root = _growing_turn(embedded_store, 78)
    first, little, doubled = 10, 15, 25  # spans in after each batch

    async def run() -> tuple[dict[str, Any], list[ActivationsReady]]:
        finalizer, announced = _announcing(
            embedded_store, provisional_growth=2.0, cache_mb=cache_mb
        )
        async with finalizer:
            insert(rest[:first])
            await _until(finalizer, lambda h: h["provisional_rebuilds"] == 1)
            insert(rest[first:little])  # 15 < 2 x 10: held
            await _until(finalizer, lambda h: h["incomplete_sessions"] == 1)
            assert finalizer.health()["provisional_rebuilds"] == 1
            health = finalizer.health()  # known without asking the store:
            assert (health["parent_looks"], health["looks_spared"]) == (0, 1)
            insert(rest[little:doubled])  # 25 >= 20: shown again
            await _until(finalizer, lambda h: h["provisional_rebuilds"] == 2)
            assert not announced
            insert([root])  # the turn ends: looked at, complete, scored at once
            await _until(finalizer, lambda h: h["sessions_rebuilt"] == 3)
            return finalizer.health(), announced

    health, announced = asyncio.run(run())
    looks = 2 if not cache_mb else 0
    assert (health["parent_looks"], health["settled_incomplete"]) == (looks, 0)
    if cache_mb:
        assert health["row_cache"]["sessions_read_new"] >= 2
    [item] = announced
    assert item.activations


def test_a_turn_waiting_for_its_root_is_looked_at_once_until_a_root_arrives(
    embedded_store: EmbeddedStore,
) -> None:
    """Before max_wait_s, each new batch of a turn whose root has not come is held on
    discovery's counts; the look comes back with a root span (of any trace), which completes it."""
    insert, rest, root = _growing_turn(embedded_store, 80)

    async def run() -> dict[str, Any]:
        finalizer = Finalizer(embedded_store, quiet_s=0.05, max_wait_s=3600, poll_s=0.02)
        async with finalizer:
            insert(rest[:10])
            await _until(finalizer, lambda h: h["parent_looks"] == 1)
            assert finalizer.health()["incomplete_sessions"] == 1
            for start in (10, 20, 30):  # each batch makes it due; each pass spares the look
                spared = finalizer.health()["looks_spared"]
                insert(rest[start : start + 10])
                await _until(finalizer, lambda h, n=spared: h["looks_spared"] > n)
            assert finalizer.health()["parent_looks"] == 1
            insert([root])
            await _until(finalizer, lambda h: h["sessions_rebuilt"] == 1)
            return finalizer.health()

    health = asyncio.run(run())
    assert (health["parent_looks"], health["provisional_rebuilds"]) == (2, 0)
    assert health["looks_spared"] >= 3


def test_a_root_committed_behind_rows_already_seen_still_ends_the_wait(
    embedded_store: EmbeddedStore,
) -> None:
    """Another writer's root span can commit stamped before rows discovery has already seen:
    its session looks no newer, but its root count still makes the held session due."""
    insert, rest, root = _growing_turn(embedded_store, 81)
    # The looks at the turn's project, counted at the store: whether the other project's
    # one-span session is looked at depends on which discovery first sees its root.
    looked: list[str] = []
    parents = embedded_store.sessions.parents

    def counted(project_id: str, session_keys: Any) -> Any:
        found = parents(project_id, session_keys)
        looked.extend(project_id for _ in found)
        return found

    embedded_store.sessions.parents = counted  # type: ignore[method-assign]

    async def run() -> tuple[dict[str, Any], list[ActivationsReady]]:
        finalizer, announced = _announcing(embedded_store, max_wait_s=3600)
        async with finalizer:
            insert(rest[:10])
            await _until(finalizer, lambda h: h["parent_looks"] == 1)
            spared = finalizer.health()["looks_spared"]
            insert(rest[10:20])
            await _until(finalizer, lambda h: h["looks_spared"] > spared)
            # the root, stamped a millisecond before the newest row discovery has seen (sent
            # to a project of its own, rebuilt there too, and copied through a table of its own)
            embedded_store.spans.insert(raw_tables("elsewhere", [root], [])[0])
            embedded_store.execute("CREATE TABLE root_copy AS spans")
            embedded_store.execute(
                "INSERT INTO root_copy SELECT * FROM spans WHERE project_id = 'elsewhere'"
            )
            embedded_store.execute(
                "INSERT INTO spans SELECT * REPLACE ('p' AS project_id, "
                "(SELECT max(ingested_at) FROM spans WHERE project_id = 'p')"
                " - toIntervalMillisecond(1) AS ingested_at) FROM root_copy"
            )
            async with asyncio.timeout(30):
                while not [a for a in announced if a.project_id == PROJECT]:
                    await asyncio.sleep(0.02)
            return finalizer.health(), announced

    health, announced = asyncio.run(run())
    [item] = [a for a in announced if a.project_id == PROJECT]
    assert item.activations  # complete: the turn with its root
    # two looks at the turn: before its batches, and after its root
    assert (looked.count(PROJECT), health["provisional_rebuilds"]) == (2, 0)


def test_a_growing_turn_whose_rows_stop_below_its_mark_settles_as_it_is(
    embedded_store: EmbeddedStore,
) -> None:
    """A turn held below its mark whose agent stops sending (crashed mid-turn) is not held
    forever: settle_s after its last row it is rebuilt as it is, every span in, and scored."""
    insert, rest, _ = _growing_turn(embedded_store, 79)

    async def run() -> tuple[dict[str, Any], list[ActivationsReady]]:
        finalizer, announced = _announcing(embedded_store, settle_s=1.0)
        async with finalizer:
            insert(rest[:10])
            await _until(finalizer, lambda h: h["provisional_rebuilds"] == 1)
            insert(rest[10:15])  # held below its mark, then nothing more comes
            await _until(finalizer, lambda h: h["settled_incomplete"] == 1)
            return finalizer.health(), announced

    health, announced = asyncio.run(run())
    assert (health["provisional_rebuilds"], health["unsettled_sessions"]) == (1, 0)
    [item] = announced
    spans, events = embedded_store.sessions.rows(PROJECT, item.session_id)
    assert len(spans) == 15  # the 5 held ones included in what was scored:
    stored = json.loads(embedded_store.trajectories.get(PROJECT, item.session_id) or "{}")
    whole = default_rebuild()(spans, events, project_id=PROJECT, session_id=item.session_id)
    assert len(stored["steps"]) == len(whole.trajectory.steps)  # type: ignore[attr-defined]
    assert [a.settled for a in embedded_store.activations.find(PROJECT)] == [True] * len(
        item.activations
    )


def test_a_trace_shared_by_two_sessions_is_counted_span_by_span(store: Store) -> None:
    first, second = "00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000a2"
    spans, _ = synthetic_session(6, skill_every=3, seed=91, session_id=first)
    half = len(spans) // 2
    moved = [
        {**s, "session_id": second, "attributes": {**s["attributes"], "session.id": second}}
        for s in spans[half:]
    ]
    store.spans.insert(raw_tables(PROJECT, spans[:half] + moved, [])[0])
    found = store.sessions.parents(PROJECT, [first, second])

    def expected(part: list[dict[str, Any]]) -> SpanParents:
        ids = {s["span_id"] for s in part}
        missing = any(s["parent_span_id"] not in ids | {""} for s in part)
        return SpanParents(len(part), missing, waits_for_root(part))

    assert found == {first: expected(spans[:half]), second: expected(moved)}
    assert any(parents.missing for parents in found.values())  # each half misses parents
