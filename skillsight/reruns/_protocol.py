"""The paired protocol: every replayed case, both conditions, K attempts, a bounded number at
once, each written as it ends; resumable after a kill.

A run's ``runs`` row is written when it starts (status ``running``) and rewritten as attempts
end; each attempt's ``run_results`` row is written the moment it ends. Starting the same run id
again resumes it: the attempts that have a row are not played again (an attempt killed midway
has none and is played afresh, under a new launch key so the killed launch's telemetry is not
mistaken for its own). When every attempt has a row, the report is built from the stored rows
and kept on the ``runs`` row (status ``finished``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from skillsight.errors import RerunError
from skillsight.goldens import GoldenCase, GoldenSet, load_set
from skillsight.reruns._launch import Attempt, LaunchSettings, run_attempt
from skillsight.reruns._report import build_report
from skillsight.reruns._report_model import RerunReport
from skillsight.reruns._scoring import BASELINE, WITH_SKILL, RunScorer
from skillsight.reruns._stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from skillsight.store import RerunRow, Store

Progress = Callable[[int, int, Mapping[str, Any]], None]
"""Called as attempts end: (finished, planned, the row)."""


@dataclass(frozen=True)
class RerunOptions:
    attempts: int = 3
    concurrency: int = 2
    timeout_s: float = 300.0
    telemetry_wait_s: float = 60.0
    mode: str = "isolation"
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    conditions: tuple[str, ...] = field(default=(WITH_SKILL, BASELINE))

    def check(self) -> None:
        if self.attempts < 1:
            raise RerunError("--attempts must be at least 1")
        if self.concurrency < 1:
            raise RerunError("--concurrency must be at least 1")
        if self.timeout_s <= 0:
            raise RerunError("--timeout must be positive")


def planned(cases: Sequence[GoldenCase], options: RerunOptions) -> list[Attempt]:
    """Every attempt, attempt number outermost so both conditions of a case advance together."""
    return [
        Attempt(case, condition, number)
        for number in range(1, options.attempts + 1)
        for case in cases
        for condition in options.conditions
    ]


def _now_us() -> int:
    return int(time.time() * 1_000_000)


def parsed_results(store: Store, project_id: str, run_id: str) -> list[dict[str, Any]]:
    """The run's stored rows with ``reasons`` decoded (what the report reads)."""
    rows: list[dict[str, Any]] = []
    for stored in store.runs.results(project_id, run_id):
        row: dict[str, Any] = dict(stored)
        try:
            row["reasons"] = json.loads(row.get("reasons") or "{}")
        except ValueError:
            row["reasons"] = {}
        rows.append(row)
    return rows


def _meta(row: RerunRow) -> dict[str, Any]:
    meta: dict[str, Any] = dict(row)
    meta["config"] = json.loads(row["config"] or "{}")
    return meta


def _previous(
    store: Store, project_id: str, run: Mapping[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The newest finished run of the same set on another version of the skill."""
    for row in store.runs.find(project_id, skill=run["skill_name"], set_id=run["set_id"]):
        if (
            row["run_id"] != run["run_id"]
            and row["status"] == "finished"
            and row["skill_version"] != run["skill_version"]
            and row["started_at"] < run["started_at"]
        ):
            return _meta(row), parsed_results(store, project_id, row["run_id"])
    return None


def report_of(
    store: Store,
    project_id: str,
    run_id: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> RerunReport:
    """The report of a stored run, built from its rows (finished or not)."""
    row = store.runs.get(project_id, run_id)
    if row is None:
        raise RerunError(f"no run {run_id!r} in project {project_id!r}")
    meta = _meta(row)
    golden = load_set(store, project_id, row["set_id"], row["set_version"])
    config = meta["config"]
    return build_report(
        meta,
        golden.replayed(),
        parsed_results(store, project_id, run_id),
        previous=_previous(store, project_id, meta),
        resamples=int(config.get("resamples", resamples)),
        seed=int(config.get("seed", seed)),
    )


@dataclass
class RerunPlan:
    run_id: str
    project_id: str
    golden: GoldenSet
    skill_version: str
    launch: LaunchSettings
    options: RerunOptions
    config: dict[str, Any] = field(default_factory=dict)


def _run_row(
    plan: RerunPlan, status: str, finished: int, total: int, started_us: int
) -> dict[str, Any]:
    return {
        "run_id": plan.run_id,
        "skill_name": plan.golden.skill_name,
        "skill_version": plan.skill_version,
        "set_id": plan.golden.set_id,
        "set_version": plan.golden.version,
        "status": status,
        "config": json.dumps({**plan.config, **asdict(plan.options)}, sort_keys=True),
        "planned": total,
        "finished": finished,
        "report": "",
        "started_at": started_us,
        "updated_at": _now_us(),
    }


async def execute(
    store: Store, plan: RerunPlan, scorer: RunScorer, *, progress: Progress | None = None
) -> RerunReport:
    """Play (or resume) the run and return its report, also stored on its ``runs`` row."""
    plan.options.check()
    project = plan.project_id
    existing = await asyncio.to_thread(store.runs.get, project, plan.run_id)
    started_us = _now_us()
    if existing is not None:
        same = (existing["set_id"], existing["skill_name"])
        if same != (plan.golden.set_id, plan.golden.skill_name):
            raise RerunError(
                f"run {plan.run_id} replays set {existing['set_id']} of "
                f"{existing['skill_name']!r}; it cannot be resumed with another set or skill"
            )
        plan.golden = await asyncio.to_thread(
            load_set, store, project, existing["set_id"], existing["set_version"]
        )
        started_us = int(json.loads(existing["config"] or "{}").get("started_us", started_us))
    plan.config["started_us"] = started_us
    attempts = planned(plan.golden.replayed(), plan.options)
    done_rows = await asyncio.to_thread(store.runs.results, project, plan.run_id)
    done = {(r["case_id"], r["condition"], r["attempt"]) for r in done_rows}
    pending = [a for a in attempts if a.key not in done]
    total, finished = len(attempts), len(attempts) - len(pending)
    await asyncio.to_thread(
        store.runs.write, project, _run_row(plan, "running", finished, total, started_us)
    )
    gate = asyncio.Semaphore(plan.options.concurrency)
    lock = asyncio.Lock()

    async def one(attempt: Attempt) -> None:
        nonlocal finished
        async with gate:
            row = await run_attempt(store, plan.launch, attempt, scorer)
        async with lock:
            await asyncio.to_thread(store.runs.write_results, project, [row])
            finished += 1
            await asyncio.to_thread(
                store.runs.write, project, _run_row(plan, "running", finished, total, started_us)
            )
            if progress is not None:
                progress(finished, total, row)

    await asyncio.gather(*(one(a) for a in pending))
    final = _run_row(plan, "finished", finished, total, started_us)
    await asyncio.to_thread(store.runs.write, project, final)
    report = await asyncio.to_thread(
        report_of,
        store,
        project,
        plan.run_id,
        resamples=plan.options.resamples,
        seed=plan.options.seed,
    )
    final["report"] = report.model_dump_json()
    final["updated_at"] = _now_us()
    await asyncio.to_thread(store.runs.write, project, final)
    return report
