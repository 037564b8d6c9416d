"""``skillsight serve --skills DIR``: the skills a team points the service at are in the
catalogue of every project, and activations rebuilt from telemetry that names only the skill
(Claude Code's) get their declared contract from it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillsight.demo.scenario_library import build_scenario
from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server

KEYS = {"team-a": "key-a", "team-b": "key-b"}


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
