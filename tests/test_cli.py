"""The ``skillsight`` command: documented, and useful end to end."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer.main
from typer.testing import CliRunner

from skillsight.cli import app
from tests.support.serve import running_server

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
runner = CliRunner()


def _commands() -> dict[str, Any]:
    group = typer.main.get_command(app)
    found: dict[str, Any] = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if hasattr(command, "commands"):
            found.update({f"{name} {sub}": c for sub, c in command.commands.items()})
        else:
            found[name] = command
    return found


def test_every_command_has_help_an_example_and_docs() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text()
    for name, command in _commands().items():
        assert command.help and "Example: skillsight" in command.help, name
        assert f"skillsight {name}" in docs, f"docs/cli.md does not document `skillsight {name}`"


def test_ingest_then_spans(tmp_path: Path) -> None:
    data = tmp_path / "data"
    gz = tmp_path / "claude-traces.json.gz"
    gz.write_bytes(gzip.compress((CAPTURES / "claude_code" / "traces.json").read_bytes()))
    result = runner.invoke(
        app,
        [
            "ingest",
            str(gz),
            str(CAPTURES / "claude_code" / "logs.pb"),
            str(CAPTURES / "openinference" / "traces.pb"),
            "--data",
            str(data),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ingested 14 spans and 18 log records (0 rejected)" in result.output
    listed = runner.invoke(app, ["spans", "--json", "--data", str(data)])
    assert listed.exit_code == 0, listed.output
    spans = json.loads(listed.stdout)
    assert len(spans) == 14
    skill_span = next(s for s in spans if s["skill_name"] == "csv-summary")
    one_trace = runner.invoke(
        app, ["spans", "--json", "--data", str(data), "--trace", skill_span["trace_id"].upper()]
    )
    assert {s["trace_id"] for s in json.loads(one_trace.stdout)} == {skill_span["trace_id"]}
    table = runner.invoke(app, ["spans", "--data", str(data)])
    assert "execute_tool" in table.output and "14 spans" in table.output


def test_spans_through_a_running_service_and_a_clear_error_when_the_store_is_busy(
    tmp_path: Path,
) -> None:
    with running_server(tmp_path / "data") as server:
        busy = subprocess.run(
            [sys.executable, "-m", "skillsight.cli", "spans", "--data", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert busy.returncode == 1
        assert "in use by another process" in busy.stderr
        assert "Traceback" not in busy.stderr
        via_api = runner.invoke(app, ["spans", "--json", "--api", server.api])
        assert via_api.exit_code == 0 and json.loads(via_api.stdout) == []


def test_user_mistakes_end_in_one_line_not_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "skillsight.cli", "serve", "--clickhouse", "mysql://nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "clickhouse://" in result.stderr and "Traceback" not in result.stderr
