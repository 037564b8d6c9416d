"""``rerun()``: one call that hosts the service, plays a golden set paired, and reports.

What the command line, the tests and the benchmark call: it loads the skill (its manifest and
version), the project's production baseline of the skill (for ``skill_efficiency``), the judge
when one is configured, starts the hosted service, and executes the plan.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from skillsight.config import Settings
from skillsight.errors import RerunError, SkillError
from skillsight.evaluators import RollingBaseline
from skillsight.evaluators.judges import JudgeClient, judge_settings
from skillsight.goldens import GoldenSet
from skillsight.reruns._agents import AgentCommand
from skillsight.reruns._harbor_import import import_harbor
from skillsight.reruns._host import hosted_service
from skillsight.reruns._launch import LaunchSettings
from skillsight.reruns._protocol import Progress, RerunOptions, RerunPlan, execute
from skillsight.reruns._report_model import RerunReport
from skillsight.reruns._scoring import RunScorer
from skillsight.reruns._workspace import SkillFolders
from skillsight.skills import SkillManifest, load_skill
from skillsight.store import Store

KEY_HEADER = "x-skillsight-key"


def new_run_id() -> str:
    """``run-`` + UTC time + 6 hex digits: sortable and unique."""
    return "run-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def project_headers(settings: Settings, project_id: str) -> dict[str, str]:
    """The OTLP header that files the agents' telemetry under ``project_id``."""
    if not settings.api_keys:
        return {}
    for key, project in sorted(settings.api_keys.items()):
        if project == project_id:
            return {KEY_HEADER: key}
    raise RerunError(
        f"the service has API keys but none for project {project_id!r} "
        "(SKILLSIGHT_API_KEYS=key:project): its agents' telemetry would be refused"
    )


def production_baseline(store: Store, project_id: str, skill: str) -> RollingBaseline:
    """The skill's rolling baseline from its stored production activations (oldest observed
    first): no rerun's, this one's or an earlier one's."""
    baseline = RollingBaseline()
    stored = store.activations.find(project_id, skill=skill, limit=baseline.window, production=True)
    for activation in reversed(stored):
        baseline.observe(activation)
    return baseline


def check_fixtures(golden: GoldenSet, files_root: Path | None) -> None:
    """Every replayed case's fixture files exist, before anything is launched."""
    for case in golden.replayed():
        for relative in case.files:
            if files_root is None:
                raise RerunError(f"case {case.case_id} has fixture files: pass --files DIR")
            if not (files_root / relative).is_file():
                raise RerunError(f"case {case.case_id}: no fixture file {files_root / relative}")


def _manifest(skill_dir: Path, golden: GoldenSet) -> SkillManifest:
    try:
        manifest = load_skill(skill_dir)
    except SkillError as exc:
        raise RerunError(f"the skill to rerun: {exc}") from exc
    if manifest.name != golden.skill_name:
        raise RerunError(
            f"{skill_dir} holds skill {manifest.name!r}, the set is of {golden.skill_name!r}"
        )
    return manifest


def _scorer(
    settings: Settings, store: Store, project_id: str, golden: GoldenSet, manifest: SkillManifest
) -> RunScorer:
    judge = JudgeClient(judge_settings(settings)) if settings.judge_model else None
    return RunScorer(
        golden.skill_name,
        project_id=project_id,
        manifest=manifest,
        baseline=production_baseline(store, project_id, golden.skill_name).get(golden.skill_name),
        judge=judge,
    )


def import_harbor_run(
    settings: Settings,
    store: Store,
    golden: GoldenSet,
    job: Path,
    *,
    skill_dir: Path,
    project_id: str,
    run_id: str = "",
) -> RerunReport:
    """Score the trials of a Harbor job run on the set's exported tasks, as a rerun."""
    manifest = _manifest(skill_dir, golden)
    scorer = _scorer(settings, store, project_id, golden, manifest)
    return import_harbor(
        store,
        project_id,
        golden,
        job,
        scorer,
        run_id=run_id or new_run_id(),
        skill_version=manifest.version,
        config={
            "agent": "harbor",
            "skill_dir": str(skill_dir),
            "judge_model": settings.judge_model,
        },
    )


async def rerun(
    settings: Settings,
    store: Store,
    golden: GoldenSet,
    *,
    skill_dir: Path,
    agent: AgentCommand,
    project_id: str,
    workdir: Path,
    others: Sequence[Path] = (),
    files_root: Path | None = None,
    options: RerunOptions | None = None,
    run_id: str = "",
    progress: Progress | None = None,
) -> RerunReport:
    """Play ``golden`` paired with the agent and return the report (also stored)."""
    options = options or RerunOptions()
    options.check()
    manifest = _manifest(skill_dir, golden)
    skills = SkillFolders.of(skill_dir, others, options.mode)
    check_fixtures(golden, files_root)
    headers = project_headers(settings, project_id)
    scorer = _scorer(settings, store, project_id, golden, manifest)
    hosting = replace(settings, skills_dirs=str(skill_dir.parent.resolve()))
    async with hosted_service(hosting, store) as hosted:
        plan = RerunPlan(
            run_id=run_id or new_run_id(),
            project_id=project_id,
            golden=golden,
            skill_version=manifest.version,
            launch=LaunchSettings(
                run_id="",
                project_id=project_id,
                agent=agent,
                skills=skills,
                files_root=files_root,
                workdir=workdir,
                endpoint=hosted.endpoint,
                headers=headers,
                timeout_s=options.timeout_s,
                telemetry_wait_s=options.telemetry_wait_s,
                drained=hosted.drained,
            ),
            options=options,
            config={
                "agent": agent.name,
                "skill_dir": str(skill_dir),
                "kept_skills": [p.name for p in skills.others],
                "judge_model": settings.judge_model,
            },
        )
        plan.launch = replace(plan.launch, run_id=plan.run_id)
        return await execute(store, plan, scorer, progress=progress)
