"""The ``skillsight`` command.

Every command has help text with an example; options shared by several commands are defined
once (``_common``). User mistakes end in one clear line and a non-zero exit code, never a
traceback. Each command group lives in a module of its own that registers its commands when
imported, so the imports below are also the order ``--help`` lists them in.
"""

from __future__ import annotations

# isort: off
from skillsight.cli._common import app
from skillsight.cli import service, skills, activations, evaluation, clusters, bench
from skillsight.cli.judges import judges_app
from skillsight.cli.golden import golden_app
from skillsight.cli import rerun

# isort: on

app.add_typer(judges_app, name="judges")
app.add_typer(golden_app, name="golden")


def main() -> None:
    app()


__all__ = [
    "activations",
    "app",
    "bench",
    "clusters",
    "evaluation",
    "main",
    "rerun",
    "service",
    "skills",
]
