"""A value no encoder takes costs no session but its own.

Claude Code logs a tool's input as JSON text; text cut inside an emoji carries a lone UTF-16
surrogate escape (``\\ud83d``), which parses into a string that neither pydantic, Arrow nor
ClickHouse can encode. Before, such a session failed the write of every rebuild in its pass, and
the pass was retried, and failed, for as long as the session stayed due."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from benchmarks.rebuild import raw_tables
from benchmarks.sessions import synthetic_session
from skillsight._json_text import loads
from skillsight.rebuild.finalizer import RebuildFn, default_rebuild, rebuild_sessions
from skillsight.store import EmbeddedStore, RebuildResult, Store
from skillsight.store.records import Activation

PROJECT = "p"


def _session(store: Store, seed: int, *, tool_input: str = "") -> str:
    key = f"00000000-0000-4000-8000-{seed:012d}"
    spans, events = synthetic_session(4, skill_every=10, seed=seed, session_id=key)
    for event in events:
        if tool_input and "tool_input" in event["attributes"]:
            event["attributes"]["tool_input"] = tool_input
    span_table, event_table = raw_tables(PROJECT, spans, events)
    store.spans.insert(span_table)
    store.events.insert(event_table)
    return key


def test_a_lone_surrogate_in_a_tool_input_is_rebuilt_and_stored_as_a_replacement(
    store: Store,
) -> None:
    cut = _session(store, 1, tool_input='{"command": "echo \\ud83d cut", "ok": "\\ud83d\\ude00"}')
    outcomes, stamps = rebuild_sessions(store, [(PROJECT, cut, 0)], rebuild=default_rebuild())
    assert not outcomes[0].error and len(stamps) == 1
    document = store.trajectories.get(PROJECT, cut)
    assert document is not None
    calls = [c for s in json.loads(document)["steps"] for c in s.get("tool_calls") or []]
    commands = [c["arguments"].get("command") for c in calls if c["function_name"] == "Bash"]
    assert commands and set(commands) == {"echo \ufffd cut"}
    # a whole pair is a character, kept as it is
    assert {c["arguments"].get("ok") for c in calls if c["function_name"] == "Bash"} == {"😀"}


def test_loads_replaces_only_lone_surrogates() -> None:
    assert loads('{"a": "\\ud800", "\\udfff": ["\\ud83d\\ude00", 1]}') == {
        "a": "\ufffd",
        "\ufffd": ["😀", 1],
    }
    assert loads('"plain \\\\ud800 text"') == "plain \\ud800 text"  # an escaped backslash


def test_a_session_whose_rebuild_cannot_be_encoded_fails_alone(
    embedded_store: EmbeddedStore,
) -> None:
    """Whatever else yields such a value: that session is marked failed, the rest of its pass
    is written."""
    poisoned = _session(embedded_store, 2)
    healthy = _session(embedded_store, 3)
    rebuild = default_rebuild()

    def poisoning(
        spans: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]] = (), **kw: Any
    ) -> RebuildResult:
        rebuilt = rebuild(spans, events, **kw)
        if kw.get("session_id") == poisoned:
            activations = cast(list[Activation], rebuilt.activations)
            activations[0] = activations[0].model_copy(update={"skill_name": "\ud800"})
        return rebuilt

    fn: RebuildFn = poisoning
    keys = [(PROJECT, poisoned, 0), (PROJECT, healthy, 0)]
    outcomes, stamps = rebuild_sessions(embedded_store, keys, rebuild=fn)
    by_key = {o.session_key: o for o in outcomes}
    assert "surrogates not allowed" in by_key[poisoned].error
    assert by_key[poisoned].rebuilt is None
    assert by_key[healthy].rebuilt is not None and not by_key[healthy].error
    assert len(stamps) == 1
    assert embedded_store.trajectories.get(PROJECT, healthy) is not None
    assert embedded_store.trajectories.get(PROJECT, poisoned) is None
    assert not embedded_store.activations.find(PROJECT, session_id=poisoned)
    assert embedded_store.activations.find(PROJECT, session_id=healthy)
