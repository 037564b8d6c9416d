"""Shared pieces of the ``skillsight`` command: the app and its command groups, the options
several commands take (defined once), and turning errors into one clear line."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

try:
    import typer
    from rich.console import Console
except ImportError:  # the base install is instrumentation only
    sys.stderr.write("the skillsight command needs the service: pip install 'skillsight[server]'\n")
    raise SystemExit(2) from None

from skillsight.config import Settings
from skillsight.errors import SkillsightError

if TYPE_CHECKING:
    from skillsight.cli.views import Source
    from skillsight.store import Store

app = typer.Typer(
    help="skillsight: OpenTelemetry ingest and evaluation of agent skills.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
skills_app = typer.Typer(
    help="The skill catalogue: check SKILL.md folders, record and list them.",
    no_args_is_help=True,
)
app.add_typer(skills_app, name="skills")
activations_app = typer.Typer(
    help="Skill activations rebuilt from completed sessions.", no_args_is_help=True
)
app.add_typer(activations_app, name="activations")
trajectories_app = typer.Typer(
    help="Session trajectories in ATIF-v1.7 (Harbor's Agent Trajectory Interchange Format).",
    no_args_is_help=True,
)
app.add_typer(trajectories_app, name="trajectories")

eval_app = typer.Typer(help="Score stored activations with the evaluators.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
console = Console()
err = Console(stderr=True)

# -- shared options -----------------------------------------------------------------------------
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Folder of the embedded store [env SKILLSIGHT_DATA_DIR].", show_default=False
    ),
]
ClickhouseOpt = Annotated[
    str | None,
    typer.Option(
        "--clickhouse",
        help="ClickHouse server URL, clickhouse://user:pass@host:8123/db "
        "[env SKILLSIGHT_CLICKHOUSE_URL].",
        show_default=False,
    ),
]
ApiOpt = Annotated[
    str | None,
    typer.Option(
        "--api",
        envvar="SKILLSIGHT_API_URL",
        help="Use a running service at this URL instead of opening the store.",
        show_default=False,
    ),
]
ProjectOpt = Annotated[
    str, typer.Option("--project", help="Project to read or write (direct store access).")
]
KeyOpt = Annotated[
    str | None,
    typer.Option(
        "--key", envvar="SKILLSIGHT_API_KEY", help="API key sent to --api.", show_default=False
    ),
]

WindowOpt = Annotated[
    str,
    typer.Option("--window", help="Activations started within this span: 24h, 7d, 4w or all."),
]


def load_settings(**overrides: Any) -> Settings:
    data = overrides.pop("data", None)
    clickhouse = overrides.pop("clickhouse", None)
    return Settings.load({"data_dir": data, "clickhouse_url": clickhouse, **overrides})


def fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def explain_store_error(exc: SkillsightError, settings: Settings | None) -> str:
    text = str(exc)
    if "EmbeddedServer" in text or "in use" in text:
        where = settings.data_dir if settings else "the data folder"
        return (
            f"the embedded store in {where} is in use by another process (a running "
            "`skillsight serve`?); stop it, or read through it with --api URL"
        )
    return text


@contextlib.contextmanager
def opened_store(data: Path | None, clickhouse: str | None, *, code: int = 1) -> Iterator[Store]:
    """The store ``--data`` / ``--clickhouse`` name, closed afterwards. Failing to open it
    is one clear line and exit ``code``."""
    from skillsight.store import open_store

    settings = None
    try:
        settings = load_settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
    except SkillsightError as exc:
        raise fail(explain_store_error(exc, settings), code) from exc
    try:
        yield store
    finally:
        store.close()


@contextlib.contextmanager
def read_source(
    api: str | None, key: str | None, data: Path | None, clickhouse: str | None, project: str
) -> Iterator[Source]:
    """A running service (--api) or the store itself, for the read commands."""
    from skillsight.cli.views import ApiSource, StoreSource

    if api:
        yield ApiSource(api, key)
        return
    with opened_store(data, clickhouse) as store:
        yield StoreSource(store, project)


@contextlib.contextmanager
def evaluation_source(
    api: str | None, key: str | None, data: Path | None, clickhouse: str | None, project: str
) -> Iterator[Any]:
    """A running service (--api) or the store itself, for scorecards and the gate."""
    from skillsight.cli._evaluation_sources import ApiEvaluations, StoreEvaluations

    if api:
        yield ApiEvaluations(api, key)
        return
    with opened_store(data, clickhouse, code=2) as store:
        yield StoreEvaluations(store, project)
