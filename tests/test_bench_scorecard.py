"""``skillsight bench scorecard`` on a small store: it generates what it is asked for inside
ClickHouse, times every query, reports them in one structure, and reuses a kept store."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from benchmarks.scorecard import run_scorecard_bench, skill_names, zipf_counts
from skillsight.errors import SkillsightError

pytestmark = pytest.mark.slow

ACTIVATIONS = 3000
SKILLS = 20


def _run(
    folder: Path,
    *,
    keep: bool,
    activations: int = ACTIVATIONS,
    verify: bool = False,
    sustain_s: float = 0.0,
) -> tuple[dict, str]:
    out = io.StringIO()
    report = run_scorecard_bench(
        activations=activations,
        skills=SKILLS,
        data=folder,
        keep=keep,
        repeat=2,
        verify=verify,
        sustain_s=sustain_s,
        console=Console(file=out, width=160),
    )
    return report, out.getvalue()


def test_zipf_counts_add_up_and_fall_with_rank() -> None:
    counts = zipf_counts(10_000_000, 50)
    assert sum(counts) == 10_000_000
    assert counts == sorted(counts, reverse=True)
    assert 0.2 < counts[0] / 10_000_000 < 0.25  # the popular skill holds about a fifth
    with pytest.raises(SkillsightError, match="one activation per skill"):
        zipf_counts(10, 50)


def test_the_bench_generates_what_it_was_asked_and_times_every_query(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    report, text = _run(folder, keep=True)
    counts = zipf_counts(ACTIVATIONS, SKILLS)
    dataset = report["dataset"]
    # every activation once, 1% rebuilt a second time; seven evaluators' rows for each, 2% of
    # them rescored (a second row of the same key)
    assert dataset["activations"] == ACTIVATIONS
    assert ACTIVATIONS < dataset["activation_rows"] < ACTIVATIONS * 1.03
    assert dataset["evaluation_keys"] == 7 * ACTIVATIONS
    assert 7 * ACTIVATIONS < dataset["evaluation_rows"] < 7 * ACTIVATIONS * 1.05
    assert dataset["per_skill"] == dict(zip(skill_names(SKILLS), counts, strict=True))
    assert dataset["reused"] is False and dataset["generated_s"] > 0
    names = skill_names(SKILLS)
    assert report["skills"] == {
        "popular": {
            "name": names[0],
            "activations": counts[0],
            "share": round(counts[0] / ACTIVATIONS, 4),
        },
        "typical": {
            "name": names[SKILLS // 2],
            "activations": counts[SKILLS // 2],
            "share": round(counts[SKILLS // 2] / ACTIVATIONS, 4),
        },
    }
    assert [(q["query"], q["skill"], q["window"]) for q in report["queries"]] == [
        ("skills_list", "all", window) for window in ("7d", "30d", "all")
    ] + [
        (query, role, window)
        for role in ("popular", "typical")
        for query, window in (
            *(
                (query, window)
                for window in ("7d", "30d", "all")
                for query in ("scorecard", "usage", "usage_from_rows")
            ),
            ("gate_below", "30d"),
        )
    ]
    by_key = {(q["query"], q["skill"], q["window"]): q for q in report["queries"]}
    # over all time the scorecard counts every generated activation of the skill; windows
    # fewer; the usage charts count the same activations from the rollups and from the rows
    for role in ("popular", "typical"):
        scored = [by_key[("scorecard", role, w)]["activations"] for w in ("7d", "30d", "all")]
        assert scored[0] < scored[1] < scored[2] == report["skills"][role]["activations"]
        for window in ("7d", "30d", "all"):
            charted = by_key[("usage", role, window)]["activations"]
            assert charted == by_key[("usage_from_rows", role, window)]["activations"] > 0
    # the skills list counts every generated activation over all time, fewer in a window
    listed = [by_key[("skills_list", "all", w)]["activations"] for w in ("7d", "30d", "all")]
    assert listed[0] < listed[1] < listed[2] == ACTIVATIONS
    # the gate finds the popular skill's security failures (2%), at most its page of 20
    assert 0 < by_key[("gate_below", "popular", "30d")]["rows"] <= 20
    for q in report["queries"]:
        assert 0 < q["median_ms"] <= q["p95_ms"]
        assert q["cold_ms"] > 0
    # live traffic: the newest day marked by the hour and whole, read the same either way
    live = report["live"]
    reads = {(q["marked"], q["query"], q["window"]): q for q in live["reads"]}
    expected = [("skills_list", w) for w in ("7d", "30d", "all")] + [("scorecard", "7d")]
    assert sorted(reads) == sorted((m, q, w) for m in ("hours", "day") for q, w in expected)
    for query, window in expected:
        assert (
            reads[("hours", query, window)]["activations"]
            == (reads[("day", query, window)]["activations"])
        )
        assert reads[("hours", query, window)]["median_ms"] > 0
    assert reads[("hours", "skills_list", "all")]["activations"] == ACTIVATIONS
    assert live["hours"] and set(live["refresh_cpu_s"]) == {"hours", "day"}
    assert "live traffic, the refresher's pass" in text
    assert "scorecard queries over 3,000 activations" in text
    assert "the 200 ms target" in text and "skills list: slowest median" in text

    # a store generated by SQL is backfilled into the read models before the queries are timed
    assert report["read_models"]["backfill_s"] > 0 and report["verified"] is None
    again, text = _run(folder, keep=True, verify=True, sustain_s=2.5)
    assert again["dataset"] | {"reused": False} == dataset
    assert again["dataset"]["reused"] is True and "reusing 3,000 activations" in text
    assert again["read_models"]["backfill_s"] is None  # ready since the first run
    verified = again["verified"]
    assert verified["comparisons"] >= 4 * 3 * 7 and verified["rescored_rows"] > 0
    assert 1 <= verified["marked_days"] == verified["refreshed_days"] <= 3
    assert "read models equal to the raw rows" in text
    # steady traffic: every pass finds every skill's newest hour marked; without the hold it
    # refreshes them all, with it the days refreshed by the sweep before it wait
    sustained = again["live"]["sustained"]
    free, held = sustained["no_hold"], sustained["hold"]
    assert free["passes"] >= 1 and free["days_refreshed"] == free["passes"] * SKILLS
    assert free["days_held"] == 0 and held["days_held"] > 0
    assert held["days_refreshed"] + held["days_held"] == held["passes"] * SKILLS
    assert "steady traffic" in text and "of a core" in text
    assert "sustained" not in report["live"]  # --sustain 0 skips it
    with pytest.raises(SkillsightError, match="pass another --data folder"):
        _run(folder, keep=True, activations=ACTIVATIONS + 1)


def test_without_keep_the_store_is_removed(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    report, _ = _run(folder, keep=False, activations=200)
    assert report["dataset"]["activations"] == 200
    assert list(folder.iterdir()) == []  # its own temporary folder inside --data is gone
