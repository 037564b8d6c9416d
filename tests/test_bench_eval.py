"""``skillsight bench eval`` on a small workload: it scores the synthetic activations with the
six cheap evaluators and reports per-evaluator CPU time and throughput for both output sizes."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from benchmarks.eval import CHEAP, WORKSPACE, run_eval_bench, synthetic_activations
from benchmarks.eval_prompts import run_prompts_eval_bench
from skillsight.evaluators import EvaluationContext, deterministic_registry


def test_bench_eval_reports_every_cheap_evaluator_for_both_workloads() -> None:
    out = io.StringIO()
    report = run_eval_bench(activations=300, selection=0, console=Console(file=out, width=120))
    assert report["cheap_evaluators"] == list(CHEAP)
    assert report["target_per_core"] == 20_000
    assert set(report["machine"]) == {"cpus", "load_average_1m", "python", "processor"}
    assert "skill_selection" not in report  # --selection 0 skips the model
    for label, chars in (("scenario-sized", (100, 300)), ("large outputs", (800, 1300))):
        figures = report[label]
        assert figures["activations"] == 300
        assert chars[0] < figures["output_chars_per_activation"] < chars[1]
        assert list(figures["us_per_activation"]) == list(CHEAP)
        assert all(us > 0 for us in figures["us_per_activation"].values())
        # doing nothing costs something, and less than doing the work
        assert 0 < figures["us_per_activation_six_constant"] < figures["us_per_activation_all_six"]
        # the throughput is the inverse of the measured time per activation
        rate = figures["activations_per_cpu_second"] * figures["us_per_activation_all_six"]
        assert abs(rate - 1e6) < 1e4
    text = out.getvalue()
    assert "all six via run_evaluators" in text and "activations/s per core" in text
    assert "six constant evaluators via run_evaluators" in text


def test_the_synthetic_workload_exercises_the_findings_the_bench_claims() -> None:
    acts, skills = synthetic_activations(400, rows=3)
    registry = deterministic_registry()
    contexts = {m.name: m for m, _ in skills}
    kinds: set[str] = set()
    for a in acts:
        context = EvaluationContext(manifest=contexts[a.skill_name], workspace=WORKSPACE)
        for name in ("security", "tool_errors", "script_execution"):
            kinds.update(f.kind for f in registry.get(name).evaluate(a, context).findings)
    assert {"secret", "rm_rf_outside_workspace", "tool_error", "repeated_call"} <= kinds


def test_a_session_of_prompts_writes_each_activations_rows_once() -> None:
    """Handed over after each of 4 prompts of 3 activations, the session's rows are written
    once per activation; the scheduler that scores every hand-over again writes 3 + 6 + 9 + 12
    activations' rows."""
    out = io.StringIO()
    report = run_prompts_eval_bench(prompts=4, per_prompt=3, console=Console(file=out, width=200))
    assert report["kept"]["rows_written"] == 12 * len(CHEAP)
    assert report["kept"]["unchanged"] == (3 + 6 + 9) * len(CHEAP)
    assert report["rescored"] == {
        "rows_written": 30 * len(CHEAP),
        "unchanged": 0,
        "cpu_s": report["rescored"]["cpu_s"],
    }
    assert "verdicts kept" in out.getvalue()


def test_bench_eval_with_history_reports_the_hand_overs() -> None:
    from benchmarks.eval_history import run_eval_history_bench

    report = run_eval_history_bench(history=600, batch=4, batches=1)
    assert (report["history_rows"], report["batch"], report["evaluators"]) == (600, 4, 6)
    for where in ("empty", "history"):
        for measure in ("new_us_per_activation", "again_us_per_activation"):
            assert report[where][measure] > 0, (where, measure)
        # handed over again unchanged: every verdict read back from the store and kept
        assert report[where]["kept_again"] == 4 * 6, where


def test_bench_eval_backlog_splits_the_schedulers_cpu() -> None:
    from benchmarks.eval_backlog import run_eval_backlog_bench

    report = run_eval_backlog_bench(batch=16, batches=2)
    # every hand-over (the untimed first one too) scored and written by all six
    assert report["rows_written"] == 3 * 16 * 6
    parts = ("evaluators_us", "scoring_rest_us", "write_us")
    assert all(report[part] > 0 for part in parts), report
    assert sum(report[part] for part in parts) == pytest.approx(
        report["us_per_activation"], abs=0.5
    )
    rate = report["activations_per_cpu_s"] * report["us_per_activation"] / 1e6
    assert rate == pytest.approx(1.0, rel=0.01)
