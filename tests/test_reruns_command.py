"""``skillsight rerun`` with a command-line agent that exports its own OTLP (tests/support/
otlp_agent.py): the real command, its hosted collector, the finalizer and evaluators, the store.

The report's lift, both intervals, pass@k and utility are held to values computed by hand from
the stored ``run_results`` rows; a rerun killed midway resumes without playing a finished
attempt again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from demo._project_files import SALES_CSV, SUMMARY_SCRIPT, csv_summary_skill_md
from skillsight.store import EmbeddedStore, ServerStore
from tests.support.chdb_http import ChdbHttpServer
from tests.support.lift_by_hand import by_hand, stored_rows

pytestmark = pytest.mark.slow

AGENT = f"{sys.executable} {Path(__file__).parents[1] / 'demo' / 'otlp_agent.py'}"
SKILL = "csv-summary"
# a quicker service than the defaults: rows flushed, sessions found quiet and rebuilt sooner
FAST = {
    "SKILLSIGHT_FLUSH_INTERVAL_S": "0.1",
    "SKILLSIGHT_REBUILD_QUIET_S": "0.2",
    "SKILLSIGHT_REBUILD_POLL_S": "0.1",
}
CASES = {
    "total": ("What is the total amount in data/sales.csv?", "total amount: 133.00"),
    "region": ("Which region sold the most in data/sales.csv?", "north 57.00"),
}


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsight.cli", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **FAST, **(env or {})},
    )  # fmt: skip


def project(root: Path, cases: tuple[str, ...] = tuple(CASES)) -> Path:
    """The skill, the fixture file and an ACES evals.json of ``cases`` under ``root``."""
    skill = root / "skills" / SKILL
    (skill / "scripts").mkdir(parents=True)
    script = f".claude/skills/{SKILL}/scripts/summarize_csv.py"
    (skill / "SKILL.md").write_text(csv_summary_skill_md(SKILL, script))
    (skill / "scripts" / "summarize_csv.py").write_text(SUMMARY_SCRIPT)
    (root / "files" / "data").mkdir(parents=True)
    (root / "files" / "data" / "sales.csv").write_text(SALES_CSV)
    cases = [
        {
            "id": cid,
            "question": q,
            "ground_truth": truth,
            "skillsight": {"files": ["data/sales.csv"]},
        }
        for cid, (q, truth) in CASES.items()
        if cid in cases
    ]
    (root / "evals.json").write_text(json.dumps({"skill_name": SKILL, "cases": cases}))
    return skill


def launches(log: Path) -> Counter[tuple[str, str, str]]:
    """How many times each (case, condition, attempt) was launched to its end."""
    return Counter(tuple(p.name.split(".")[:3]) for p in log.iterdir())  # type: ignore[misc]


def _close(a: float, b: float) -> bool:
    """Equal to the report's six decimals (relative on the utility's 0-100 scale)."""
    return abs(a - b) <= 2e-6 * max(1.0, abs(b))


def test_a_command_agent_rerun_reports_what_the_stored_scores_give(tmp_path: Path) -> None:
    skill, data, log = project(tmp_path), tmp_path / "data", tmp_path / "log"
    log.mkdir()
    store_args = ("--data", str(data))
    imported = cli("golden", "import", str(tmp_path / "evals.json"), *store_args)
    assert imported.returncode == 0, imported.stderr
    env = {"OTLP_AGENT_LOG": str(log), "OTLP_AGENT_CORRECT_ATTEMPTS": "1"}
    run = [
        "rerun", str(skill), "--agent", AGENT, "--attempts", "3",
        "--files", str(tmp_path / "files"), "--timeout", "60", "--telemetry-wait", "30",
        "--run-id", "run-cmd", "--seed", "11",
        "--json", str(tmp_path / "report.json"), "--html", str(tmp_path / "report.html"),
        "--benchmark-json", str(tmp_path / "benchmark.json"), "--fail-under", "lift=0.0",
        "--workdir", str(tmp_path / "work"), *store_args,
    ]  # fmt: skip
    done = cli(*run, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lift >= 0: ok" in done.stderr
    report: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    assert report["inventory"]["with_skill"] == {
        "planned": 6, "ok": 6, "timeout": 0, "agent_error": 0, "no_telemetry": 0,
        "unscored": 0, "not_run": 0,
    }  # fmt: skip
    assert launches(log) == Counter(
        {(c, k, str(a)): 1 for c in CASES for k in ("with_skill", "baseline") for a in (1, 2, 3)}
    )

    store = EmbeddedStore(data)
    try:
        rows = stored_rows(store, "default", "run-cmd")
        hand = by_hand(rows, seed=11, attempts=3)
        overall = next(m for m in report["metrics"] if m["metric"] == "overall")
        goal = next(m for m in report["metrics"] if m["metric"] == "goal_accuracy")
        for mine, theirs in ((overall, hand["overall"]), (goal, hand["goal_accuracy"])):
            assert mine["n"] == theirs["n"] == 2
            assert _close(mine["lift"], theirs["lift"])
            assert all(map(_close, mine["ci_normal"], theirs["ci_normal"]))
            assert all(map(_close, mine["ci_bootstrap"], theirs["ci_bootstrap"]))
        assert _close(report["lift"], hand["overall"]["lift"])
        for condition in ("with_skill", "baseline"):
            for k in ("1", "2", "3"):
                assert _close(report["pass_at_k"][condition][k], hand[f"{condition} pass@{k}"])
        assert _close(report["utility"], hand["utility"])
        # the baseline was right on attempt 1 only of the total case: 1/3 of it passed
        assert report["pass_at_k"]["baseline"]["1"] == pytest.approx((1 / 3 + 1) / 2)
        assert hand["goal_accuracy"]["lift"] > 0
        # each run went through the collector, the finalizer and the online evaluators
        with_skill = [r for r in rows if r["condition"] == "with_skill"]
        assert all(r["skill_invoked"] and r["activation_ids"] for r in with_skill)
        activation = store.activations.get("default", with_skill[0]["activation_ids"][0])
        assert activation is not None and activation.skill_name == SKILL
        deadline = time.monotonic() + 30
        while not store.evaluations.for_activation("default", activation.activation_id):
            assert time.monotonic() < deadline, "the online scheduler never scored the run"
            time.sleep(0.1)
        # ... as the run's own traffic, which no production read model counts
        assert activation.rerun_id == "run-cmd"
        assert store.activations.find("default", production=True) == []
        assert store.scorecards.rows("default", SKILL)["versions"] == []
        assert store.scorecards.overview("default")["skills"] == []
        assert store.failures.failing("default", 0) == []
    finally:
        store.close()

    html = (tmp_path / "report.html").read_text()
    assert (
        html.count("<svg") == 2
        and "<script" not in html
        and "://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )
    bench = json.loads((tmp_path / "benchmark.json").read_text())
    assert {r["configuration"] for r in bench["runs"]} == {"with_skill", "without_skill"}
    assert set(bench["run_summary"]) == {"with_skill", "without_skill", "delta"}

    # the same run id again: nothing is played twice; a gate the report cannot judge exits 2,
    # one it fails exits 1
    gates = ("--fail-under", "lift.skill_efficiency=0", "--fail-under", "lift=0.9")
    again = cli(*run[:-2], *gates, *store_args, env=env)
    assert again.returncode == 1, again.stderr  # a failed threshold outranks one not judged
    assert "lift.skill_efficiency >= 0: not applicable" in again.stderr
    assert "lift >= 0.9: FAIL" in again.stderr
    assert sum(launches(log).values()) == 12


def test_a_killed_rerun_resumes_without_repeating_finished_runs(
    tmp_path: Path, chdb_http: ChdbHttpServer
) -> None:
    skill, log = project(tmp_path, ("total",)), tmp_path / "log"
    log.mkdir()
    url = chdb_http.url(f"resume_{os.getpid()}")
    store_args = ("--clickhouse", url)
    assert cli("golden", "import", str(tmp_path / "evals.json"), *store_args).returncode == 0
    run = [
        sys.executable, "-m", "skillsight.cli", "rerun", str(skill), "--agent", AGENT,
        "--attempts", "2", "--concurrency", "1", "--files", str(tmp_path / "files"),
        "--timeout", "60", "--run-id", "run-kill", "--workdir", str(tmp_path / "work"),
        "--json", str(tmp_path / "report.json"), *store_args,
    ]  # fmt: skip
    env = {**os.environ, **FAST, "OTLP_AGENT_LOG": str(log), "OTLP_AGENT_SLEEP_S": "0.3"}
    errors = (tmp_path / "first.err").open("w")
    first = subprocess.Popen(
        run, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=errors
    )
    store = ServerStore(url)
    try:
        deadline = time.monotonic() + 120
        while len(store.runs.results("default", "run-kill")) < 2:
            assert first.poll() is None, (tmp_path / "first.err").read_text()
            assert time.monotonic() < deadline, "the rerun never got 2 attempts done"
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        errors.close()
        finished = {
            (r["case_id"], r["condition"], str(r["attempt"]))
            for r in store.runs.results("default", "run-kill")
        }
        assert 2 <= len(finished) < 4
        (row,) = store.runs.find("default")
        assert row["status"] == "running"  # killed: never marked finished

        second = subprocess.run(run, env=env, capture_output=True, text=True, timeout=240)
        assert second.returncode == 0, second.stderr
        counts = launches(log)
        assert all(counts[key] == 1 for key in finished), counts
        assert set(counts) == {
            ("total", k, str(a)) for k in ("with_skill", "baseline") for a in (1, 2)
        }
        assert len(store.runs.results("default", "run-kill")) == 4
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["status"] == "finished"
        assert sum(v["ok"] for v in report["inventory"].values()) == 4
        assert store.runs.get("default", "run-kill")["status"] == "finished"  # type: ignore[index]
    finally:
        store.close()


def test_runs_past_their_timeout_are_counted_not_imputed(tmp_path: Path) -> None:
    skill, data = project(tmp_path), tmp_path / "data"
    assert (
        cli("golden", "import", str(tmp_path / "evals.json"), "--data", str(data)).returncode == 0
    )
    done = cli(
        "rerun", str(skill), "--agent", AGENT, "--attempts", "1",
        "--files", str(tmp_path / "files"), "--timeout", "1.5",
        "--workdir", str(tmp_path / "work"), "--json", "-",
        "--fail-under", "lift=0.0", "--data", str(data),
        env={"OTLP_AGENT_SLEEP_S": "30"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # nothing to judge: no paired case, not a failure
    report = json.loads(done.stdout)
    for condition in ("with_skill", "baseline"):
        assert report["inventory"][condition]["timeout"] == 2
        assert report["inventory"][condition]["ok"] == 0
    assert report["lift"] is None and report["utility"] is None
    assert {r["status"] for r in report["runs"]} == {"timeout"}
    assert all(r["overall"] is None and r["passed"] is None for r in report["runs"])
    assert "lift >= 0: not applicable" in done.stderr
