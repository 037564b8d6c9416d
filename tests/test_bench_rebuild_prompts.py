"""``bench rebuild``'s session of many prompts, rebuilt after each: with the row cache it reads
each prompt's rows about once, without it the whole session every time; as the finalizer runs
it, each rebuild after the first extends the one before."""

from __future__ import annotations

from benchmarks.rebuild_prompts import run_many_prompts_bench


def test_a_session_of_many_prompts_is_read_whole_only_without_the_row_cache() -> None:
    extended = run_many_prompts_bench(prompts=5, steps=10, mode="extended")
    cached = run_many_prompts_bench(prompts=5, steps=10, mode="cached")
    whole = run_many_prompts_bench(prompts=5, steps=10, mode="whole")
    assert extended["activations"] == cached["activations"] == whole["activations"] == 5
    # the first rebuild keeps no basis, the second does: from the third on, extended
    assert (extended["extended"], cached["extended"], whole["extended"]) == (3, 0, 0)
    rows = whole["rows_read"] // 15  # 1 + 2 + ... + 5 prompts' rows, read whole
    assert whole["rows_read"] == 15 * rows
    # the cache: the first prompt whole, then each new prompt and its last insert again
    for report in (extended, cached):
        assert 5 * rows <= report["rows_read"] < 10 * rows
    for report in (extended, cached, whole):
        assert report["total_cpu_s"] > 0 and report["one_rebuild_cpu_s"] > 0
        assert min(report["read_cpu_s"], report["algorithm_cpu_s"], report["write_cpu_s"]) >= 0
        assert report["algorithm_cpu_s"] > 0
