"""Harbor: a golden set exported as task directories (checked against Harbor's layout), and a
Harbor job's ATIF trajectories read back and scored as a paired rerun."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from demo._project_files import SALES_CSV, SUMMARY_SCRIPT, csv_summary_skill_md, skill_md
from skillsight.config import Settings
from skillsight.errors import GoldenSetError
from skillsight.goldens import GoldenCase, GoldenSet, create_set, export_harbor
from skillsight.ingest import otlp
from skillsight.rebuild.session import rebuild_session
from skillsight.reruns import goal_accuracy, import_harbor_run
from skillsight.store import EmbeddedStore
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

SKILL = "csv-summary"
SCENARIOS = Path(__file__).parent / "fixtures" / "captures" / "scenarios"
TRUTH = "total amount: 133.00; north=57.00"
PROMPT = "What is the total amount in data/sales.csv, and which region sold the most?"


def _skills(root: Path) -> tuple[Path, Path]:
    skill, decoy = root / "skills" / SKILL, root / "skills" / "release-notes"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(csv_summary_skill_md(SKILL, "scripts/summarize_csv.py"))
    (skill / "scripts" / "summarize_csv.py").write_text(SUMMARY_SCRIPT)
    decoy.mkdir(parents=True)
    (decoy / "SKILL.md").write_text(skill_md("release-notes", "Draft release notes.", "# Notes"))
    return skill, decoy


def _golden() -> GoldenSet:
    case = GoldenCase(
        case_id="total", question=PROMPT, ground_truth=TRUTH, expected_skill=SKILL,
        files=["data/sales.csv"], tags={"difficulty_bucket": "easy"},
    )  # fmt: skip
    return GoldenSet(set_id="gs-h", skill_name=SKILL, version=4, cases=[case],
                     defaults={"timeout_sec": 240})  # fmt: skip


def test_the_export_has_harbors_task_layout(tmp_path: Path) -> None:
    skill, decoy = _skills(tmp_path)
    (tmp_path / "files" / "data").mkdir(parents=True)
    (tmp_path / "files" / "data" / "sales.csv").write_text(SALES_CSV)
    written = export_harbor(
        _golden(), tmp_path / "tasks", skill_dir=skill, files_root=tmp_path / "files",
        other_skills=[decoy],
    )  # fmt: skip
    assert [p.name for p in written] == ["total__with_skill", "total__baseline"]
    for task in written:
        files = sorted(str(p.relative_to(task)) for p in task.rglob("*") if p.is_file())
        skills = ["environment/skills/release-notes/SKILL.md"]
        if task.name.endswith("with_skill"):
            skills += [f"environment/skills/{SKILL}/SKILL.md",
                       f"environment/skills/{SKILL}/scripts/summarize_csv.py"]  # fmt: skip
        assert files == sorted([
            "environment/Dockerfile", "environment/files/data/sales.csv", *skills,
            "instruction.md", "solution/solve.sh", "task.toml", "tests/case.json",
            "tests/check_answer.py", "tests/test.sh",
        ])  # fmt: skip
        toml = tomllib.loads((task / "task.toml").read_text())
        assert toml["version"] == "1.0"
        assert toml["agent"]["timeout_sec"] == 240.0 and toml["verifier"]["timeout_sec"] > 0
        assert {"build_timeout_sec", "cpus", "memory_mb"} <= set(toml["environment"])
        metadata = toml["metadata"]
        assert (metadata["case_id"], metadata["golden_set"], metadata["golden_set_version"]) == (
            "total", "gs-h", 4,
        )  # fmt: skip
        assert metadata["condition"] == task.name.split("__")[1]
        assert (task / "instruction.md").read_text().startswith(PROMPT)
        dockerfile = (task / "environment" / "Dockerfile").read_text()
        assert dockerfile.startswith("FROM ") and "COPY skills/ /app/.claude/skills/" in dockerfile
        for script in ("tests/test.sh", "solution/solve.sh"):
            assert os.access(task / script, os.X_OK), script
        assert "/logs/verifier/reward.txt" in (task / "tests" / "test.sh").read_text()
        solve = (task / "solution" / "solve.sh").read_text().splitlines()[-1]
        assert shlex.split(solve)[2] == TRUTH  # printf '%s\n' <truth> > /app/answer.txt

    # the verifier applies goal_accuracy's rule to the answer the agent left
    task = written[0]
    for answer in ("The total amount is 133.00; north leads (57.00).", "120 total; north 57", ""):
        path = tmp_path / "answer.txt"
        path.write_text(answer)
        reward = subprocess.run(
            [sys.executable, str(task / "tests" / "check_answer.py"),
             str(task / "tests" / "case.json"), str(path)],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        expected = goal_accuracy(TRUTH, answer).score
        assert float(reward) == pytest.approx(expected), answer
    with pytest.raises(GoldenSetError, match="no fixture file"):
        export_harbor(_golden(), tmp_path / "x", skill_dir=skill, files_root=tmp_path)


def _trajectory(store: EmbeddedStore, scenario: str) -> str:
    """The ATIF trajectory of a recorded scenario, as Harbor would have written it."""
    project = f"capture-{scenario}"
    for signal, schema, table in (
        (otlp.TRACES, SPAN_SCHEMA, store.spans),
        (otlp.LOGS, EVENT_SCHEMA, store.events),
    ):
        name = "traces.json" if signal == otlp.TRACES else "logs.json"
        body = (SCENARIOS / scenario / "claude_code" / name).read_bytes()
        table.insert(
            otlp.decode(signal, body, otlp.JSON, project, otlp.Limits()).columns.to_arrow(schema)
        )
    rebuilt = rebuild_session(
        store.spans.find(project, limit=10_000), store.events.find(project, limit=10_000)
    )
    return rebuilt.trajectory.model_dump_json(exclude_none=True)


def _trial(job: Path, name: str, task: str, trajectory: str | None, **result: object) -> None:
    trial = job / name
    (trial / "verifier").mkdir(parents=True)
    (trial / "config.json").write_text(json.dumps({"task": {"path": f"/tasks/{task}"}}))
    (trial / "result.json").write_text(json.dumps({"task_name": task, **result}))
    (trial / "verifier" / "reward.txt").write_text("1.0")
    if trajectory is not None:
        (trial / "agent").mkdir()
        (trial / "agent" / "trajectory.json").write_text(trajectory)


def test_a_harbor_jobs_trajectories_are_scored_as_a_paired_rerun(tmp_path: Path) -> None:
    skill, _ = _skills(tmp_path)
    store = EmbeddedStore(tmp_path / "data")
    store.migrate()
    try:
        golden = create_set(store, "default", SKILL, _golden().cases)
        job = tmp_path / "job"
        _trial(
            job, "total__with_skill__7Hd2k", "total__with_skill", _trajectory(store, "one_skill")
        )
        _trial(job, "total__baseline__a81Kd", "total__baseline", _trajectory(store, "no_skill"))
        _trial(job, "total__baseline__q02Lm", "total__baseline", None,
               exception_info={"exception_type": "AgentTimeoutError"})  # fmt: skip
        _trial(job, "other__x", "someone-elses-task", _trajectory(store, "no_skill"))
        settings = Settings.load({"data_dir": tmp_path / "data"})
        report = import_harbor_run(
            settings, store, golden, job, skill_dir=skill, project_id="default", run_id="h-1"
        )
        assert report.run_id == "h-1" and report.config["agent"] == "harbor"
        assert report.inventory["with_skill"]["ok"] == 1
        assert (
            report.inventory["baseline"]["ok"],
            report.inventory["baseline"]["agent_error"],
        ) == (1, 1)
        runs = {(r.condition, r.attempt): r for r in report.runs}
        with_skill, baseline = runs[("with_skill", 1)], runs[("baseline", 1)]
        assert with_skill.skill_invoked and with_skill.activation_ids
        assert with_skill.metrics["skill_execution"] == 1.0
        assert with_skill.metrics["goal_accuracy"] == 1.0  # the one_skill answer quotes the script
        assert not baseline.skill_invoked and baseline.metrics["skill_execution"] is None
        assert baseline.metrics["goal_accuracy"] == 0.0  # no_skill answers about the columns
        assert baseline.reasons["harbor_reward"] == "1.0"
        assert runs[("baseline", 2)].status == "agent_error"
        assert report.metric("goal_accuracy").lift == 1.0
        assert store.runs.get("default", "h-1")["status"] == "finished"  # type: ignore[index]
    finally:
        store.close()
