"""Activations and trajectories through the REST API and the CLI: recorded captures replayed into a
real ``skillsight serve``, the CLI reading it (``--api``) and the store (``--data``), and one live
Claude Code session."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from demo.workload import run_demo
from skillsight.cli import app
from skillsight.rebuild.trajectories import atif
from tests.support.serve import RunningServer, running_server

CAPTURES = Path(__file__).parent / "fixtures" / "captures" / "claude_code"
SESSION = "093ac2ae-a7ab-4b25-b958-3919a7e38a98"  # the protobuf captures' session
SCRIPT = "python3 .claude/skills/csv-summary/scripts/summarize_csv.py data/sales.csv"
SUMMARY = (
    "rows: 5\ncolumns: region, product, units, amount\ntotal units: 36.00\n"
    "total amount: 133.00\namount by region: north=57.00, east=45.00, south=31.00"
)
runner = CliRunner()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("activations") / "data") as running:
        yield running


def _wait_for_activations(
    server: RunningServer, session_id: str, timeout: float = 60.0
) -> list[dict[str, Any]]:
    """Poll the API until the session's activations are there (no manual step in between):
    every row sent is committed, and the finalizer has rebuilt every session they touched."""
    server.wait_written(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # caught up first, then read: read before, the list may be an earlier rebuild's (the
        # spans alone) that the logs' rebuild replaced in between
        if server.get("/healthz")["caught_up"]:
            found: list[dict[str, Any]] = server.get("/api/v1/activations", session_id=session_id)
            if found:
                return found
        time.sleep(0.05)
    raise AssertionError(f"no activations for {session_id}: {server.get('/healthz')}")


@pytest.fixture(scope="module")
def replayed(server: RunningServer) -> list[dict[str, Any]]:
    """The protobuf captures, sent as Claude Code sent them (the fast path takes the traces)."""
    for signal, name in (("traces", "traces.pb"), ("logs", "logs.pb")):
        response = httpx.post(
            f"{server.otlp_http}/v1/{signal}",
            content=(CAPTURES / name).read_bytes(),
            headers={"content-type": "application/x-protobuf"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
    return _wait_for_activations(server, SESSION)


def test_the_api_serves_the_rebuilt_activation(
    server: RunningServer, replayed: list[dict[str, Any]]
) -> None:
    assert len(replayed) == 1
    activation = replayed[0]
    bash = activation["tool_calls"]
    assert [(c["name"], c["arguments"], c["result"], c["is_error"]) for c in bash] == [
        ("Bash", {"command": SCRIPT, "description": "Summarise the CSV file"}, SUMMARY, False)
    ]
    assert {
        k: activation[k]
        for k in ("project_id", "session_id", "skill_name", "trigger", "agent", "outcome")
    } == {
        "project_id": "default",
        "session_id": SESSION,
        "skill_name": "csv-summary",
        "trigger": "skill_tool",
        "agent": "claude-code",
        "outcome": "completed",
    }
    assert activation["request"] == (
        "What is the total amount in data/sales.csv, and which region sold the most?"
    )
    assert activation["integration_message"] == (
        f"The csv-summary skill summarised data/sales.csv:\n\n{SUMMARY}"
    )
    assert activation["tokens"]["output"] > 0 and activation["cost_usd"] > 0
    assert server.get(f"/api/v1/activations/{activation['activation_id']}") == activation
    assert server.get("/api/v1/activations", skill="csv-summary") == replayed
    assert server.get("/api/v1/activations", skill="pdf-fill") == []
    assert server.get("/api/v1/activations", since="2100-01-01T00:00:00Z") == []
    assert server.get("/api/v1/activations", since=activation["started_at"]) == replayed


def test_the_api_serves_the_trajectory_and_refuses_what_it_does_not_know(
    server: RunningServer, replayed: list[dict[str, Any]]
) -> None:
    document = server.get(f"/api/v1/trajectories/{SESSION}")
    trajectory = atif.parse(document)
    assert atif.dump(trajectory) == document  # the served document is valid and canonical
    tool_steps = [s for s in trajectory.steps if s.tool_calls]
    assert [c.function_name for s in tool_steps for c in s.tool_calls or ()] == ["Skill", "Bash"]
    for path, status in (
        ("/api/v1/activations/0123456789abcdef0123456789abcdef", 404),
        ("/api/v1/trajectories/no-such-session", 404),
        ("/api/v1/activations?limit=0", 422),
        ("/api/v1/activations?since=yesterday", 422),
    ):
        assert httpx.get(server.api + path, timeout=30).status_code == status, path


def test_the_cli_reads_the_service(
    server: RunningServer, replayed: list[dict[str, Any]], tmp_path: Path
) -> None:
    listed = runner.invoke(app, ["activations", "list", "--json", "--api", server.api])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == replayed
    table = runner.invoke(app, ["activations", "list", "--api", server.api])
    assert (
        table.exit_code == 0 and "csv-summary" in table.stdout and "1 activations" in table.stdout
    )

    activation_id = replayed[0]["activation_id"]
    shown = runner.invoke(app, ["activations", "show", activation_id, "--api", server.api])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())  # the console wraps at its width; read it as prose
    timeline = [
        f"csv-summary activated by skill_tool {activation_id}",
        f"session {SESSION}",
        "request What is the total amount in data/sales.csv",
        "▶ start skill_tool toolu_",
        f'• Bash {{"command": "{SCRIPT}", "description": "Summarise the CSV file"}}',
        "→ rows: 5 columns: region, product, units, amount total units: 36.00",
        "integration The csv-summary skill summarised data/sales.csv: rows: 5",
        "tokens in ",
        "cost $",
        "duration ",
    ]
    positions = [text.find(part) for part in timeline]
    assert -1 not in positions, [p for p, at in zip(timeline, positions, strict=True) if at < 0]
    assert positions == sorted(positions), text
    assert "provisional" not in text  # a complete session's activation is settled

    exported = tmp_path / "session.json"
    result = runner.invoke(
        app, ["trajectories", "export", SESSION, "-o", str(exported), "--api", server.api]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(exported.read_text()) == server.get(f"/api/v1/trajectories/{SESSION}")
    stdout = runner.invoke(app, ["trajectories", "export", SESSION, "--api", server.api])
    assert stdout.stdout == exported.read_text()

    missing = runner.invoke(app, ["activations", "show", "nope", "--api", server.api])
    assert missing.exit_code == 1
    assert "no activation 'nope' in this project" in missing.output
    assert "Traceback" not in missing.output


def test_ingest_then_rebuild_then_read_the_store(tmp_path: Path) -> None:
    """Without a server: files into the store, ``skillsight rebuild``, the CLI on ``--data``."""
    data = ["--data", str(tmp_path / "data")]
    ingested = runner.invoke(
        app, ["ingest", str(CAPTURES / "traces.pb"), str(CAPTURES / "logs.pb"), *data]
    )
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(runner.invoke(app, ["activations", "list", "--json", *data]).stdout) == []
    rebuilt = runner.invoke(app, ["rebuild", *data])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "rebuilt 1 sessions, 1 activations, in project 'default'" in rebuilt.stdout
    again = runner.invoke(app, ["rebuild", "--session", SESSION, *data])
    assert again.exit_code == 0, again.output
    found = json.loads(runner.invoke(app, ["activations", "list", "--json", *data]).stdout)
    assert [(a["skill_name"], [c["name"] for c in a["tool_calls"]]) for a in found] == [
        ("csv-summary", ["Bash"])
    ]
    exported = runner.invoke(app, ["trajectories", "export", SESSION, *data])
    assert atif.parse(exported.stdout).session_id == SESSION
    unknown = runner.invoke(app, ["rebuild", "--session", "no-such-session", *data])
    assert unknown.exit_code == 1
    assert "no spans or events of session 'no-such-session'" in unknown.output


@pytest.mark.claude
@pytest.mark.slow
def test_a_live_claude_code_session_becomes_an_activation(
    server: RunningServer, tmp_path: Path
) -> None:
    result = run_demo(server.otlp_http, "http/protobuf", workdir=tmp_path / "live")
    assert result.session_id, result
    found = _wait_for_activations(server, result.session_id)
    assert [(a["skill_name"], a["trigger"]) for a in found] == [("csv-summary", "skill_tool")]
    calls = found[0]["tool_calls"]
    assert [(c["name"], c["arguments"]["command"], c["is_error"]) for c in calls] == [
        ("Bash", SCRIPT, False)
    ]
    assert calls[0]["result"] == SUMMARY
    assert found[0]["integration_message"] == result.result_text
