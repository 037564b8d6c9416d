"""``skillsight bench instructions``: callgrind's count of what the rebuild algorithm and the cheap
evaluators execute, the same in every run of the same code and inputs, and only theirs (not the
interpreter's start, the imports, the inputs' loading or the warm-up run); and the budgets it
holds them to (``benchmarks/instruction_budgets.json``), so a change that makes either do more
work fails here."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks import instruction_budgets as budgets
from benchmarks.cli import app
from benchmarks.instructions import main, run_instructions_bench

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind counts the instructions"
)


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, dict[str, Any]]:
    """One run of the command at the budgets' sizes, held to budgets of this environment whose
    rebuild budget is a tenth below the recorded one: its exit code, output and report."""
    recorded = budgets.load()
    lowered = json.loads(json.dumps(recorded))
    lowered["environment"] = budgets.environment()
    rebuild = lowered["workloads"]["rebuild"]
    rebuild["instructions_per_activation"] = int(rebuild["instructions_per_activation"] * 0.9)
    path = tmp_path_factory.mktemp("budgets") / "lowered.json"
    path.write_text(json.dumps(lowered), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["instructions", "--budget", "--budget-file", str(path), "--json"]
    )
    start = result.output.find("{\n")
    assert start >= 0, result.output
    report, _ = json.JSONDecoder().raw_decode(result.output[start:])
    return result.exit_code, result.output, report


@needs_valgrind
def test_the_count_is_the_works_alone(counted: tuple[int, str, dict[str, Any]]) -> None:
    _, _, report = counted
    sizes = budgets.sizes(budgets.load())
    rebuild, evaluators, ingest = report["rebuild"], report["evaluators"], report["ingest"]
    assert rebuild["sessions"] == sizes["sessions"]
    assert rebuild["activations"] == 4 * sizes["sessions"]
    assert evaluators["activations"] == sizes["activations"] and evaluators["evaluators"] == 6
    assert ingest["spans"] == sizes["spans"] and ingest["requests"] == -(-sizes["spans"] // 500)
    # at most millions of instructions an activation, and far less a span: not the
    # interpreter's start and imports, which callgrind counts at ~1.7 billion
    assert 100_000 < rebuild["instructions_per_activation"] < 50_000_000
    assert 50_000 < evaluators["instructions_per_activation"] < 20_000_000
    assert 5_000 < ingest["instructions_per_span"] < 5_000_000
    for part, unit in ((rebuild, "activation"), (evaluators, "activation"), (ingest, "span")):
        assert part["instructions"] == pytest.approx(
            part[f"instructions_per_{unit}"] * part[f"{unit}s"], rel=1e-3
        )


@needs_valgrind
def test_the_same_code_and_inputs_count_the_same(counted: tuple[int, str, dict[str, Any]]) -> None:
    _, _, report = counted
    again = run_instructions_bench(**budgets.sizes(budgets.load()))
    # each workload within a ten-thousandth
    for name in ("rebuild", "evaluators", "ingest"):
        assert again[name]["instructions"] == pytest.approx(
            report[name]["instructions"], rel=1e-4
        ), name
    assert run_instructions_bench(sessions=0, activations=0, spans=0) == {}  # all skipped


@needs_valgrind
def test_the_command_fails_a_count_over_its_budget(
    counted: tuple[int, str, dict[str, Any]],
) -> None:
    code, output, _ = counted
    assert code == 1
    assert re.search(r"rebuild over its budget \(\+1\d\.\d%, past the 3% allowed\)", output)
    assert "--record-budget" in output
    assert "evaluators over" not in output  # its budget is the recorded one


@needs_valgrind
def test_the_tree_holds_its_instruction_budgets(counted: tuple[int, str, dict[str, Any]]) -> None:
    _, _, report = counted
    verdicts = budgets.check(report, budgets.load())
    if all(v.state == "not applicable" for v in verdicts):
        pytest.skip("; ".join(f"{v.workload}: {v.reason}" for v in verdicts))
    failed = [f"{v.workload} {v.state} ({v.reason})" for v in verdicts if v.failed]
    assert not failed, (
        f"{failed}: if the change is meant, record the counts with "
        "`skillsight bench instructions --budget --record-budget`"
    )


# -- the budgets' rules, on reports made up here (no count needed) -----------------------------


def _data(**environment: str) -> dict[str, Any]:
    return {
        "environment": {**budgets.environment(), **environment},
        "tolerance": 0.03,
        "workloads": {
            "rebuild": {
                "sessions": 5,
                "steps": 20,
                "activations": 20,
                "instructions_per_activation": 1_000_000,
            },
            "evaluators": {"activations": 100, "instructions_per_activation": 500_000},
        },
    }


def _report(rebuild: int, evaluators: int, sessions: int = 5) -> dict[str, Any]:
    return {
        "rebuild": {
            "sessions": sessions,
            "steps": 20,
            "activations": 4 * sessions,
            "instructions_per_activation": rebuild,
        },
        "evaluators": {
            "activations": 100,
            "evaluators": 6,
            "instructions_per_activation": evaluators,
        },
    }


def _states(report: dict[str, Any], data: dict[str, Any]) -> dict[str, str]:
    return {v.workload: v.state for v in budgets.check(report, data)}


def test_a_count_is_within_over_or_under_its_budget_by_the_tolerance() -> None:
    data = _data()
    assert _states(_report(1_029_000, 485_500), data) == {
        "rebuild": "within",
        "evaluators": "within",
    }
    assert _states(_report(1_031_000, 484_000), data) == {"rebuild": "over", "evaluators": "under"}
    over, under = budgets.check(_report(1_031_000, 484_000), data)
    assert over.failed and under.failed
    assert "+3.1%" in over.reason and "record it" in under.reason


def test_in_another_environment_or_at_other_sizes_a_budget_is_not_applicable() -> None:
    elsewhere = _data(**{"pydantic-core": "0.0.1"})
    verdicts = budgets.check(_report(2_000_000, 500_000), elsewhere)
    assert [v.state for v in verdicts] == ["not applicable", "not applicable"]
    assert not any(v.failed for v in verdicts)
    assert "pydantic-core" in verdicts[0].reason and "0.0.1 recorded" in verdicts[0].reason
    other_sizes = budgets.check(_report(2_000_000, 500_000, sessions=6), _data())
    assert (
        other_sizes[0].state == "not applicable" and "sessions 6 counted" in other_sizes[0].reason
    )
    assert other_sizes[1].state == "within"
    unbudgeted = budgets.check({"other": {"instructions_per_activation": 5}}, _data())
    assert unbudgeted[0].state == "not applicable" and unbudgeted[0].reason == "no budget for it"


def test_recorded_budgets_load_back_with_their_sizes(tmp_path: Path) -> None:
    path = tmp_path / "budgets.json"
    budgets.record(_report(1_000_000, 500_000), path)
    data = budgets.load(path)
    assert data["environment"] == budgets.environment()
    assert budgets.sizes(data) == {"sessions": 5, "steps": 20, "activations": 100, "spans": 0}
    assert _states(_report(1_000_000, 500_000), data) == {
        "rebuild": "within",
        "evaluators": "within",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no instruction budgets at"),
        ("{not json", "are not JSON"),
        ('{"workloads": {}}', "not a budget file"),
        (
            '{"environment": {}, "workloads": {"rebuild": {"instructions_per_activation": "x"}}}',
            "has no instructions per unit",
        ),
    ],
)
def test_a_missing_or_broken_budget_file_is_a_clear_error_before_any_count(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "budgets.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["instructions", "--budget", "--budget-file", str(path)])
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())  # as the console wrapped it
    assert "instructions per activation" not in result.output  # nothing was counted


def test_without_valgrind_the_bench_says_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a folder without valgrind in it
    result = CliRunner().invoke(app, ["instructions", "--sessions", "1"])
    assert result.exit_code == 1
    assert "valgrind is not installed" in result.output


def test_a_child_with_unknown_arguments_says_how_to_call_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["nothing"]) == 2
    assert main(["a", "b"]) == 2
    assert "usage: python -m benchmarks.instructions PLAN_FILE" in capsys.readouterr().out
