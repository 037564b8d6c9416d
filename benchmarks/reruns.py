"""Paired reruns: what the rerun machinery costs beside the agents, and how long a report takes.

1. **Overhead per paired run.** ``skillsight rerun``'s own path — a fresh workspace, starting the
   agent, waiting for its telemetry to be committed, rebuilt and settled, scoring it, writing the
   row — around a minimal agent (``demo/otlp_agent.py``, which exports its own OTLP and exits).
   One attempt at a time, so each attempt's wall time minus the agent process's own time is the
   machinery's; a paired run is two attempts. The hosted service's start is reported apart.
2. **Report time** for 1,000 cases x 2 conditions x 3 attempts: 6,000 synthetic result rows and a
   1,000-case set in a fresh embedded store; the time to read the rows and build the report
   (two 10,000-resample bootstraps per metric row over 1,000 cases included), and to render it
   as JSON, Markdown and HTML.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from demo._project_files import SALES_CSV, SUMMARY_SCRIPT, csv_summary_skill_md
from skillsight.config import Settings
from skillsight.goldens import GoldenCase, create_set
from skillsight.reruns import (
    METRICS,
    RerunOptions,
    parse_agent,
    render_html,
    render_markdown,
    report_of,
    rerun,
)
from skillsight.store import EmbeddedStore

AGENT = Path(__file__).resolve().parents[1] / "demo" / "otlp_agent.py"
SKILL = "csv-summary"


def _project(root: Path, cases: int) -> tuple[Path, Path, list[GoldenCase]]:
    skill = root / "skills" / SKILL
    (skill / "scripts").mkdir(parents=True)
    script = f".claude/skills/{SKILL}/scripts/summarize_csv.py"
    (skill / "SKILL.md").write_text(csv_summary_skill_md(SKILL, script))
    (skill / "scripts" / "summarize_csv.py").write_text(SUMMARY_SCRIPT)
    (root / "files" / "data").mkdir(parents=True)
    (root / "files" / "data" / "sales.csv").write_text(SALES_CSV)
    golden = [
        GoldenCase(
            case_id=f"case-{i}",
            question=f"What is the total amount in data/sales.csv? ({i})",
            ground_truth="total amount: 133.00",
            expected_skill=SKILL,
            files=["data/sales.csv"],
        )
        for i in range(cases)
    ]
    return skill, root / "files", golden


def overhead(pairs: int, console: Console) -> dict[str, Any]:
    """Run ``pairs`` cases x 2 conditions x 1 attempt, one at a time; per-attempt overhead."""
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-reruns-") as tmp:
        root = Path(tmp)
        skill, files, cases = _project(root, pairs)
        store = EmbeddedStore(root / "data")
        store.migrate()
        try:
            golden = create_set(store, "default", SKILL, cases)
            settings = Settings.load(
                {"data_dir": root / "data", "flush_interval_s": 0.1, "rebuild_quiet_s": 0.2,
                 "rebuild_poll_s": 0.1}
            )  # fmt: skip
            options = RerunOptions(attempts=1, concurrency=1, timeout_s=120, telemetry_wait_s=60)
            started = time.perf_counter()
            report = asyncio.run(
                rerun(
                    settings, store, golden, skill_dir=skill,
                    agent=parse_agent(f"{sys.executable} {AGENT}"), project_id="default",
                    workdir=root / "work", files_root=files, options=options,
                )
            )  # fmt: skip
            wall = time.perf_counter() - started
            rows = store.runs.results("default", report.run_id)
        finally:
            store.close()
    spans = [r["duration_ms"] / 1000.0 for r in rows]
    wall_per = [(r["finished_at_us"] - r["started_at_us"]) / 1e6 for r in rows]
    machinery = [w - a for w, a in zip(wall_per, spans, strict=True)]
    result = {
        "paired_runs": pairs,
        "attempts": len(rows),
        "ok": sum(1 for r in rows if r["status"] == "ok"),
        "wall_s": round(wall, 2),
        "agent_s_mean": round(statistics.fmean(spans), 3),
        "overhead_per_attempt_s_median": round(statistics.median(machinery), 3),
        "overhead_per_paired_run_s": round(2 * statistics.fmean(machinery), 3),
        "startup_and_report_s": round(wall - sum(wall_per), 2),
    }
    console.print(
        f"{pairs} paired runs ({result['attempts']} attempts, {result['ok']} scored) in "
        f"{wall:.1f} s: the agent {result['agent_s_mean']:.2f} s per attempt; the rerun's own "
        f"{result['overhead_per_paired_run_s']:.2f} s per paired run (median "
        f"{result['overhead_per_attempt_s_median']:.2f} s per attempt); start-up and report "
        f"{result['startup_and_report_s']:.1f} s",
        highlight=False,
    )
    return result


def _rows(cases: list[GoldenCase], attempts: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        lift = rng.uniform(-0.1, 0.5)
        for condition in ("with_skill", "baseline"):
            for attempt in range(1, attempts + 1):
                base = rng.uniform(0.2, 0.8) + (lift if condition == "with_skill" else 0.0)
                metrics: dict[str, float | None] = {m: None for m in METRICS}
                metrics["security"] = 1.0 if rng.random() > 0.02 else 0.0
                metrics["goal_accuracy"] = round(min(1.0, max(0.0, base)), 3)
                metrics["behavior_check"] = round(
                    min(1.0, max(0.0, base + rng.uniform(-0.2, 0.2))), 3
                )
                if condition == "with_skill":
                    metrics["skill_execution"] = 1.0 if rng.random() > 0.1 else 0.0
                present = [v for v in metrics.values() if v is not None]
                rows.append({
                    "run_id": "bench", "case_id": case.case_id, "condition": condition,
                    "attempt": attempt, "status": "ok", "session_ids": [f"s-{case.case_id}"],
                    "activation_ids": [], "skill_invoked": condition == "with_skill",
                    **metrics, "overall": sum(present) / len(present),
                    "passed": all(v >= 1.0 for v in present), "tokens": rng.randint(2000, 9000),
                    "cost_usd": 0.01, "duration_ms": rng.uniform(5000, 30000), "exit_code": 0,
                    "answer": "", "reasons": "{}", "error": "", "started_at": 0,
                    "finished_at": 1,
                })  # fmt: skip
    return rows


def report_time(cases_n: int, attempts: int, console: Console) -> dict[str, Any]:
    """Seconds to build and render the report of ``cases_n`` cases x 2 x ``attempts``."""
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-report-") as tmp:
        store = EmbeddedStore(Path(tmp) / "data")
        store.migrate()
        try:
            rng = random.Random(7)
            cases = [
                GoldenCase(case_id=f"case-{i}", question=f"Question {i}?", expected_skill=SKILL)
                for i in range(cases_n)
            ]
            golden = create_set(store, "default", SKILL, cases)
            rows = _rows(cases, attempts, rng)
            store.runs.write_results("default", rows)
            store.runs.write(
                "default",
                {"run_id": "bench", "skill_name": SKILL, "skill_version": "v", "set_id":
                 golden.set_id, "set_version": golden.version, "status": "finished",
                 "config": f'{{"attempts": {attempts}}}', "planned": len(rows),
                 "finished": len(rows), "report": "", "started_at": 0, "updated_at": 1},
            )  # fmt: skip
            started = time.perf_counter()
            report = report_of(store, "default", "bench")
            built = time.perf_counter() - started
            started = time.perf_counter()
            sizes = [len(report.model_dump_json()), len(render_markdown(report)),
                     len(render_html(report))]  # fmt: skip
            rendered = time.perf_counter() - started
        finally:
            store.close()
    result = {
        "cases": cases_n,
        "rows": len(rows),
        "build_s": round(built, 3),
        "render_s": round(rendered, 3),
        "json_bytes": sizes[0],
        "html_bytes": sizes[2],
        "lift": report.lift,
    }
    console.print(
        f"report of {cases_n} cases x 2 conditions x {attempts} attempts ({len(rows)} rows): "
        f"read and built in {built:.2f} s, rendered (JSON {sizes[0] // 1024} KiB, Markdown, "
        f"HTML {sizes[2] // 1024} KiB) in {rendered:.2f} s",
        highlight=False,
    )
    return result


def run_reruns_bench(pairs: int, cases: int, attempts: int, console: Console) -> dict[str, Any]:
    return {
        "overhead": overhead(pairs, console) if pairs else None,
        "report": report_time(cases, attempts, console) if cases else None,
    }
