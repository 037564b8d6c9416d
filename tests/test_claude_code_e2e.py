"""Real Claude Code (the CLI bundled in claude-agent-sdk, model scripted on 127.0.0.1) exporting
its native telemetry to a running ``skillsight serve`` over each OTLP protocol, and the published
Claude Agent SDK instrumentors exporting to it too."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demo.third_party import run_instrumented_demo
from demo.workload import run_demo
from skillsight.evaluators import DETERMINISTIC
from tests.support.serve import RunningServer, running_server

pytestmark = [pytest.mark.claude, pytest.mark.slow]
SKILL = "csv-summary"
SCRIPT = "python3 .claude/skills/csv-summary/scripts/summarize_csv.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("serve") / "data") as running:
        yield running


def _session_rows(
    server: RunningServer, session_id: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    spans = server.spans(session_id=session_id)
    events = server.events(session_id=session_id)
    return spans, events


def _shape(spans: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, Any]:
    """What must not depend on the protocol: which rows exist and what they normalize to."""
    tools = sorted(
        (s["tool_name"], s["skill_name"], s["input"].split(" data/")[0])
        for s in spans
        if s["name"] == "claude_code.tool"
    )
    return {
        "span_names": sorted({s["name"] for s in spans}),
        "operations": sorted({s["operation"] for s in spans}),
        "tools": tools,
        "event_names": sorted({e["event_name"] for e in events} - {"claude_code.plugin_loaded"}),
        "activated": sorted(
            e["skill_name"] for e in events if e["event_name"] == "claude_code.skill_activated"
        ),
    }


def test_native_telemetry_over_every_protocol_lands_the_same(
    server: RunningServer, tmp_path: Path
) -> None:
    shapes = {}
    for protocol in ("http/json", "http/protobuf", "grpc"):
        endpoint = server.otlp_http if protocol != "grpc" else f"http://{server.otlp_grpc}"
        result = run_demo(endpoint, protocol, workdir=tmp_path / protocol.replace("/", "-"))
        assert result.session_id, result
        assert SKILL in (result.result_text or "") or "rows: 5" in (result.result_text or "")
        spans, events = [], []
        for _ in range(100):  # the CLI flushes on exit; the writer commits within a flush interval
            spans, events = _session_rows(server, result.session_id)
            if any(e["event_name"] == "claude_code.skill_activated" for e in events) and any(
                s["tool_name"] == "Bash" and s["name"] == "claude_code.tool" for s in spans
            ):
                break
            # the queue drains within a flush interval; the store may be busy with a rebuild
            server.wait_written(timeout=30)
            time.sleep(0.1)
        skill_call = next(
            s for s in spans if s["name"] == "claude_code.tool" and s["tool_name"] == "Skill"
        )
        assert skill_call["skill_name"] == SKILL
        assert skill_call["operation"] == "execute_tool"
        assert skill_call["source_convention"] == "claude_code"
        bash = next(
            s for s in spans if s["name"] == "claude_code.tool" and s["tool_name"] == "Bash"
        )
        assert bash["input"].startswith(SCRIPT)
        assert bash["tool_call_id"].startswith("toolu_")
        activated = [e for e in events if e["event_name"] == "claude_code.skill_activated"]
        assert [e["skill_name"] for e in activated] == [SKILL]
        shapes[protocol] = _shape(spans, events)
    assert shapes["http/json"] == shapes["http/protobuf"] == shapes["grpc"], shapes


@pytest.mark.parametrize("instrumentor", ["openinference", "traceai"])
def test_published_instrumentors_land_normalized(
    server: RunningServer, tmp_path: Path, instrumentor: str
) -> None:
    before = {s["span_id"] for s in server.spans(limit=10_000)}
    result = run_instrumented_demo(
        instrumentor,
        server.otlp_http,  # type: ignore[arg-type]
        workdir=tmp_path / instrumentor,
    )
    assert result.session_id
    server.wait_written(timeout=30)
    new = [s for s in server.spans(limit=10_000) if s["span_id"] not in before]
    assert {s["source_convention"] for s in new} == {instrumentor}
    tools = {s["tool_name"]: s for s in new if s["operation"] == "execute_tool"}
    assert set(tools) == {"Skill", "Bash"}
    for tool in tools.values():
        assert tool["tool_call_id"].startswith("toolu_")
        assert tool["input"] and tool["output"]
    assert SKILL in tools["Skill"]["input"]
    assert "summarize_csv.py" in tools["Bash"]["input"]
    assert "rows: 5" in tools["Bash"]["output"]
    agents = [s for s in new if s["operation"] == "invoke_agent"]
    assert agents and agents[0]["session_id"] == result.session_id


def test_make_demo_plays_a_session_into_a_fresh_service(tmp_path: Path) -> None:
    """What `make demo` runs, stopped after the session instead of serving on."""
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "demo",
            "--once",
            "--any-ports",
            "--data",
            str(tmp_path / "demo"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "claude_code.skill_activated" in result.stdout
    assert "csv-summary" in result.stdout
    # the skill's contract came from the catalogue (serve --skills) and every evaluator that
    # applies scored the clean run a pass
    assert "contract allowed-tools Bash(python3:*) Read" in result.stdout
    verdicts = {
        line.split()[0]: line.split()[1:3]
        for line in result.stdout.splitlines()
        if line.strip().split(" ", 1)[0] in DETERMINISTIC
    }
    assert verdicts == {
        name: ["-", "not_applicable"] if name == "efficiency" else ["1.00", "pass"]
        for name in DETERMINISTIC
    }, result.stdout[-3000:]
    # the demo's start-up says what each source's sessions carried: all of it here
    assert re.search(r"claude_code: \d+ sessions, everything the evaluators read", result.stdout)
