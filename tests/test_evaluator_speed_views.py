"""The shortcuts the cheap evaluators take for speed give the verdicts the long way gives: views
shared within a run, the canonical key of a call's arguments, evidence built slot by slot."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from benchmarks.eval import CHEAP, WORKSPACE, synthetic_activations
from skillsight.evaluators import (
    Baseline,
    Evaluation,
    EvaluationContext,
    Evidence,
    deterministic_registry,
    run_evaluators,
)
from skillsight.evaluators._model import evidence
from skillsight.evaluators._tool_errors import call_key
from skillsight.evaluators._views import shared_views, views_of
from skillsight.store.records import ToolCall


def _plain(e: Evaluation) -> dict[str, Any]:
    row = asdict(e)
    row.pop("latency_ms")
    return row


def _workload() -> tuple[list[Any], dict[str, EvaluationContext]]:
    acts, skills = synthetic_activations(120, rows=3, seed=3)
    baseline = Baseline(tool_calls=3, tokens=3000, duration_ms=8000, samples=200)
    contexts = {
        m.name: EvaluationContext(manifest=m, baseline=baseline, workspace=WORKSPACE)
        for m, _ in skills
    }
    return acts, contexts


def test_a_run_gives_what_each_evaluator_gives_alone() -> None:
    acts, contexts = _workload()
    registry = deterministic_registry()
    alone = [
        _plain(registry.get(name).evaluate(a, contexts[a.skill_name]))
        for a in acts
        for name in CHEAP
    ]
    ran = run_evaluators(acts, lambda a: contexts[a.skill_name], registry=registry, names=CHEAP)
    assert [_plain(e) for e in ran] == alone


def test_views_are_shared_within_a_run_and_derived_anew_outside_one() -> None:
    acts, _ = _workload()
    outside = views_of(acts[0])
    assert views_of(acts[0]) is not outside
    with shared_views():
        inside = views_of(acts[0])
        assert views_of(acts[0]) is inside
        with shared_views():  # a nested run shares the outer one's
            assert views_of(acts[0]) is inside
        assert inside.views == outside.views and inside.commands == outside.commands
    assert views_of(acts[0]) is not inside


def test_a_changed_activation_is_judged_anew_outside_a_run() -> None:
    acts, contexts = _workload()
    activation = acts[0].model_copy(deep=True)
    context = contexts[activation.skill_name]
    security = deterministic_registry().get("security")
    before = security.evaluate(activation, context)
    activation.tool_calls[0].arguments = {"command": "rm -rf /"}
    after = security.evaluate(activation, context)
    assert "rm_rf_outside_workspace" not in {f.kind for f in before.findings}
    assert "rm_rf_outside_workspace" in {f.kind for f in after.findings}


def test_the_canonical_key_is_canonical_json() -> None:
    values: list[Any] = [
        {},
        {"b": 1, "a": [1, 2.5, None, True, 'é\n"x']},
        {"x": {"z": {"y": [float("nan"), float("inf"), -0.0, 1e300]}}},
        {"s": "\u2028"},
        {1: "an int key"},
        {"n": 10**30, "t": (1, 2)},
    ]
    for value in values:
        call = ToolCall(tool_call_id="t", name="Bash", arguments=value, step_id=1)
        expected = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        assert call_key(call) == ("Bash", expected)


def test_evidence_built_slot_by_slot_is_the_same_value() -> None:
    made = evidence((2, 3), ("toolu_1",))
    assert made == Evidence((2, 3), ("toolu_1",))
    assert hash(made) == hash(Evidence((2, 3), ("toolu_1",)))
    assert type(made) is Evidence and made.to_dict() == {
        "step_ids": [2, 3],
        "tool_call_ids": ["toolu_1"],
    }
