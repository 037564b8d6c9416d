"""A Harbor job's trials read back as a paired rerun.

``skillsight golden export --format harbor`` writes one task per case and condition
(``<case_id>__with_skill``, ``<case_id>__baseline``). Harbor runs them on its sandboxes and keeps
each trial in a folder of its own holding ``agent/trajectory.json`` (ATIF), ``verifier/``
(``reward.txt`` or ``reward.json``), ``config.json`` and ``result.json``. Here every trial under
the job folder is matched to its task (``config.json``'s task path or name, ``result.json``'s
``task_name``, else the trial folder's name, ``<task>__<suffix>``), numbered per task in folder
order as attempts 1..K, and its trajectory scored exactly like a collected run: activations
extracted from the ATIF, the six metrics, the same report. A trial without a trajectory is
counted as ``no_telemetry``; one whose ``result.json`` records an exception and has no trajectory
as ``agent_error``. Harbor's own reward is kept in the row's reasons, not used as a metric.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from skillsight.errors import RerunError
from skillsight.goldens import GoldenSet, task_key
from skillsight.rebuild.activations import extract_activations
from skillsight.rebuild.trajectories import Trajectory, TrajectoryError, atif
from skillsight.reruns._protocol import report_of
from skillsight.reruns._report_model import RerunReport
from skillsight.reruns._scoring import METRICS, RunScorer
from skillsight.store import Store

TRAJECTORY = Path("agent") / "trajectory.json"


@dataclass(frozen=True)
class Trial:
    folder: Path
    case_id: str
    condition: str
    attempt: int


def _json(path: Path) -> Mapping[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, Mapping) else {}


def _task_name(folder: Path) -> str:
    config = _json(folder / "config.json")
    task = config.get("task")
    if isinstance(task, Mapping):
        for key in ("path", "name", "id"):
            value = task.get(key)
            if isinstance(value, str) and value:
                return Path(value).name
    name = _json(folder / "result.json").get("task_name")
    if isinstance(name, str) and name:
        return Path(name).name
    return folder.name.rsplit("__", 1)[0]


def harbor_trials(job: Path) -> list[Trial]:
    """Every trial under ``job`` whose task is one of ours, attempts numbered per task."""
    if not job.is_dir():
        raise RerunError(f"no Harbor job folder {job}")
    folders = sorted(
        {p.parent for p in job.rglob("config.json")}
        | {p.parent.parent for p in job.rglob("trajectory.json") if p.parent.name == "agent"}
    )
    counts: dict[tuple[str, str], int] = {}
    trials = []
    for folder in folders:
        key = task_key(_task_name(folder))
        if key is None:
            continue
        counts[key] = counts.get(key, 0) + 1
        trials.append(Trial(folder, key[0], key[1], counts[key]))
    if not trials:
        raise RerunError(f"no trial of a skillsight task under {job} (task names <case>__<cond>)")
    return trials


def _reward(folder: Path) -> str:
    verifier = folder / "verifier"
    for name in ("reward.txt", "reward.json"):
        try:
            return (verifier / name).read_text(encoding="utf-8").strip()[:200]
        except OSError:
            continue
    return ""


def _seconds(result: Mapping[str, Any], trajectory: Trajectory | None) -> float:
    span = result.get("agent_execution")
    moments: list[str] = []
    if isinstance(span, Mapping):
        moments = [str(span.get("started_at") or ""), str(span.get("finished_at") or "")]
    if not all(moments) and trajectory is not None:
        stamps = [s.timestamp for s in trajectory.steps if s.timestamp]
        moments = [min(stamps), max(stamps)] if stamps else []
    try:
        start, end = (datetime.fromisoformat(m.replace("Z", "+00:00")) for m in moments)
    except ValueError:
        return 0.0
    return max(0.0, (end - start).total_seconds())


def trial_row(trial: Trial, golden: GoldenSet, scorer: RunScorer, run_id: str) -> dict[str, Any]:
    """The ``run_results`` row of one trial."""
    case = golden.case(trial.case_id)
    result = _json(trial.folder / "result.json")
    now = int(time.time() * 1_000_000)
    row: dict[str, Any] = {
        "run_id": run_id, "case_id": trial.case_id, "condition": trial.condition,
        "attempt": trial.attempt, "session_ids": [], "activation_ids": [],
        "skill_invoked": False, **{m: None for m in (*METRICS, "overall")}, "passed": None,
        "tokens": 0, "cost_usd": 0.0, "duration_ms": 0.0, "exit_code": 0, "answer": "",
        "reasons": "{}", "error": "", "started_at": now, "finished_at": now,
    }  # fmt: skip
    trajectory: Trajectory | None = None
    try:
        trajectory = atif.parse((trial.folder / TRAJECTORY).read_text(encoding="utf-8"))
    except OSError:
        failed = result.get("exception_info")
        row["status"] = "agent_error" if failed else "no_telemetry"
        row["error"] = str(failed or f"no {TRAJECTORY} in {trial.folder}")[:2000]
        return row
    except TrajectoryError as exc:
        row.update(status="no_telemetry", error=f"{trial.folder / TRAJECTORY}: {exc}"[:2000])
        return row
    activations = extract_activations(trajectory, project_id=scorer.project_id)
    score = scorer.score(case, trial.condition, trajectory, activations)
    reasons = {**score.reasons, "harbor_reward": _reward(trial.folder)}
    row.update(
        status="ok" if score.overall is not None else "unscored",
        session_ids=[trajectory.session_id or trajectory.trajectory_id or trial.folder.name],
        activation_ids=[a.activation_id for a in activations],
        skill_invoked=score.skill_invoked,
        **score.metrics,
        overall=score.overall,
        passed=score.passed,
        tokens=score.tokens,
        cost_usd=score.cost_usd,
        duration_ms=round(_seconds(result, trajectory) * 1000.0, 3),
        answer=score.answer[:4000],
        reasons=json.dumps(reasons, sort_keys=True),
    )
    return row


def import_harbor(
    store: Store,
    project_id: str,
    golden: GoldenSet,
    job: Path,
    scorer: RunScorer,
    *,
    run_id: str,
    skill_version: str,
    config: Mapping[str, Any],
) -> RerunReport:
    """Score a Harbor job's trials as the run ``run_id`` and return its report."""
    trials = harbor_trials(job)
    unknown = sorted({t.case_id for t in trials} - {c.case_id for c in golden.cases})
    if unknown:
        raise RerunError(f"trials of cases the set does not hold: {', '.join(unknown)}")
    attempts = max(t.attempt for t in trials)
    rows = [trial_row(t, golden, scorer, run_id) for t in trials]
    started = min(r["started_at"] for r in rows)
    run = {
        "run_id": run_id, "skill_name": golden.skill_name, "skill_version": skill_version,
        "set_id": golden.set_id, "set_version": golden.version, "status": "finished",
        "config": json.dumps({**config, "attempts": attempts, "harbor_job": str(job)}),
        "planned": len(golden.replayed()) * 2 * attempts, "finished": len(rows), "report": "",
        "started_at": started, "updated_at": int(time.time() * 1_000_000),
    }  # fmt: skip
    store.runs.write_results(project_id, rows)
    store.runs.write(project_id, run)
    report = report_of(store, project_id, run_id)
    store.runs.write(
        project_id,
        {**run, "report": report.model_dump_json(), "updated_at": int(time.time() * 1e6)},
    )
    return report
