"""``skillsight eval`` (backfill, worker) and ``skillsight gate`` (the CI exit code)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from skillsight.cli._common import (
    ApiOpt,
    ClickhouseOpt,
    DataOpt,
    KeyOpt,
    ProjectOpt,
    app,
    console,
    err,
    eval_app,
    evaluation_source,
    explain_store_error,
    fail,
    load_settings,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError


@eval_app.command("run")
def eval_run(
    since: Annotated[
        datetime | None,
        typer.Option(
            "--since", help="Activations started at or after (ISO 8601, UTC).", show_default=False
        ),
    ] = None,
    evaluator: Annotated[
        list[str] | None,
        typer.Option(
            "--evaluator",
            help="Only this evaluator, on every activation (repeatable; default: the seven "
            "deterministic ones, plus the LLM judges on their sampled share when "
            "SKILLSIGHT_JUDGE_MODEL is set).",
            show_default=False,
        ),
    ] = None,
    skill: Annotated[str, typer.Option("--skill", help="Only this skill.")] = "",
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Score stored activations now (backfill); rows replace earlier ones of the same
    evaluator version. `skillsight serve` scores new activations by itself.

    Example: skillsight eval run --since 2026-11-01 --evaluator security --data ./skillsight-data
    """
    from skillsight.evaluators.scheduler import backfill
    from skillsight.runtime import service_evaluators
    from skillsight.store import open_store

    settings = None
    try:
        settings = load_settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
        try:
            service = service_evaluators(settings, store)
        except SkillsightError:
            store.close()
            raise
    except SkillsightError as exc:
        raise fail(explain_store_error(exc, settings), 2) from exc
    err.print(service.judges, highlight=False)
    try:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("scoring activations", total=None)
            report = backfill(
                store,
                project,
                since=since,
                skill=skill,
                evaluators=evaluator or None,
                registry=service.registry,
                rates=None if evaluator else service.rates,
                trajectories=service.needs_trajectories,
                judges=set(service.judge_names) & set(evaluator or service.registry.names),
                on_total=lambda n: progress.update(task, total=n),
                on_progress=lambda n: progress.advance(task, n),
            )
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    finally:
        store.close()
    console.print(
        f"scored {report.activations} activations: {report.evaluations} evaluations "
        f"({report.scored} scored, {report.failed} failed, {report.errors} evaluator errors) "
        f"in {report.seconds:.1f} s, project {project!r}",
        highlight=False,
    )


@eval_app.command("worker")
def eval_worker(
    worker: Annotated[
        str | None,
        typer.Option(
            "--worker",
            help="This worker's share of activations, INDEX/COUNT "
            "[env SKILLSIGHT_EVAL_WORKER_INDEX, SKILLSIGHT_EVAL_WORKERS].",
            show_default=False,
        ),
    ] = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
) -> None:
    """Score rebuilt sessions from the store in a process of its own (scaled-out set-ups:
    collectors and `skillsight worker` rebuilders apart, with SKILLSIGHT_EVAL_ENABLED=0 on the
    collectors). Stops on SIGTERM after scoring what it found.

    Example: skillsight eval worker --clickhouse clickhouse://ch:8123/skillsight --worker 0/2
    """
    from skillsight.runtime import Services, parse_shard, run_services, settle_heap

    def ready(_: Services) -> None:
        settle_heap(settings.gc_young_threshold)
        print("SKILLSIGHT_EVAL_WORKER_READY", flush=True)

    try:
        share = parse_shard(worker) if worker else (None, None)
        settings = load_settings(
            data=data,
            clickhouse=clickhouse,
            eval_worker_index=share[0],
            eval_workers=share[1],
        )
        services = asyncio.run(run_services(settings, role="evaluate", on_ready=ready))
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    if services.scheduler is None:
        raise fail("evaluation is disabled (SKILLSIGHT_EVAL_ENABLED=0)", 2)
    stats = services.scheduler.stats
    console.print(
        f"scored {stats.sessions_scored} sessions, {stats.evaluations_written} evaluations "
        f"({stats.store_failures} sessions failed)",
        highlight=False,
    )


@app.command()
def gate(
    skill: Annotated[
        str, typer.Option("--skill", help="Skill to gate (default: [gate] skill of the config).")
    ] = "",
    minimum: Annotated[
        list[str] | None,
        typer.Option(
            "--min",
            help="evaluator=threshold: fail when the mean score is below "
            "(repeatable; over skillsight.toml).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[str, typer.Option("--version", help="Only this skill version.")] = "",
    since: Annotated[
        datetime | None,
        typer.Option(
            "--since",
            help="Activations started at or after (ISO 8601, UTC); overrides --window.",
            show_default=False,
        ),
    ] = None,
    window: Annotated[
        str | None,
        typer.Option(
            "--window",
            help="Activations started within this span (default 30d).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Thresholds file (default: skillsight.toml here or in a parent folder).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Exit 1 when a skill's evaluation scores are below their thresholds, printing the
    failing activations with their cited steps; exit 2 when there is nothing to gate.

    Example: skillsight gate --skill csv-summary --min allowed_tools=1.0 --min security=1.0
    """
    from skillsight.cli._evaluation_view import print_gate
    from skillsight.cli._gate import (
        GateConfig,
        GateResult,
        find_config,
        judge,
        parse_min,
        read_config,
    )
    from skillsight.evaluators import DETERMINISTIC

    try:
        path = config or find_config(Path.cwd())
        if config is not None and not config.is_file():
            raise fail(f"no config file {config}", 2)
        file = read_config(path, skill, DETERMINISTIC) if path else GateConfig(skill)
        thresholds = {**file.thresholds, **parse_min(minimum or [], DETERMINISTIC)}
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    skill = skill or file.skill
    if not skill:
        raise fail("no skill to gate: pass --skill NAME or set [gate] skill in skillsight.toml", 2)
    if not thresholds:
        raise fail(
            "no thresholds: pass --min evaluator=value or add [gate.min] to skillsight.toml", 2
        )
    span = window or file.window or "30d"
    try:
        with evaluation_source(api, key, data, clickhouse, project) as source:
            card = source.scorecard(skill, window=span, since=since, version=version)
            verdicts = judge(card, thresholds)
            failing = [
                item
                for v in verdicts
                if not v.ok
                for item in source.below(
                    skill,
                    v.evaluator,
                    v.threshold,
                    window=span,
                    since=since,
                    version=version,
                    limit=20,
                )
            ]
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    result = GateResult(skill, version, card.activations, verdicts, tuple(failing))
    if as_json:
        print(
            json.dumps(
                {
                    "skill": skill,
                    "version": version,
                    "ok": result.ok,
                    "activations": result.activations,
                    "verdicts": [
                        {
                            "evaluator": v.evaluator,
                            "min": v.threshold,
                            "mean": v.mean_score,
                            "pass_rate": v.pass_rate,
                            "scored": v.scored,
                            "ok": v.ok,
                        }
                        for v in verdicts
                    ],
                    "failing": [f.model_dump(mode="json") for f in failing],
                },
                indent=2,
            )
        )
    else:
        print_gate(console, result)
    if not card.activations:
        raise fail(f"no evaluated activations of {skill!r} in the window: nothing to gate", 2)
    if not result.ok:
        raise typer.Exit(1)
