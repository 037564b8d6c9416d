"""An activation's record text, made once: the stored record and the scheduler's digest.

A session rebuilt after each prompt keeps its earlier activations (the same objects), and each
rebuild writes them and hands them to the scheduler. Their text less the rebuild's stamps is
kept on them, so the stored record is spliced from it and the digest hashed once; both must be
exactly what serializing the record anew gives, and a changed record must not keep them.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from benchmarks.eval import synthetic_activations
from skillsight.rebuild.finalizer import default_rebuild
from skillsight.store import EmbeddedStore
from skillsight.store._rebuild_rows import record_json, stamp_iso
from skillsight.store.records import Activation
from tests.support.captures import SCENARIOS, store_capture

STAMP = 1_767_225_600_123_456


def _serialized(activation: Activation, project_id: str, stamp: int, settled: bool) -> str:
    """The record as the store wrote it before its text was kept: a stamped copy, dumped."""
    return activation.model_copy(
        update={"project_id": project_id, "rebuilt_at": stamp_iso(stamp), "settled": settled}
    ).model_dump_json()


def _digest(activation: Activation) -> str:
    text = activation.model_dump_json(exclude={"rebuilt_at", "settled"})
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _captured(tmp_path_factory: pytest.TempPathFactory) -> list[Activation]:
    """Every activation the recorded scenarios rebuild to, as the finalizer builds them."""
    store = EmbeddedStore(tmp_path_factory.mktemp("captures") / "store")
    try:
        store.migrate()
        for scenario in sorted(p for p in SCENARIOS.iterdir() if (p / "manifest.json").exists()):
            for variant in sorted(p for p in scenario.iterdir() if p.is_dir()):
                store_capture(store, f"{scenario.name}-{variant.name}", variant)
        rebuild = default_rebuild()
        found: list[Activation] = []
        for arrival in store.sessions.arrivals(0):
            spans, events = store.sessions.rows(arrival.project_id, arrival.session_key)
            rebuilt = rebuild(
                spans, events, project_id=arrival.project_id, session_id=arrival.session_key
            )
            found += rebuilt.activations
        return found
    finally:
        store.close()


def test_the_stored_record_and_the_digest_are_those_of_the_record_serialized_anew(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    activations = _captured(tmp_path_factory) + synthetic_activations(200)[0]
    assert len(activations) > 220
    # rerun ids, notes and messages with quotes, escapes, non-ASCII and the key's own text
    odd = activations[0].model_copy(
        update={
            "rerun_id": 'run-"1"\\,"rerun_id":x é\u2028',
            "integration_message": 'said ,"rerun_id":"y" and ,"settled":true}',
            "workspace": '/home/dév/,"rerun_id":',
        }
    )
    for activation in [*activations, odd]:
        for settled in (True, False):
            for stamp in (STAMP, STAMP + 1):
                expected = _serialized(activation, activation.project_id, stamp, settled)
                assert record_json(activation, activation.project_id, stamp, settled) == expected
        # a record stored under another project than the algorithm set goes the long way
        assert record_json(activation, "elsewhere", STAMP, True) == _serialized(
            activation, "elsewhere", STAMP, True
        )
        assert activation.content_digest() == _digest(activation)
        assert json.loads(record_json(activation, activation.project_id, STAMP, True))[
            "rebuilt_at"
        ] == stamp_iso(STAMP)


def test_a_changed_record_does_not_keep_the_text_of_the_one_it_came_from() -> None:
    (activation,) = synthetic_activations(1)[0]
    digest = activation.content_digest()  # its text made and kept
    record_json(activation, activation.project_id, STAMP, True)
    changed = activation.model_copy(update={"integration_message": "something else"})
    assert changed.content_digest() == _digest(changed) != digest
    assert json.loads(record_json(changed, changed.project_id, STAMP, True))[
        "integration_message"
    ] == ("something else")
    # the finalizer hands the scheduler stamped copies: they say the same
    stamped = activation.model_copy(update={"rebuilt_at": "2026-01-01T00:00:00Z", "settled": False})
    assert stamped.content_digest() == _digest(stamped) == digest
    assert record_json(stamped, stamped.project_id, STAMP, True) == _serialized(
        stamped, stamped.project_id, STAMP, True
    )
    moved = activation.model_copy(update={"project_id": "other", "rebuilt_at": "x"})
    assert moved.content_digest() == _digest(moved) != digest
    assigned = activation.model_copy()
    assert assigned.content_digest() == digest
    assigned.outcome = "error"
    assert assigned.content_digest() == _digest(assigned) != digest
    # a record's kept text is no part of what it says
    fresh = Activation.model_validate_json(activation.model_dump_json())
    assert fresh == activation and activation.content_digest() == fresh.content_digest()
