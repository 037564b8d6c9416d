"""The rerun report built from result rows: what counts, what is left out, flips, triggering, the
gate's names — on rows written by hand, so every expected number is worked out below."""

from __future__ import annotations

from typing import Any

import pytest

from skillsight.errors import RerunError
from skillsight.goldens import GoldenCase
from skillsight.reruns import (
    METRICS,
    benchmark_json,
    build_report,
    exit_code,
    judge,
    parse_thresholds,
    render_html,
    render_markdown,
    value_of,
)

SKILL = "csv-summary"
META = {"run_id": "r2", "skill_name": SKILL, "skill_version": "v2", "set_id": "gs",
        "set_version": 1, "status": "finished", "started_at": "2026-01-02T00:00:00Z",
        "config": {"attempts": 2}}  # fmt: skip


def _case(case_id: str, **extra: Any) -> GoldenCase:
    return GoldenCase(case_id=case_id, question=f"{case_id}?", **{"expected_skill": SKILL, **extra})


def _row(
    case: str, condition: str, attempt: int, goal: float | None, **extra: Any
) -> dict[str, Any]:
    metrics = {m: None for m in METRICS}
    metrics.update(security=1.0, goal_accuracy=goal)
    present = [v for v in metrics.values() if v is not None]
    row = {"run_id": "r", "case_id": case, "condition": condition, "attempt": attempt,
           "status": "ok", "session_ids": [f"s-{case}-{condition}-{attempt}"], "activation_ids": [],
           "skill_invoked": condition == "with_skill", **metrics,
           "overall": sum(present) / len(present), "passed": all(v >= 1.0 for v in present),
           "tokens": 100, "cost_usd": 0.001, "duration_ms": 2000.0, "exit_code": 0, "error": "",
           "reasons": {}}  # fmt: skip
    row.update(extra)
    return row


CASES = [_case("a"), _case("b"), _case("c", status="advisory"),
         _case("n", expected_skill=None, should_trigger=False)]  # fmt: skip
ROWS = [
    # a: with 1.0, 1.0; baseline 0.5, 1.0 (plus a timeout that must not count)
    _row("a", "with_skill", 1, 1.0), _row("a", "with_skill", 2, 1.0),
    _row("a", "baseline", 1, 0.5), _row("a", "baseline", 2, 1.0),
    _row("a", "baseline", 3, None, status="timeout", overall=None, passed=None),
    # b: with 0.0 (fails), baseline 1.0
    _row("b", "with_skill", 1, 0.0), _row("b", "with_skill", 2, 0.0),
    _row("b", "baseline", 1, 1.0), _row("b", "baseline", 2, 1.0),
    # c (advisory): a large lift that must not move the numbers
    _row("c", "with_skill", 1, 1.0), _row("c", "baseline", 1, 0.0),
    # n: the skill should not trigger, and did on one of two attempts
    _row("n", "with_skill", 1, None, skill_invoked=True),
    _row("n", "with_skill", 2, None, skill_invoked=False),
]  # fmt: skip


def test_the_report_pairs_active_cases_and_counts_the_rest() -> None:
    report = build_report(META, CASES, ROWS, resamples=1000, seed=1)
    goal = report.metric("goal_accuracy")
    # a: 1.0 - 0.75 = +0.25; b: 0.0 - 1.0 = -1.0; c is advisory; n has no goal on either side
    assert (goal.n, goal.lift) == (2, pytest.approx(-0.375))
    assert (goal.positive, goal.negative, goal.tied) == (0.5, 0.5, 0.0)
    assert report.advisory_cases == ["c"]
    assert report.inventory["baseline"]["timeout"] == 1 and report.inventory["baseline"]["ok"] == 5
    # overall per case is the mean of its metric deltas (security's is 0); n has no baseline
    overall = report.metric("overall")
    assert overall.n == 2 and overall.lift == pytest.approx((0.125 - 0.5) / 2)
    # pass@1 with the skill: a 2/2, b 0/2, n 2/2 (security only) -> (1 + 0 + 1) / 3
    assert report.pass_at_k["with_skill"]["1"] == pytest.approx(2 / 3)
    # triggering: a and b fired and should; n fired on half of its attempts and should not
    assert report.trigger.precision == pytest.approx(2 / 3) and report.trigger.recall == 1.0
    rates = {q.case_id: q.trigger_rate for q in report.trigger.queries}
    assert rates == {"a": 1.0, "b": 1.0, "n": 0.5}
    # utility over the cases expecting the skill: a (with wins, baseline 1/2 -> succeeds too:
    # equal costs, r = 1, e = 50, phi = 50) and b (with fails -> 0)
    assert report.utility == pytest.approx(25.0) and report.utility_cases == 2
    assert report.security_status == "Pass"


def test_flips_against_the_previous_version_and_the_outputs() -> None:
    before = [_row("a", "with_skill", 1, 0.0), _row("b", "with_skill", 1, 1.0)]
    previous = ({"run_id": "r1", "skill_version": "v1"}, before)
    report = build_report(META, CASES, ROWS, previous=previous, resamples=100, seed=1)
    assert report.flips is not None
    assert (report.flips.pass_to_fail, report.flips.fail_to_pass) == (["b"], ["a"])
    assert "pass→fail b" in render_markdown(report)
    html = render_html(report)
    assert html.count("<svg") == 2 and "<title>b: -0.500</title>" in html
    bench = benchmark_json(report)
    assert len(bench["runs"]) == 12 and bench["metadata"]["runs_per_configuration"] == 2


def test_the_gate_reads_its_names_and_says_what_it_cannot_judge() -> None:
    report = build_report(META, CASES, ROWS, resamples=100, seed=1)
    assert value_of(report, "lift") == report.lift
    assert value_of(report, "goal_accuracy") == value_of(report, "lift.goal_accuracy") == -0.375
    assert value_of(report, "with.goal_accuracy") == pytest.approx(0.5)
    assert value_of(report, "pass@2") == report.pass_at_k["with_skill"]["2"]
    assert value_of(report, "ci_low.skill_execution") is None
    verdicts = judge(report, parse_thresholds(["lift.security=0", "goal_accuracy=0"]))
    assert [v.ok for v in verdicts] == [True, False] and exit_code(verdicts) == 1
    unknown = judge(report, parse_thresholds(["lift.skill_efficiency=0"]))
    assert [v.ok for v in unknown] == [None] and exit_code(unknown) == 2
    for bad in ("lift", "nonsense=1", "lift.nothing=0", "lift=high"):
        with pytest.raises(RerunError):
            parse_thresholds([bad])
