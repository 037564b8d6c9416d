"""``skillsight judges …``: the LLM judges from the command line.

Registered on the main app by ``skillsight.cli``; kept here so the CLI module stays a list of
commands. The judge's litellm import is deferred to the command that needs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from skillsight.config import DEFAULT_PROJECT, Settings
from skillsight.errors import SkillsightError

if TYPE_CHECKING:
    from skillsight.store.records import Activation

__all__ = ["judges_app"]

judges_app = typer.Typer(
    help="LLM judges: see whether to trust a rubric before gating on it.", no_args_is_help=True
)
console = Console()
err = Console(stderr=True)

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="litellm model string [env SKILLSIGHT_JUDGE_MODEL].",
        show_default=False,
    ),
]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        help="OpenAI-compatible endpoint [env SKILLSIGHT_JUDGE_API_BASE].",
        show_default=False,
    ),
]


def fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@judges_app.command("calibrate")
def judges_calibrate(
    file: Annotated[
        Path, typer.Argument(help="Labelled set, JSON Lines: {activation, rubric, label}.")
    ],
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            help="Judge calls in flight [env SKILLSIGHT_JUDGE_CONCURRENCY].",
            show_default=False,
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Embedded store, for lines that give an activation_id.",
            show_default=False,
        ),
    ] = None,
    clickhouse: Annotated[
        str | None,
        typer.Option(
            "--clickhouse",
            help="ClickHouse server, for lines that give an activation_id.",
            show_default=False,
        ),
    ] = None,
    project: Annotated[
        str, typer.Option("--project", help="Project of those activations.")
    ] = DEFAULT_PROJECT,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run each line's rubric on its activation and report agreement with the human labels
    per rubric: accuracy, Cohen's kappa and the confusion matrix (judge errors are counted
    apart, never guessed). The key comes from the provider's usual variable (OPENAI_API_KEY…).

    Example: skillsight judges calibrate labelled.jsonl --model openai/gpt-4o-mini
    """
    from skillsight.evaluators.judges import (
        build_judges,
        calibrate,
        judge_settings,
        load_labelled,
        release_connections,
    )

    store = None
    try:
        settings = Settings.load(
            {
                "judge_model": model,
                "judge_api_base": api_base,
                "judge_concurrency": concurrency,
                "data_dir": data,
                "clickhouse_url": clickhouse,
            }
        )
        if not settings.judge_model:
            raise fail("no judge model: pass --model or set SKILLSIGHT_JUDGE_MODEL", 2)
        resolve = None
        if data is not None or clickhouse:
            from skillsight.store import open_store

            store = open_store(settings)
            opened = store

            def resolve(activation_id: str) -> Activation | None:
                return opened.activations.get(project, activation_id)

        items = load_labelled(file, resolve)
        judge = judge_settings(settings)
        judges = build_judges(judge, dict.fromkeys(item.rubric for item in items))
        agreements, evaluations = calibrate(items, judges)
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    finally:
        if store is not None:
            store.close()
        release_connections()
    spent = sum(e.cost_usd for e in evaluations)
    if as_json:
        report = {
            "model": judge.model,
            "rubrics": [a.to_dict() for a in agreements],
            "cost_usd": spent,
            "errors": [
                {"activation_id": e.activation_id, "rubric": e.evaluator, "error": e.error}
                for e in evaluations
                if e.error
            ],
        }
        print(json.dumps(report, indent=2))
        return
    table = Table(title=f"Agreement of {judge.model} with the labels")
    for column in ("rubric", "scored", "unscored", "accuracy", "kappa", "confusion (human→judge)"):
        table.add_column(column)
    for a in agreements:
        matrix = ", ".join(
            f"{human}→{judged}: {count}"
            for human, row in a.confusion.items()
            for judged, count in row.items()
        )
        table.add_row(
            a.rubric,
            str(a.scored),
            str(a.unscored),
            "-" if a.accuracy is None else f"{a.accuracy:.3f}",
            "undefined" if a.kappa is None else f"{a.kappa:.3f}",
            matrix,
        )
    console.print(table)
    for e in evaluations:
        if e.error:
            err.print(f"{e.evaluator} {e.activation_id}: {e.error}", highlight=False)
    console.print(f"{len(evaluations)} judgements, ${spent:.6f}", style="dim")
