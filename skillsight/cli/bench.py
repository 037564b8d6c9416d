"""``skillsight bench``: the benchmarks of a source checkout, which the wheel does not carry.

The benchmarks drive scripted model servers and synthetic data generators that are test doubles,
not product, so they live in the checkout's ``benchmarks/`` folder (``make bench``). This
command finds that folder beside an editable install and hands it the rest of the command line.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import typer

from skillsight.cli._common import app, fail


def _checkout_benchmarks() -> typer.Typer:
    root = Path(__file__).resolve().parents[2]
    if not (root / "benchmarks" / "cli.py").is_file():
        raise fail(
            "the benchmarks run from a source checkout (make bench, or python -m benchmarks); "
            "this install has none"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module("benchmarks.cli")
    bench_app: typer.Typer = module.app
    return bench_app


@app.command(
    "bench",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def bench(ctx: typer.Context) -> None:
    """Benchmarks that measure the targets in DESIGN.md (from a source checkout).

    Example: skillsight bench ingest --spans 300000   (skillsight bench --help lists them)
    """
    command = typer.main.get_command(_checkout_benchmarks())
    command.main(args=ctx.args, prog_name="skillsight bench", standalone_mode=True)
