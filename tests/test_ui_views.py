"""What the web UI draws, without a browser: charts leave gaps where nothing was scored, and an
activation's timeline marks only what a failing evaluation cites."""

from __future__ import annotations

import re
from typing import Any

from skillsight.api.ui._charts import Series, compact, line_chart
from skillsight.api.ui._render import verdict
from skillsight.api.ui._timeline import timeline
from skillsight.reports import ActivationDetailOut, EvaluationOut


def test_a_day_without_scores_is_a_gap_in_its_line_never_a_zero() -> None:
    svg = str(
        line_chart(
            [Series("v1", [1.0, None, 0.5]), Series("v2", [None, 0.25, None])],
            ["2026-11-20", "2026-11-21", "2026-11-22"],
            title="allowed_tools",
            threshold=1.0,
        )
    )
    groups = re.findall(r'<g class="series" data-series="([^"]+)"', svg)
    assert groups == ["v1", "v2"]
    v1 = svg.split('data-series="v1"')[1].split("</g>")[0]
    assert v1.count("<circle") == 2  # the missing middle day draws no point
    assert "<polyline" not in v1  # and no line across the gap
    v2 = svg.split('data-series="v2"')[1].split("</g>")[0]
    assert v2.count("<circle") == 1
    assert svg.count('class="threshold"') == 1
    assert "100%" in svg and "50%" in svg


def test_compact_numbers_fit_an_axis() -> None:
    assert [compact(v) for v in (0, 0.00725, 3.4, 120, 34_500, 1_200_000)] == [
        "0", "0.007", "3.4", "120", "34.5k", "1.2M",
    ]  # fmt: skip


def _evaluation(name: str, passed: bool | None, **fields: Any) -> EvaluationOut:
    return EvaluationOut(
        evaluator=name,
        version="1",
        score=None if passed is None else float(passed),
        passed=passed,
        label="not_applicable" if passed is None else ("pass" if passed else "fail"),
        reason=fields.pop("reason", ""),
        evidence=fields.pop("evidence", {"step_ids": [], "tool_call_ids": []}),
        findings=fields.pop("findings", []),
        error=fields.pop("error", ""),
        latency_ms=0.1,
        evaluated_at="2026-11-22T12:00:00Z",
    )


def _activation(evaluations: list[EvaluationOut]) -> ActivationDetailOut:
    return ActivationDetailOut(
        activation_id="a1",
        session_id="s1",
        trace_id="t1",
        skill_name="sales-report",
        trigger="skill_tool",
        trigger_call_id="toolu_skill",
        trigger_step_id=2,
        tool_calls=[
            {"tool_call_id": "toolu_read", "name": "Read", "step_id": 3},
            {"tool_call_id": "toolu_bash", "name": "Bash", "step_id": 4, "is_error": True},
        ],
        integration_message="done",
        integration_step_id=5,
        started_at="2026-11-22T12:00:00Z",
        ended_at="2026-11-22T12:00:01Z",
        evaluations=evaluations,
    )


def test_the_timeline_marks_only_what_a_failing_evaluation_cites() -> None:
    finding = {
        "kind": "tool_not_allowed",
        "message": "no allowed-tools rule names the tool Bash",
        "step_id": 4,
        "tool_call_id": "toolu_bash",
        "severity": "high",
        "detail": {},
    }
    cited = {"step_ids": [4], "tool_call_ids": ["toolu_bash"]}
    evaluations = [
        _evaluation("allowed_tools", False, evidence=cited, findings=[finding], reason="1 of 2"),
        # not applicable, and errored: they cite steps but nothing failed there
        _evaluation("efficiency", None, evidence={"step_ids": [3], "tool_call_ids": []}),
        _evaluation("security", None, error="timeout", evidence=cited),
        _evaluation("integration_heuristic", False, reason="recomputed", evidence={
            "step_ids": [9], "tool_call_ids": []}),
    ]  # fmt: skip
    view = timeline(_activation(evaluations))
    kinds = [(item.kind, item.title, [n.evaluator for n in item.notes]) for item in view.items]
    assert kinds == [
        ("decision", "Skill tool call: sales-report", []),
        ("call", "Read", []),
        ("call", "Bash", ["allowed_tools"]),
        ("integration", "integration: the agent's next message", []),
    ]
    assert view.items[2].notes[0].message == finding["message"]
    assert view.items[2].anchor == "call-toolu_bash"
    # a cited step outside the activation is kept, with what cited it
    assert [(step, [n.evaluator for n in notes]) for step, notes in view.outside] == [
        (9, ["integration_heuristic"])
    ]
    assert [verdict(e) for e in evaluations] == ["fail", "n/a", "error", "fail"]
