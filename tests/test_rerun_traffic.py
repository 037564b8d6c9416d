"""Rerun traffic is stored and scored, and left out of production read models.

A paired rerun's agents export through the collector like live traffic, tagged with
``skillsight.rerun.*`` resource attributes. The rebuild files each activation of such a session
under its run (``rerun_id``, migration 0017); scorecards and the gate, the skills list, cost
lines, the efficiency evaluator's production baseline and failure clustering read production
activations only, while the session and activation pages still show rerun ones.
"""

from __future__ import annotations

import json

from skillsight.ingest import otlp
from skillsight.rebuild.finalizer import default_rebuild, rebuild_sessions
from skillsight.store import EmbeddedStore
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA
from tests.test_reruns_telemetry import CAPTURES, _tag


def stored_sessions(store: EmbeddedStore) -> list[dict[str, str]]:
    return store.query("SELECT DISTINCT session_id FROM activations")


def test_a_tagged_session_is_rebuilt_as_its_runs(embedded_store: EmbeddedStore) -> None:
    for signal, where, schema, table in (
        (otlp.TRACES, "Spans", SPAN_SCHEMA, embedded_store.spans),
        (otlp.LOGS, "Logs", EVENT_SCHEMA, embedded_store.events),
    ):
        name = "traces.json" if signal == otlp.TRACES else "logs.json"
        body = _tag(json.loads((CAPTURES / name).read_text()), where)
        decoded = otlp.decode(signal, body, otlp.JSON, "default", otlp.Limits())
        table.insert(decoded.columns.to_arrow(schema))
    rebuild_sessions(embedded_store, embedded_store.sessions.touched(0), rebuild=default_rebuild())
    stored = embedded_store.query("SELECT rerun_id, record FROM activations")
    assert stored and {r["rerun_id"] for r in stored} == {"run-1"}
    assert {json.loads(r["record"])["rerun_id"] for r in stored} == {"run-1"}
    (found,) = embedded_store.activations.find("default", limit=1)
    assert found.rerun_id == "run-1"  # the activation pages still show it, marked
    (session,) = {r["session_id"] for r in stored_sessions(embedded_store)}
    atif = json.loads(embedded_store.trajectories.get("default", session) or "{}")
    assert atif["extra"]["rerun_id"] == "run-1"
