"""``skillsight golden``: golden sets built from production, in and out of evals.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from skillsight.cli._common import (
    ClickhouseOpt,
    DataOpt,
    ProjectOpt,
    console,
    err,
    fail,
    load_settings,
    opened_store,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError

golden_app = typer.Typer(
    help="Golden sets: per-skill regression cases promoted from production, as evals.json.",
    no_args_is_help=True,
)

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="aces (BenchFlow/ACES evals.json), skill-creator (Anthropic's evals.json), "
        "trigger (skill-creator trigger evals); export also: harbor (task directories).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@golden_app.command("list")
def golden_list(
    skill: Annotated[str, typer.Option("--skill", help="Only this skill's sets.")] = "",
    as_json: JsonOpt = False,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """List golden sets (their newest version), with how many cases passed in production.

    Example: skillsight golden list --skill csv-summary --data ./skillsight-data
    """
    from skillsight.reports import golden_sets

    try:
        with opened_store(data, clickhouse) as store:
            found = golden_sets(store, project, skill=skill)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps([s.model_dump(mode="json") for s in found], indent=2))
        return
    table = Table("set", "skill", "version", "cases", "green", "updated", "note")
    for entry in found:
        share = entry.composition.green_share
        table.add_row(
            entry.set_id,
            entry.skill_name,
            str(entry.version),
            str(entry.composition.replayed),
            "—" if share is None else f"{share:.0%}",
            entry.created_at,
            entry.note,
        )
    console.print(table)


@golden_app.command("show")
def golden_show(
    set_id: Annotated[str, typer.Argument(help="Golden set id.")],
    version: Annotated[int, typer.Option("--version", help="This version (0: newest).")] = 0,
    as_json: JsonOpt = False,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Show a golden set's cases and composition.

    Example: skillsight golden show gs-4694d0065775 --version 2
    """
    from skillsight.reports import golden_set

    try:
        with opened_store(data, clickhouse) as store:
            shown = golden_set(store, project, set_id, version)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(shown.model_dump_json(indent=2))
        return
    head = shown.summary
    console.print(
        f"[bold]{head.set_id}[/] v{head.version} · {head.skill_name} · {head.note}",
        highlight=False,
    )
    console.print(head.composition.advice, highlight=False)
    table = Table("case", "status", "expects", "green", "question", "expected behaviour")
    for case in shown.cases:
        passed = case.provenance.passed_in_production
        table.add_row(
            case.case_id,
            case.status,
            case.expected_skill or "(none)",
            "—" if passed is None else ("yes" if passed else "no"),
            case.question[:60],
            "; ".join(case.expected_behavior)[:80],
        )
    console.print(table)


