"""``bench rebuild``'s long turn: the bounded provisional rebuilds against one per batch."""

from __future__ import annotations

from benchmarks.rebuild_long import run_long_session_bench


def test_the_bounded_policy_rebuilds_a_growing_turn_a_few_times() -> None:
    report = run_long_session_bench(steps=80, batches=16, per_batch=True)
    bounded, per_batch = report["bounded"], report["per_batch"]
    assert report["batches"] == 16
    assert per_batch["provisional_rebuilds"] == 16  # one after every batch
    # 2x growth from the first batch: after batches 1, 2, 4, 8 and 16 at most
    assert 3 <= bounded["provisional_rebuilds"] <= 5
    assert bounded["total_cpu_s"] < per_batch["total_cpu_s"]
    # below its mark the turn is held on discovery's counts: a look only where it may be over
    assert bounded["span_id_looks"] < bounded["provisional_rebuilds"]
    assert bounded["one_rebuild_cpu_s"] > 0
