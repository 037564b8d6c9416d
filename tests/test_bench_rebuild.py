"""``skillsight bench rebuild`` runs end to end and reports what it rebuilt (tiny sizes)."""

from __future__ import annotations

import io

from rich.console import Console

from benchmarks.rebuild import run_rebuild_bench


def test_bench_rebuild_reports_every_measure() -> None:
    output = io.StringIO()
    report = run_rebuild_bench(
        steps=30, repeat=1, sessions=3, session_steps=10, console=Console(file=output, width=120)
    )
    # a skill every 10 steps in the long session, every 5 in the short ones
    assert (report["steps"], report["activations"], report["trajectory_steps"]) == (30, 3, 32)
    assert (report["sessions"], report["many_activations"]) == (3, 6)
    for measure in (
        "algorithm_ms",
        "read_rebuild_write_ms",
        "activations_per_cpu_s_algorithm",
        "activations_per_cpu_s_pass",
        "activations_per_cpu_s_service_pass",
    ):
        assert report[measure] > 0, measure
    assert "activations / CPU-second" in output.getvalue()
    assert "as the finalizer runs it" in output.getvalue()


def test_bench_rebuild_with_history_reports_the_pass_and_a_read() -> None:
    from benchmarks.rebuild_history import run_history_bench

    report = run_history_bench(history=30, sessions=3, session_steps=10, repeat=1)
    assert (report["history_sessions"], report["sessions"]) == (30, 3)
    for measure in (
        "activations_per_cpu_s_pass",
        "one_session_read_ms",
        "one_session_read_ms_without_history",
    ):
        assert report[measure] > 0, measure
