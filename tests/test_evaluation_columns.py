"""Evaluation rows written as columns: the scheduler's batches, without a dict per row.

``Store.evaluations.write_columns`` must store what ``write`` stores for the same rows, in
every table the write fills (the evaluations, their digests, the scorecard rows and marks), and
refuse malformed columns with a clear error, writing nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillsight.errors import StoreError
from skillsight.evaluators import Evaluation, Finding
from skillsight.evaluators._model import evaluation_columns, findings_json
from skillsight.evaluators.scheduler import EvaluationScheduler, score_activations
from skillsight.rebuild.finalizer import rebuild_sessions
from skillsight.store import EmbeddedStore
from tests.support.captures import SCENARIOS, store_capture

_AT_US = 1_767_225_600_000_000
_TABLES = {
    "evaluations": "activation_id, evaluator, evaluator_version",
    "evaluation_digests": "activation_id, evaluator, evaluator_version",
    "scorecard_rows": "activation_id, evaluator, evaluator_version",
    "scorecard_hour_marks": "skill_name, day, hour",
}
_STAMPS = {"marked_at", "latency_ms", "activation_rebuilt_at"}  # each store rebuilds anew


def _scored(store: EmbeddedStore) -> Any:
    for name in ("one_skill", "tool_error", "security"):
        store_capture(store, "p", SCENARIOS / name / "claude_code")
    keys = [(a.project_id, a.session_key, 0) for a in store.sessions.arrivals(0)]
    outcomes, _ = rebuild_sessions(store, keys)
    assert outcomes and all(o.rebuilt is not None and not o.error for o in outcomes)
    scheduler = EvaluationScheduler(store)
    activations = store.activations.find("p", limit=1000)
    scored = score_activations(
        activations, scheduler.assembler, registry=scheduler.registry, chosen=scheduler.policies
    )
    assert len(scored.evaluations) >= 3 * len(activations) > 0
    return scored


def _tables(store: EmbeddedStore) -> dict[str, list[dict[str, Any]]]:
    return {
        table: [
            {k: v for k, v in row.items() if k not in _STAMPS}
            for row in store.query(f"SELECT * FROM {table} FINAL ORDER BY {order}")
        ]
        for table, order in _TABLES.items()
    }


def test_columns_store_what_rows_store_in_every_table(tmp_path: Path) -> None:
    stored: list[dict[str, list[dict[str, Any]]]] = []
    for way in ("rows", "columns"):
        store = EmbeddedStore(tmp_path / way)
        try:
            store.migrate()
            scored = _scored(store)
            columns = scored.columns(_AT_US)
            if way == "columns":
                written = store.evaluations.write_columns("p", columns)
            else:
                rows = [
                    dict(zip(columns, values, strict=True))
                    for values in zip(*columns.values(), strict=True)
                ]
                written = store.evaluations.write("p", rows)
            assert written == len(scored.evaluations)
            stored.append(_tables(store))
        finally:
            store.close()
    rows_way, columns_way = stored
    assert all(rows_way[table] for table in _TABLES)
    assert rows_way == columns_way


def _one(**changes: Any) -> dict[str, list[Any]]:
    evaluation = Evaluation("a1", "security", "1", 1.0, True, "pass", "fine", project_id="p")
    columns = evaluation_columns([evaluation, evaluation], _AT_US, {})
    columns["activation_id"] = ["a1", "a2"]
    columns.update(changes)
    return columns


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"evaluator": ["security", ""]}, "evaluation row 1 has no evaluator"),
        ({"activation_id": ["a1"]}, "unequal lengths"),
        ({"score": [1.0, "high"]}, "malformed evaluation rows"),
        ({"evidence_step_ids": [[1], "7"]}, "malformed evaluation rows"),
    ],
)
def test_malformed_columns_are_refused_and_nothing_is_written(
    tmp_path: Path, changes: dict[str, list[Any]], error: str
) -> None:
    store = EmbeddedStore(tmp_path / "store")
    try:
        store.migrate()
        with pytest.raises(StoreError, match=error):
            store.evaluations.write_columns("p", _one(**changes))
        assert store.evaluations.write_columns("p", _one()) == 2  # the store still takes rows
        counts = store.query("SELECT count() AS n FROM evaluations")
        assert counts == [{"n": 2}]
    finally:
        store.close()


def test_the_findings_column_is_the_json_it_always_was() -> None:
    findings = (
        Finding("secret", "an AWS key in the output: café ☕", step_id=3, severity="high"),
        Finding("url", 'a "quoted" url', tool_call_id="toolu_1", detail={"n": [1, 2.5, None]}),
    )
    assert findings_json(findings) == json.dumps(
        [f.to_dict() for f in findings], ensure_ascii=False
    )
    assert findings_json(()) == json.dumps([]) == "[]"
