"""``skillsight skills``: check SKILL.md folders, record and list them, a skill's scorecard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from skillsight.cli._api import ServiceClient
from skillsight.cli._common import (
    ApiOpt,
    ClickhouseOpt,
    DataOpt,
    KeyOpt,
    ProjectOpt,
    WindowOpt,
    console,
    evaluation_source,
    fail,
    opened_store,
    skills_app,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError

if TYPE_CHECKING:
    from skillsight.store import SkillEntry


@skills_app.command("scan")
def skills_scan(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Folders to search for SKILL.md (or skill folders, or SKILL.md files)."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    store_them: Annotated[
        bool, typer.Option("--store", help="Record the skills without violations in the store.")
    ] = False,
    api: Annotated[
        str | None,
        typer.Option(
            "--api",
            envvar="SKILLSIGHT_API_URL",
            help="Push the skills without violations to the catalogue of a running service "
            "(POST /api/v1/skills; the service checks them again).",
            show_default=False,
        ),
    ] = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Check every SKILL.md below PATHS against the Agent Skills rules; exit 1 on a violation.

    Each violation prints as `file:line: rule: message`. `--store` records the valid skills in
    a local store; `--api URL --key KEY` pushes them to a service running elsewhere (how a
    skills repository's CI keeps a deployed service's catalogue current).

    Example: skillsight skills scan .claude/skills --api https://skillsight.example --key $KEY
    """
    from skillsight.skills import scan

    if store_them and api:
        raise fail("--store records locally and --api pushes to a service: pick one", 2)
    try:
        report = scan(paths)
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    stored = 0
    if api and report.valid_skills:
        stored = _push(api, key, report)
    if store_them and report.valid_skills:
        with opened_store(data, clickhouse, code=2) as store:
            try:
                stored = store.skills.insert(project, report.valid_skills)
            except SkillsightError as exc:
                raise fail(str(exc), 2) from exc
    if as_json:
        print(json.dumps({**report.to_json(), "stored": stored}, indent=2, ensure_ascii=False))
    else:
        for violation in report.violations:
            print(violation)
        summary = (
            f"{len(report.files)} skills scanned, {len(report.valid_skills)} valid, "
            f"{len(report.violations)} violations"
        )
        if store_them:
            summary += f"; {stored} recorded in project {project!r}"
        elif api:
            summary += f"; {stored} recorded by {api}"
        print(summary)
    if report.violations:
        raise typer.Exit(1)


def _push(api: str, key: str | None, report: Any) -> int:
    """Send the valid skills' folders, one archive per parent folder (so each skill's
    source_uri names where it lives); the number recorded."""
    from skillsight.skills import pack_skills

    by_parent: dict[Path, list[Path]] = {}
    for manifest in report.valid_skills:
        folder = manifest.path.absolute()
        by_parent.setdefault(folder.parent, []).append(folder)
    client = ServiceClient(api, key)
    recorded = 0
    for parent, folders in sorted(by_parent.items()):
        try:
            answer = client.post(
                "/api/v1/skills",
                pack_skills(folders),
                "application/gzip",
                {"source": parent.as_uri()},
                accept=frozenset({200, 422}),
            )
        except SkillsightError as exc:
            raise fail(str(exc), 2) from exc
        recorded += len(answer["recorded"])
        for violation in answer["violations"]:
            print(f"{parent / violation['file']}: {violation['rule']}: {violation['message']}")
    return recorded


@skills_app.command("list")
def skills_list(
    name: Annotated[
        str, typer.Option("--name", help="Only this skill (every version of it).")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """List the recorded skill catalogue: every scanned version, newest first per skill.

    Example: skillsight skills list --data ./skillsight-data
    """
    rows: list[dict[str, Any]] | list[SkillEntry]
    if api:
        try:
            rows = ServiceClient(api, key).get("/api/v1/skills", {"name": name})
        except SkillsightError as exc:
            raise fail(str(exc)) from exc
    else:
        with opened_store(data, clickhouse) as store:
            rows = store.skills.find(project, name)
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table(box=None, header_style="bold")
    table.add_column("skill", overflow="fold")
    table.add_column("version", no_wrap=True)
    table.add_column("allowed-tools", overflow="fold")
    table.add_column("scanned", no_wrap=True)
    table.add_column("description", overflow="fold", max_width=60)
    for row in rows:
        tools = row["allowed_tools"]
        table.add_row(
            row["name"],
            row["version"][:12],
            "(any)" if tools is None else " ".join(tools) or "(none)",
            row["scanned_at"][:19],
            row["description"],
        )
    console.print(table)
    console.print(f"{len(rows)} skill versions", style="dim")


@skills_app.command("scorecard")
def skills_scorecard(
    name: Annotated[str, typer.Argument(help="Skill name.")],
    window: WindowOpt = "30d",
    version: Annotated[str, typer.Option("--version", help="Only this skill version.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """A skill's scorecard: activations, pass rate and mean score per evaluator, overall and
    per skill version, with a per-day trend.

    Example: skillsight skills scorecard csv-summary --window 7d --api http://127.0.0.1:8000
    """
    from skillsight.cli._evaluation_view import print_scorecard

    try:
        with evaluation_source(api, key, data, clickhouse, project) as source:
            card = source.scorecard(name, window=window, since=None, version=version)
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    if as_json:
        print(card.model_dump_json(indent=2))
    else:
        print_scorecard(console, card)
