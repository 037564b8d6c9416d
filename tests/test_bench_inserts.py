"""``skillsight bench inserts`` runs end to end: every write both ways, the rows stored once."""

from __future__ import annotations

import pytest

from benchmarks.eval import CHEAP
from benchmarks.inserts import run_insert_bench


def test_bench_inserts_writes_every_workload_both_ways() -> None:
    report = run_insert_bench(rounds=2, sessions=3, spans=40)
    assert list(report["writes"]) == [
        "hand-over of 64 activations (4 inserts)",
        "one session's rebuild (3 inserts)",
        "a pass of 3 sessions' rebuilds (3 inserts)",
        "40 decoded spans (1 insert)",
    ]
    for name, row in report["writes"].items():
        assert row["file_ms"] > 0 and row["python_ms"] > 0, name
        # of the unrounded medians: the rounded ones give it to within their rounding
        assert row["ratio"] == pytest.approx(row["file_ms"] / row["python_ms"], rel=0.02)
    # two hand-overs of 64 activations, a row per cheap evaluator each, written both ways:
    # the second write of a row replaces the first
    assert report["handed_rows"] == 64 * 2 * len(CHEAP)
    assert report["evaluation_rows"] == report["handed_rows"]
