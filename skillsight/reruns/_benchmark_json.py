"""The report as Anthropic skill-creator's ``benchmark.json``, so its viewer opens our runs.

Each scored attempt is a ``runs[]`` entry (``configuration`` ``with_skill`` or
``without_skill``); its ``result.pass_rate`` is the share of the attempt's present metrics that
met their thresholds (``passed`` / ``total``), the closest thing we have to skill-creator's
graded expectations. ``run_summary`` gives mean, stddev (population), min and max of pass rate,
seconds and tokens per configuration, and ``delta`` the with-minus-without means as signed
strings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from skillsight.reruns._report_model import RerunReport, RunEntry
from skillsight.reruns._scoring import BASELINE, METRICS, THRESHOLDS, WITH_SKILL

CONFIGURATIONS = {WITH_SKILL: "with_skill", BASELINE: "without_skill"}


def _stats(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    mean = math.fsum(values) / len(values)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return {
        "mean": round(mean, 4),
        "stddev": round(spread, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def _result(run: RunEntry) -> dict[str, Any]:
    present = {m: v for m, v in run.metrics.items() if v is not None}
    passed = sum(1 for m, v in present.items() if v >= THRESHOLDS[m] - 1e-9)
    return {
        "pass_rate": round(passed / len(present), 4) if present else 0.0,
        "passed": passed,
        "failed": len(present) - passed,
        "total": len(present),
        "time_seconds": round(run.duration_ms / 1000.0, 3),
        "tokens": run.tokens,
        "errors": 0 if run.status == "ok" else 1,
    }


def benchmark_json(report: RerunReport) -> dict[str, Any]:
    """skill-creator's ``benchmark.json`` of a rerun report."""
    order = {case.case_id: index for index, case in enumerate(report.cases, start=1)}
    runs: list[dict[str, Any]] = []
    for run in report.runs:
        if run.status != "ok" or run.overall is None:
            continue
        runs.append(
            {
                "eval_id": order.get(run.case_id, 0),
                "eval_name": run.case_id,
                "configuration": CONFIGURATIONS.get(run.condition, run.condition),
                "run_number": run.attempt,
                "result": _result(run),
                "expectations": [
                    {
                        "text": metric,
                        "passed": value >= THRESHOLDS[metric] - 1e-9,
                        "evidence": run.reasons.get(metric, ""),
                    }
                    for metric in METRICS
                    if (value := run.metrics.get(metric)) is not None
                ],
                "notes": [f"session {s}" for s in run.session_ids],
            }
        )
    summary: dict[str, Any] = {}
    for name in CONFIGURATIONS.values():
        mine = [r for r in runs if r["configuration"] == name]
        summary[name] = {
            "pass_rate": _stats([r["result"]["pass_rate"] for r in mine]),
            "time_seconds": _stats([r["result"]["time_seconds"] for r in mine]),
            "tokens": _stats([float(r["result"]["tokens"]) for r in mine]),
        }
    summary["delta"] = {
        key: f"{summary['with_skill'][key]['mean'] - summary['without_skill'][key]['mean']:+.2f}"
        for key in ("pass_rate", "time_seconds", "tokens")
    }
    return {
        "metadata": {
            "skill_name": report.skill,
            "skill_path": str(report.config.get("skill_dir", "")),
            "executor_model": str(report.config.get("agent", "")),
            "analyzer_model": "",
            "timestamp": report.finished_at or report.started_at,
            "evals_run": [order[c.case_id] for c in report.cases],
            "runs_per_configuration": int(report.config.get("attempts", 0)),
        },
        "runs": runs,
        "run_summary": summary,
        "notes": [
            f"skillsight rerun {report.run_id}: Skill Lift {report.lift:+.3f}"
            if report.lift is not None
            else f"skillsight rerun {report.run_id}: no paired case"
        ],
    }
