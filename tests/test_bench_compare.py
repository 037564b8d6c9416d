"""``skillsight bench compare``: a bench run in a worktree of a base revision and in this
checkout, alternated, and every figure given as medians, their ratio and the paired ratios."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.compare import ROOT, CompareError, compare, figures, report_of, worktree


def _in_a_git_checkout() -> bool:
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.returncode == 0 and found.stdout.strip() == "true"


# the comparison checks a base revision out; a source tree without its git history has none
needs_git = pytest.mark.skipif(not _in_a_git_checkout(), reason="not a git checkout")

EVAL = ["eval", "--activations", "200", "--selection", "0", "--prompts", "0", "--history", "0"]


def test_figures_are_the_numbers_every_run_reports_that_moved() -> None:
    bases = [
        {"rate": 100, "nested": {"ms": [2.0, 4.0]}, "ok": True, "n": 5, "only": 1.0},
        {"rate": 200, "nested": {"ms": [2.0, 6.0]}, "ok": True, "n": 5},
    ]
    heads = [
        {"rate": 300, "nested": {"ms": [1.0, 4.0]}, "ok": False, "n": 5, "name": "x"},
        {"rate": 300, "nested": {"ms": [1.0, 2.0]}, "ok": True, "n": 5},
    ]
    found = {f.name: f for f in figures(bases, heads)}
    # booleans, texts, a figure one run lacks, and one that never moved are left out
    assert sorted(found) == ["nested.ms.0", "nested.ms.1", "rate"]
    rate = found["rate"]
    assert (rate.base, rate.head) == ([100.0, 200.0], [300.0, 300.0])
    assert rate.ratio == pytest.approx(300 / 150)
    assert rate.paired == pytest.approx((1.5, 3.0))
    assert found["nested.ms.1"].ratio == pytest.approx(3.0 / 5.0)
    zero = figures([{"x": 0}], [{"x": 1}])[0]
    assert zero.ratio is None and zero.paired is None  # no ratio to a base of 0


def test_the_report_is_the_json_printed_after_the_tables() -> None:
    stdout = 'a table\n{ not json\n│ row │\n{\n  "rate": 1.5,\n  "inner": {"n": 2}\n}\n'
    assert report_of(stdout) == {"rate": 1.5, "inner": {"n": 2}}
    with pytest.raises(CompareError, match="no JSON report"):
        report_of("a table\n[1, 2]\n")


@needs_git
def test_a_bench_runs_in_both_trees_alternated_and_the_worktree_is_removed() -> None:
    before = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
    commit, found = compare("HEAD", EVAL, runs=2)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert commit == head
    by_name = {f.name: f for f in found}
    rates = [name for name in by_name if name.endswith("activations_per_cpu_second")]
    assert rates, sorted(by_name)
    for name in rates:
        figure = by_name[name]
        assert len(figure.base) == len(figure.head) == 2
        assert all(value > 0 for value in figure.base + figure.head)
        assert figure.ratio is not None and figure.ratio > 0
    after = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert after == before


@needs_git
def test_a_base_that_is_not_a_revision_or_a_bench_that_fails_is_a_clear_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(CompareError, match="no-such-revision"):
        compare("no-such-revision", EVAL, warmup=0)
    with pytest.raises(CompareError, match="the bench failed"):
        compare("HEAD", ["no-such-bench"], runs=1, warmup=0)
    with pytest.raises(CompareError, match="name a bench command"):
        compare("HEAD", [])
    with pytest.raises(CompareError, match="at least"):
        compare("HEAD", EVAL, runs=0)
    with pytest.raises(CompareError, match="git"), worktree("HEAD", repo=tmp_path):
        pass  # not a repository


@needs_git
def test_the_command_reports_the_figures_asked_for() -> None:
    from typer.testing import CliRunner

    from benchmarks.cli import app

    only = "activations_per_cpu_second"
    args = ["compare", "--runs", "1", "--warmup", "0", "--only", only, "--json", "--", *EVAL]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index('{\n  "base"') :])
    assert report["command"] == EVAL and report["runs"] == 1
    assert report["figures"] and all(only in name for name in report["figures"])
    for figure in report["figures"].values():
        assert len(figure["base"]) == len(figure["head"]) == 1 and figure["ratio"] > 0


@needs_git
def test_the_runs_alternate_after_the_warm_up_runs_which_are_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Base, this, this, base, base, this … after one warm-up run in each tree: the order the
    figures rest on (the runs themselves are real in the test above; here each is recorded)."""
    import benchmarks.compare as module

    order: list[str] = []

    def recorded(tree: Path, args: list[str], *, timeout_s: float = 0) -> dict[str, float]:
        side = "this" if tree == ROOT else "base"
        order.append(side)
        return {"n": float(len(order)), "warm": float(len(order) <= 2)}

    monkeypatch.setattr(module, "run_bench", recorded)
    _, found = compare("HEAD", EVAL, runs=3, warmup=1)
    assert order == ["base", "this", "base", "this", "this", "base", "base", "this"]
    (n,) = [f for f in found if f.name == "n"]  # "warm" was 1 only in the dropped runs
    assert (n.base, n.head) == ([3.0, 6.0, 7.0], [4.0, 5.0, 8.0])
