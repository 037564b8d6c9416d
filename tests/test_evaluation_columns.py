"""Evaluation rows written as columns: the scheduler's batches, without a dict per row; and the
digest of what each evaluator was shown, put together from its parts.

``Store.evaluations.write_columns`` must store what ``write`` stores for the same rows, in
every table the write fills (the evaluations, their digests, the scorecard rows and marks), and
refuse malformed columns with a clear error, writing nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from skillsight.errors import StoreError
from skillsight.evaluators import Baseline, Evaluation, EvaluationContext, Finding
from skillsight.evaluators._baseline import stored_baseline
from skillsight.evaluators._model import evaluation_columns, findings_json
from skillsight.evaluators._skill_selection import stored_catalogue
from skillsight.evaluators.scheduler import EvaluationScheduler, score_activations
from skillsight.evaluators.scheduler._scoring import inputs_digest
from skillsight.rebuild.finalizer import rebuild_sessions
from skillsight.store import EmbeddedStore
from skillsight.store.records import VisibleSkill
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


# Columns stored as given (evaluated_at is stored as a time, the project as the write's).
_AS_GIVEN = (
    "activation_id",
    "evaluator",
    "evaluator_version",
    "skill_name",
    "skill_version",
    "score",
    "passed",
    "label",
    "reason",
    "evidence_step_ids",
    "evidence_tool_call_ids",
    "findings",
    "error",
    "judge_model",
    "tokens",
    "cost_usd",
    "latency_ms",
    "activation_rebuilt_at",
    "unseen",
    "inputs_hash",
    "compared_with",
    "activation_digest",
)


def test_each_stored_row_holds_what_its_columns_say(tmp_path: Path) -> None:
    """Read back, not only compared with the rows' way (which now goes through the same
    columns): every value of every evaluation row, the scorecard copy of each production row,
    and one hour mark per (skill, start day, hour)."""
    store = EmbeddedStore(tmp_path / "store")
    try:
        store.migrate()
        scored = _scored(store)
        columns = scored.columns(_AT_US)
        assert store.evaluations.write_columns("p", columns) == len(scored.evaluations)
        keys = list(zip(*(columns[k] for k in ("activation_id", "evaluator")), strict=True))
        want = {key: {name: columns[name][i] for name in _AS_GIVEN} for i, key in enumerate(keys)}
        found = store.query(
            "SELECT *, toUnixTimestamp64Micro(evaluated_at) AS at_us FROM evaluations FINAL"
        )
        assert len(found) == len(want)
        assert all(row["project_id"] == "p" and row["at_us"] == _AT_US for row in found)
        assert {
            (row["activation_id"], row["evaluator"]): {name: row[name] for name in _AS_GIVEN}
            for row in found
        } == want
        assert any(row["findings"] != "[]" for row in found)  # findings were written, too
        copied = store.query("SELECT count() AS n FROM scorecard_rows FINAL")
        assert copied == [{"n": len(want)}]
        # the write's own marks (one moment per statement; the rebuild marked before it)
        marks = store.query(
            "SELECT count() AS n, uniqExact(skill_name, day, hour) AS hours "
            "FROM scorecard_hour_marks "
            "WHERE marked_at = (SELECT max(marked_at) FROM scorecard_hour_marks)"
        )
        assert marks[0]["n"] == marks[0]["hours"] > 0  # written once per hour, not per row
    finally:
        store.close()


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


def _shown_as_json(record: str, context: EvaluationContext, later: bool) -> str:
    """The digest as it was first defined: blake2b of ``json.dumps`` of the list."""
    manifest = context.manifest
    text = json.dumps(
        [
            record,
            manifest.version if manifest is not None else None,
            stored_baseline(context.baseline),
            stored_catalogue(context.catalogue),
            list(context.later_messages) if later else None,
        ],
        ensure_ascii=False,
    )
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@pytest.mark.parametrize("later", [False, True])
def test_the_inputs_digest_is_the_one_stored_rows_hold(later: bool) -> None:
    """Stored rows keep ``inputs_hash``; a digest written another way would score every
    stored activation again. Texts with quotes, newlines, control and non-ASCII characters."""
    catalogue = (
        VisibleSkill(name="pdf", description='Fill "PDF" forms\nand sign them'),
        VisibleSkill(name="café", description="Résumé ☕ \u2028 tabs\there \x01 done"),
    )
    contexts = [
        EvaluationContext(),
        EvaluationContext(
            baseline=Baseline(tool_calls=3, tokens=1200.5, duration_ms=float("nan"), samples=9),
            catalogue=catalogue,
            later_messages=('now "the other" skill', "line\nbreak", "naïve \\ path"),
        ),
    ]
    for context in contexts:
        for record in ("0" * 32, 'a"b\\c'):
            # twice: the second reads what the first kept (the catalogue's encoding)
            for _ in range(2):
                got = inputs_digest(record, context, later=later)
                assert got == _shown_as_json(record, context, later)