@golden_app.command("promote")
def golden_promote(
    activation: Annotated[
        list[str] | None,
        typer.Option(
            "--activation", help="Activation id to promote (repeatable).", show_default=False
        ),
    ] = None,
    cluster: Annotated[
        str, typer.Option("--cluster", help="Promote this failure cluster's exemplars.")
    ] = "",
    set_id: Annotated[
        str, typer.Option("--set", help="Into this set (default: the skill's newest set).")
    ] = "",
    skill: Annotated[str, typer.Option("--skill", help="The skill whose set receives.")] = "",
    limit: Annotated[int, typer.Option("--limit", help="Most cases from a cluster.")] = 10,
    as_json: JsonOpt = False,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Draft golden cases from activations (or a failure cluster) into a new version of the
    skill's set: the request, the answer when every evaluation passed, expected behaviours
    from what failed (by SKILLSIGHT_JUDGE_MODEL when set, else by rule). Edit them with export,
    then import --set.

    Example: skillsight golden promote --activation 9f1c2e0a7b3d4c5e8f6a1b2c3d4e5f60
    """
    from skillsight.evaluators.judges import JudgeClient, judge_settings
    from skillsight.goldens import promote, promote_cluster

    if bool(activation) == bool(cluster):
        raise fail("give --activation ID (repeatable) or --cluster ID", 2)
    try:
        settings = load_settings(data=data, clickhouse=clickhouse)
        judge = JudgeClient(judge_settings(settings)) if settings.judge_model else None
        with opened_store(data, clickhouse) as store:
            if cluster:
                done = promote_cluster(
                    store, project, cluster, set_id=set_id, skill=skill, limit=limit, judge=judge
                )
            else:
                done = promote(
                    store, project, activation or [], set_id=set_id, skill=skill, judge=judge
                )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(
            json.dumps(
                {
                    "set_id": done.golden.set_id,
                    "version": done.golden.version,
                    "added": [c.model_dump(mode="json") for c in done.added],
                    "skipped": done.skipped,
                },
                indent=2,
            )
        )
        return
    console.print(
        f"{done.golden.set_id} v{done.golden.version}: {len(done.added)} case(s) added"
        + (f", {len(done.skipped)} already there" if done.skipped else ""),
        highlight=False,
    )
    for case in done.added:
        console.print(f"  {case.case_id}  {case.question[:70]}", highlight=False)


@golden_app.command("import")
def golden_import(
    path: Annotated[Path, typer.Argument(help="evals.json (either format) or trigger evals.")],
    skill: Annotated[
        str, typer.Option("--skill", help="The skill (needed for trigger evals).")
    ] = "",
    fmt: Annotated[str, typer.Option("--format", help="Force a format (default: detect).")] = "",
    set_id: Annotated[
        str, typer.Option("--set", help="Write the next version of this set instead.")
    ] = "",
    note: Annotated[str, typer.Option("--note", help="What changed in this version.")] = "",
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Import cases as a new golden set, or as the next version of --set (an edited export).

    Example: skillsight golden import my-skill/evals/evals.json --set gs-4694d0065775
    """
    from skillsight.goldens import import_cases, read_cases_file

    try:
        imported = read_cases_file(path, skill=skill, fmt=fmt)
        with opened_store(data, clickhouse) as store:
            golden = import_cases(store, project, imported, set_id=set_id, note=note)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    console.print(
        f"{golden.set_id} v{golden.version}: {len(golden.cases)} case(s) of "
        f"{golden.skill_name} ({imported.format})",
        highlight=False,
    )


@golden_app.command("export")
def golden_export(
    set_id: Annotated[str, typer.Argument(help="Golden set id.")],
    fmt: FormatOpt = "aces",
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="File (folder for harbor); default stdout."),
    ] = None,
    version: Annotated[int, typer.Option("--version", help="This version (0: newest).")] = 0,
    skill_dir: Annotated[
        Path | None, typer.Option("--skill-dir", help="harbor: the skill's folder.")
    ] = None,
    files: Annotated[
        Path | None, typer.Option("--files", help="harbor: folder the fixture paths are in.")
    ] = None,
    keep: Annotated[
        list[Path] | None,
        typer.Option("--keep-skill", help="harbor: a support or decoy skill kept in both."),
    ] = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Write a golden set as evals.json (aces or skill-creator), trigger evals, or Harbor
    task directories (one per case and condition).

    Example: skillsight golden export gs-4694d0065775 --format skill-creator -o evals/evals.json
    """
    from skillsight.goldens import export_harbor, load_set, render_cases

    try:
        with opened_store(data, clickhouse) as store:
            golden = load_set(store, project, set_id, version)
        if fmt == "harbor":
            if output is None or skill_dir is None:
                raise fail("harbor export needs -o FOLDER and --skill-dir DIR", 2)
            written = export_harbor(
                golden,
                output,
                skill_dir=skill_dir,
                files_root=files or Path.cwd(),
                other_skills=keep or [],
            )
            err.print(f"wrote {len(written)} Harbor tasks under {output}", highlight=False)
            return
        text = json.dumps(render_cases(golden, fmt), indent=2, ensure_ascii=False) + "\n"
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc}") from exc
    err.print(f"wrote {output}", highlight=False)
