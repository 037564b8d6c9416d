"""``skillsight bench instructions``: callgrind's count of what the rebuild algorithm and the cheap
evaluators execute, the same in every run of the same code and inputs, and only theirs (not the
interpreter's start, the imports, the inputs' loading or the warm-up run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli import app
from benchmarks.instructions import main, run_instructions_bench

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind counts the instructions"
)


@needs_valgrind
def test_the_count_is_the_works_alone_and_repeatable() -> None:
    first = run_instructions_bench(sessions=2, steps=20, activations=20)
    rebuild, evaluators = first["rebuild"], first["evaluators"]
    assert rebuild["sessions"] == 2 and rebuild["activations"] == 8
    assert evaluators["activations"] == 20 and evaluators["evaluators"] == 6
    # at most millions of instructions an activation: not the interpreter's start and imports,
    # which callgrind counts at ~1.7 billion
    assert 100_000 < rebuild["instructions_per_activation"] < 50_000_000
    assert 50_000 < evaluators["instructions_per_activation"] < 20_000_000
    assert rebuild["instructions"] == pytest.approx(
        rebuild["instructions_per_activation"] * rebuild["activations"], rel=1e-3
    )
    # the same code and inputs: the same count, within a ten-thousandth
    again = run_instructions_bench(sessions=0, activations=20)
    assert "rebuild" not in again
    assert again["evaluators"]["instructions"] == pytest.approx(
        evaluators["instructions"], rel=1e-4
    )


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
    assert "usage: python -m benchmarks.instructions" in capsys.readouterr().out
