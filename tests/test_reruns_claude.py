"""End to end with the real Claude Code CLI: a failure cluster from the recorded scenarios is
promoted into a golden set, exported to both evals.json formats and read back unchanged, edited by
its author, and replayed by ``skillsight rerun --agent claude`` with K = 3; the report's lift, both
intervals, pass@k and utility equal what is computed here by hand from the stored scores.

Only the model is scripted. It acts on what is in its context, as a model would: with the
``csv-summary`` skill listed it loads the skill and runs its script; without it (the baseline) it
reads the CSV and answers by itself, right on some attempts and wrong on the others (the attempt
number is in the working directory Claude Code tells the model about).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchmarks.clustering_corpus import Corpus
from demo._project_files import SALES_CSV, SUMMARY_SCRIPT, csv_summary_skill_md
from demo.scripted_anthropic import Block, ScriptedAnthropic, Text, ToolUse, last_tool_result_text
from skillsight.api import create_app
from skillsight.clustering import FitOptions, RunOptions, run_clustering
from skillsight.config import Settings
from skillsight.evaluators import default_embedder
from skillsight.runtime import Services
from skillsight.store import EmbeddedStore
from tests.support.lift_by_hand import by_hand, stored_rows

pytestmark = [pytest.mark.claude, pytest.mark.slow]

PROJECT = "default"
SKILL = "csv-summary"
SCRIPT = f".claude/skills/{SKILL}/scripts/summarize_csv.py"
TRUTH = "total amount: 133.00; top region north=57.00"
FAST = {
    "SKILLSIGHT_FLUSH_INTERVAL_S": "0.1",
    "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
    "SKILLSIGHT_REBUILD_POLL_S": "0.1",
}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "skillsight.cli", *args],
        capture_output=True, text=True, timeout=600, env={**os.environ, **FAST, **(env or {})},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


class Model:
    """The scripted model: skill in context → Skill, its script, the script's output; no skill
    → cat the CSV, then an answer that is right on the attempts of ``right[file]``."""

    def __init__(self, right: dict[str, set[int]]) -> None:
        self.right = right

    def turn(self, index: int) -> Any:
        def reply(body: dict[str, Any]) -> Sequence[Block]:
            first = next(m for m in body["messages"] if m["role"] == "user")
            file = re.findall(r"data/[\w.-]+?\.csv", json.dumps(first))[-1]
            if SKILL in json.dumps(body):  # the skill is listed in the context it was given
                if index == 0:
                    return [
                        Text(f"I'll use the {SKILL} skill."),
                        ToolUse("Skill", {"skill": SKILL}),
                    ]
                if index == 1:
                    return [ToolUse("Bash", {"command": f"python3 {SCRIPT} {file}"})]
                return [Text(f"From the skill's script:\n{last_tool_result_text(body)}")]
            if index == 0:
                return [ToolUse("Bash", {"command": f"cat {file}"})]
            where = re.findall(r"baseline-(\d+)/workspace", json.dumps(body))
            if not where:  # a script that cannot tell says so, rather than hang the CLI
                return [Text("scripted model: no baseline attempt in the working directory")]
            attempt = int(where[0])
            total = "133.00" if attempt in self.right[file] else "121.50"
            return [Text(f"The total amount is {total}, and north sold the most (57.00).")]

        return reply


def _cluster_of(store: EmbeddedStore, failing: list[str]) -> str:
    membership = store.clusters.membership(PROJECT, store.clusters.latest_run(PROJECT))
    found = {membership[a] for a in failing if a in membership}
    assert len(found) == 1, found
    return found.pop()


def test_a_promoted_cluster_reruns_paired_through_real_claude_code(tmp_path: Path) -> None:
    data, files = tmp_path / "data", tmp_path / "files"
    settings = Settings.load({"data_dir": data})
    store = EmbeddedStore(data)
    store.migrate()
    corpus = Corpus(store, PROJECT, root=tmp_path / "production")
    rng, now = random.Random(5), time.time_ns() // 1000
    hour = 3_600_000_000
    failing = corpus.instances("skipped_script", 5, rng, end_us=now, span_us=hour)
    other = corpus.instances("tool_error", 5, rng, end_us=now, span_us=hour)  # a second cause
    clean = corpus.instances("one_skill", 2, rng, end_us=now, span_us=hour)
    corpus.write_and_score([*failing, *other, *clean])
    options = RunOptions(fit=FitOptions(min_cluster_size=3))
    run_clustering(store, PROJECT, embedder=default_embedder(), options=options)
    cluster = _cluster_of(store, [i.activation.activation_id for i in failing])

    # one action per source: the cluster through the API, a clean activation beside it
    with TestClient(create_app(Services(settings, store))) as api:
        promoted = api.post(f"/api/v1/clusters/{cluster}/promote", json={"limit": 1})
        assert promoted.status_code == 201, promoted.text
        set_id = promoted.json()["set_id"]
        (case,) = promoted.json()["added"]
        assert case["provenance"]["cluster_id"] == cluster
        assert case["provenance"]["passed_in_production"] is False
        assert (
            case["ground_truth"] is None and case["expected_script"] == "scripts/summarize_csv.py"
        )
        green = clean[0].activation.activation_id
        more = api.post("/api/v1/golden-sets", json={"activation_ids": [green], "set_id": set_id})
        assert more.status_code == 201 and more.json()["version"] == 2
        shown = api.get(f"/api/v1/golden-sets/{set_id}").json()
    store.close()
    assert shown["summary"]["composition"]["green_share"] == 0.5
    cases = shown["cases"]
    assert [c["provenance"]["activation_id"] for c in cases][1] == green

    # both evals.json formats out and back in: the same cases
    for fmt in ("aces", "skill-creator"):
        path = tmp_path / fmt / "evals.json"
        cli("golden", "export", set_id, "--format", fmt, "-o", str(path), "--data", str(data))
        copy = cli("golden", "import", str(path), "--data", str(data)).stdout.split()[0]
        again = json.loads(cli("golden", "show", copy, "--json", "--data", str(data)).stdout)
        assert again["cases"] == cases, fmt

    # the author edits the drafts: the fixture each request names, and the reference answer
    document = json.loads((tmp_path / "aces" / "evals.json").read_text())
    right: dict[str, set[int]] = {}
    for number, item in enumerate(document["cases"]):
        file = re.findall(r"data/[\w.-]+?\.csv", item["question"])[-1]
        right[file] = {1} if number == 0 else {1, 2}
        (files / file).parent.mkdir(parents=True, exist_ok=True)
        (files / file).write_text(SALES_CSV)
        item["ground_truth"] = TRUTH
        item.setdefault("skillsight", {})["files"] = [file]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    cli("golden", "import", str(edited), "--set", set_id, "--note", "fixtures", "--data", str(data))

    skill = tmp_path / "skills" / SKILL
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(csv_summary_skill_md(SKILL, SCRIPT))
    (skill / "scripts" / "summarize_csv.py").write_text(SUMMARY_SCRIPT)
    model = Model(right)
    with ScriptedAnthropic([model.turn(i) for i in range(3)]) as base_url:
        done = cli(
            "rerun", str(skill), "--set", set_id, "--agent", "claude", "--attempts", "3",
            "--concurrency", "3", "--files", str(files), "--run-id", "run-cc", "--seed", "5",
            "--timeout", "120", "--workdir", str(tmp_path / "work"), "--json",
            str(tmp_path / "report.json"), "--fail-under", "lift=0.0", "--data", str(data),
            env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-skillsight-test"},
        )  # fmt: skip
    assert "lift >= 0: ok" in done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["set_version"] == 3 and report["config"]["agent"] == "claude"
    assert {c: v["ok"] for c, v in report["inventory"].items()} == {"with_skill": 6, "baseline": 6}

    store = EmbeddedStore(data)
    try:
        rows = stored_rows(store, PROJECT, "run-cc")
        assert all(r["skill_invoked"] == (r["condition"] == "with_skill") for r in rows)
        assert {r["skill_execution"] for r in rows if r["condition"] == "with_skill"} == {1.0}
        assert {r["goal_accuracy"] for r in rows if r["condition"] == "with_skill"} == {1.0}
        assert sorted(r["goal_accuracy"] for r in rows if r["condition"] == "baseline") == [
            0.5, 0.5, 0.5, 1.0, 1.0, 1.0
        ]  # fmt: skip
        hand = by_hand(rows, seed=5, attempts=3)
        for name in ("overall", "goal_accuracy"):
            mine = next(m for m in report["metrics"] if m["metric"] == name)
            assert mine["n"] == hand[name]["n"] == 2
            assert mine["lift"] == pytest.approx(hand[name]["lift"], abs=2e-6)
            assert mine["ci_normal"] == pytest.approx(hand[name]["ci_normal"], abs=2e-6)
            assert mine["ci_bootstrap"] == pytest.approx(hand[name]["ci_bootstrap"], abs=2e-6)
        for condition in ("with_skill", "baseline"):
            for k in ("1", "2", "3"):
                assert report["pass_at_k"][condition][k] == pytest.approx(
                    hand[f"{condition} pass@{k}"], abs=2e-6
                )
        assert report["utility"] == pytest.approx(hand["utility"], abs=2e-6)
        assert report["utility"] > 0 and report["security_status"] == "Pass"
        with TestClient(create_app(Services(settings, store))) as api:
            served = api.get("/api/v1/runs/run-cc").json()
        assert served["lift"] == report["lift"] and served["runs"] == report["runs"]
    finally:
        store.close()


def test_the_sdk_runner_plays_both_conditions_under_skillsights_instrumentor(
    tmp_path: Path,
) -> None:
    """``--sdk``: the Claude Agent SDK in a child process under skillsight's instrumentor (the
    CLI it drives exports nothing itself), one attempt per condition."""
    data, files = tmp_path / "data", tmp_path / "files"
    (files / "data").mkdir(parents=True)
    (files / "data" / "sales.csv").write_text(SALES_CSV)
    case = {"id": "total", "question": "What is the total amount in data/sales.csv?",
            "ground_truth": TRUTH, "skillsight": {"files": ["data/sales.csv"]}}  # fmt: skip
    (tmp_path / "evals.json").write_text(json.dumps({"skill_name": SKILL, "cases": [case]}))
    cli("golden", "import", str(tmp_path / "evals.json"), "--data", str(data))
    skill = tmp_path / "skills" / SKILL
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(csv_summary_skill_md(SKILL, SCRIPT))
    (skill / "scripts" / "summarize_csv.py").write_text(SUMMARY_SCRIPT)
    model = Model({"data/sales.csv": set()})
    with ScriptedAnthropic([model.turn(i) for i in range(3)]) as base_url:
        cli(
            "rerun", str(skill), "--sdk", "--attempts", "1", "--files", str(files),
            "--run-id", "run-sdk", "--timeout", "120", "--workdir", str(tmp_path / "work"),
            "--json", str(tmp_path / "report.json"), "--data", str(data),
            env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-skillsight-test"},
        )  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["config"]["agent"] == "sdk"
    runs = {r["condition"]: r for r in report["runs"]}
    assert runs["with_skill"]["status"] == runs["baseline"]["status"] == "ok"
    assert runs["with_skill"]["skill_invoked"] and not runs["baseline"]["skill_invoked"]
    assert runs["with_skill"]["metrics"]["goal_accuracy"] == 1.0
    assert runs["baseline"]["metrics"]["goal_accuracy"] == 0.5  # 121.50 is wrong, 57.00 right
    assert len(runs["with_skill"]["session_ids"]) == 1  # the instrumentor's session only
    store = EmbeddedStore(data)
    try:
        conventions = store.query("SELECT DISTINCT source_convention AS c FROM spans")
    finally:
        store.close()
    found = {r["c"] for r in conventions}
    assert "skillsight" in found and "claude_code" not in found  # the CLI exported nothing
