"""``skillsight activations`` and ``skillsight trajectories``: what the service rebuilt."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from skillsight.cli._common import (
    ApiOpt,
    ClickhouseOpt,
    DataOpt,
    KeyOpt,
    ProjectOpt,
    activations_app,
    console,
    err,
    fail,
    read_source,
    trajectories_app,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError


@activations_app.command("list")
def activations_list(
    skill: Annotated[str, typer.Option("--skill", help="Only this skill.")] = "",
    session: Annotated[str, typer.Option("--session", help="Only this session id.")] = "",
    since: Annotated[
        datetime | None,
        typer.Option("--since", help="Started at or after (ISO 8601, UTC).", show_default=False),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Most activations to show.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """List skill activations, newest first.

    Example: skillsight activations list --skill csv-summary --api http://127.0.0.1:8000
    """
    try:
        with read_source(api, key, data, clickhouse, project) as source:
            found = source.activations(skill=skill, session_id=session, since=since, limit=limit)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps([a.model_dump(mode="json") for a in found], indent=2, ensure_ascii=False))
    else:
        from skillsight.cli.views import print_activations

        print_activations(console, found)


@activations_app.command("show")
def activations_show(
    activation_id: Annotated[str, typer.Argument(help="Activation id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Show one activation as a timeline: trigger, request, each internal tool call with its
    arguments and result, the integration message, tokens, cost and duration.

    Example: skillsight activations show 9f1c2e0a7b3d4c5e8f6a1b2c3d4e5f60 --api http://127.0.0.1:8000
    """
    try:
        with read_source(api, key, data, clickhouse, project) as source:
            found = source.activation(activation_id)
            scores = source.evaluations(found)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(found.model_dump_json(indent=2))
    else:
        from skillsight.cli.views import print_activation, print_evaluations

        print_activation(console, found)
        console.print()
        print_evaluations(console, scores)


@trajectories_app.command("export")
def trajectories_export(
    session_id: Annotated[
        str, typer.Argument(help="Session id (or trace id of a sessionless trace).")
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Write to this file instead of stdout.", show_default=False
        ),
    ] = None,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Export a session's trajectory as an ATIF-v1.7 JSON document.

    Example: skillsight trajectories export 093ac2ae-a7ab-4b25-b958-3919a7e38a98 -o session.json
    """
    try:
        with read_source(api, key, data, clickhouse, project) as source:
            document = source.trajectory(session_id)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    text = json.dumps(json.loads(document), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc}") from exc
    err.print(f"wrote {output}", highlight=False)
