"""``skillsight serve --skills DIR``: the skills a team points the service at are in the
catalogue of every project, and activations rebuilt from telemetry that names only the skill
(Claude Code's) get their declared contract from it (the latest version's); telemetry that
names the version it ran gets that version's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from demo.scenario_library import build_scenario
from skillsight.cli import app
from skillsight.instrumentation import (
    agent_session,
    record_llm_call,
    record_tool_call,
    skill_activation,
)
from skillsight.skills import load_skill
from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server

KEYS = {"team-a": "key-a", "team-b": "key-b"}
SAID_AGAIN = [{"role": "assistant", "content": [{"type": "text", "text": "Again."}]}]
SAID_DONE = [{"role": "assistant", "content": [{"type": "text", "text": "Done."}]}]

runner = CliRunner()


def get(server: RunningServer, project: str, path: str) -> Any:
    response = httpx.get(server.api + path, headers={"x-skillsight-key": KEYS[project]}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Path]]:
    root = tmp_path_factory.mktemp("catalogue") / "project"
    build_scenario("one_skill", root).write()
    skills = root / ".claude" / "skills"
    env = {
        "SKILLSIGHT_API_KEYS": ",".join(f"{key}:{project}" for project, key in KEYS.items()),
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
    }
    data = tmp_path_factory.mktemp("catalogue-data") / "data"
    with running_server(data, env=env, args=("--skills", str(skills))) as server:
        yield server, skills


def test_every_project_has_the_skills_in_its_catalogue(
    served: tuple[RunningServer, Path],
) -> None:
    server, skills = served
    for project in KEYS:
        (entry,) = get(server, project, "/api/v1/skills")
        assert entry["name"] == "csv-summary"
        assert entry["allowed_tools"] == ["Bash(python3:*)", "Read"]
        assert entry["source_uri"] == (skills / "csv-summary").as_uri()


def test_a_rebuilt_activation_gets_its_contract_from_the_catalogue(
    served: tuple[RunningServer, Path],
) -> None:
    server, _ = served
    capture = load_capture("one_skill")
    for request in (capture.native_traces, capture.native_logs):
        response = httpx.post(
            f"{server.otlp_http}/v1/{request.signal}",
            content=request.body,
            headers={"content-type": request.content_type, "x-skillsight-key": KEYS["team-a"]},
            timeout=30,
        )
        assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while not found and time.monotonic() < deadline:
        found = get(server, "team-a", "/api/v1/activations")
        time.sleep(0.1)
    (activation,) = found
    contract = activation["contract"]
    assert (contract["name"], contract["allowed_tools"]) == (
        "csv-summary",
        ["Bash(python3:*)", "Read"],
    )
    assert activation["skill_version"] == contract["version"] != ""
    assert get(server, "team-b", "/api/v1/activations") == []  # tenancy holds


def test_skills_scanned_twice_then_activations_joined_by_version(tmp_path: Path) -> None:
    """``skills scan --store`` before and after the skill changed, telemetry ingested,
    ``skillsight rebuild``: the run of the older version is judged by the older contract, the
    run that reported no version by the newer one."""
    data = ["--data", str(tmp_path / "data")]
    skills = tmp_path / "skills"
    folder = skills / "csv-summary"
    folder.mkdir(parents=True)
    skill_md = folder / "SKILL.md"
    skill_md.write_text("---\nname: csv-summary\ndescription: Summarise a CSV file.\n---\n\nGo.\n")
    first = runner.invoke(app, ["skills", "scan", str(skills), "--store", *data])
    assert first.exit_code == 0, first.output
    older = load_skill(folder)

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    with agent_session("agent", conversation_id="conv-e2e", input="sum it", tracer_provider=tp):
        with skill_activation(
            "csv-summary", skill_dir=folder, trigger="skill_tool", call_id="s1", tracer_provider=tp
        ):
            record_tool_call("Bash", "b1", {"command": "wc -l a.csv"}, "5", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=SAID_AGAIN, tracer_provider=tp)
        record_tool_call("Skill", "s2", {"skill": "csv-summary"}, "loaded", tracer_provider=tp)
        record_tool_call("Bash", "b2", {"command": "wc -l b.csv"}, "6", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=SAID_DONE, tracer_provider=tp)
    traces = tmp_path / "traces.pb"
    traces.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    tp.shutdown()

    skill_md.write_text(
        "---\nname: csv-summary\ndescription: Summarise a CSV file and chart it.\n"
        "allowed-tools: Bash(python3:*) Read\n---\n\nGo.\n"
    )
    second = runner.invoke(app, ["skills", "scan", str(skills), "--store", *data])
    assert second.exit_code == 0, second.output
    newer = load_skill(folder)
    for step in (["ingest", str(traces), *data], ["rebuild", *data]):
        result = runner.invoke(app, step)
        assert result.exit_code == 0, result.output
    listed = runner.invoke(app, ["activations", "list", "--json", *data])
    found = sorted(json.loads(listed.stdout), key=lambda a: a["trigger_call_id"])
    uri = folder.absolute().as_uri()
    assert [(a["trigger_call_id"], a["skill_version"], a["contract"]) for a in found] == [
        (
            "s1",
            older.version,
            {
                "name": "csv-summary",
                "description": "Summarise a CSV file.",
                "allowed_tools": None,  # the older version declared none: not the newer ones
                "version": older.version,
                "source_uri": uri,
                "catalogued": True,
                # what the activation span itself said (the rest is the catalogue's)
                "reported": ["description", "source_uri", "version"],
            },
        ),
        (
            "s2",
            newer.version,
            {
                "name": "csv-summary",
                "description": "Summarise a CSV file and chart it.",
                "allowed_tools": ["Bash(python3:*)", "Read"],
                "version": newer.version,
                "source_uri": uri,
                "catalogued": True,
                "reported": [],  # a bare Skill call reports nothing of the contract
            },
        ),
    ]
