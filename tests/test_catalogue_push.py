"""A catalogue a deployed service can learn: ``skillsight skills scan DIR --api URL`` pushes the
skill folders to ``POST /api/v1/skills`` of a running ``skillsight serve`` that was started
with no ``--skills`` and shares no disk with the skills repository (its folder is deleted before
the telemetry arrives). The service then scores Claude Code's activations of the skill with
its contract: allowed-tools from the catalogue, scripts and body from the recorded SKILL.md."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from demo.scenario_library import build_scenario
from skillsight.skills import pack_skills, scan
from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server

PROJECT, ADMIN_KEY, AGENT_KEY = "team", "ci-key", "agent-key"
NAME = "allowed_tools_violation"  # its verdicts need the contract: a Bash call outside `Read`


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsight.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "SKILLSIGHT_API_KEYS": f"{ADMIN_KEY}:{PROJECT}:ingest+read+admin,"
        f"{AGENT_KEY}:{PROJECT}:ingest",
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
    }
    with running_server(tmp_path_factory.mktemp("push") / "data", env=env) as server:
        server.headers = {"x-skillsight-key": ADMIN_KEY}  # /healthz in full
        yield server


def post(server: RunningServer, body: bytes, key: str = ADMIN_KEY, **headers: str) -> Any:
    return httpx.post(
        server.api + "/api/v1/skills",
        content=body,
        headers={"x-skillsight-key": key, "content-type": "application/gzip", **headers},
        timeout=30,
    )


def catalogue(server: RunningServer) -> list[dict[str, Any]]:
    response = httpx.get(
        server.api + "/api/v1/skills", headers={"x-skillsight-key": ADMIN_KEY}, timeout=30
    )
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def wait_scored(server: RunningServer, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health: dict[str, Any] = server.get("/healthz")
        if health["evaluation"]["sessions_scored"] >= 1 and health["caught_up"]:
            return health
        time.sleep(0.05)
    raise AssertionError(f"not scored within {timeout}s: {server.get('/healthz')}")


def test_a_service_without_skills_learns_them_from_ci_and_scores_with_the_contract(
    served: RunningServer, tmp_path: Path
) -> None:
    checkout = tmp_path / "skills-repo"
    build_scenario(NAME, checkout).write()
    skills = checkout / ".claude" / "skills"
    assert catalogue(served) == []

    pushed = cli("skills", "scan", str(skills), "--api", served.api, "--key", ADMIN_KEY)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    local = {m.name: m for m in scan([skills]).skills}
    assert f"{len(local)} recorded by {served.api}" in pushed.stdout
    recorded = {e["name"]: e for e in catalogue(served)}
    assert {n: e["version"] for n, e in recorded.items()} == {
        n: m.version for n, m in local.items()
    }
    report = recorded["sales-report"]
    assert report["allowed_tools"] == ["Read"]
    assert report["source_uri"] == (skills / "sales-report").absolute().as_uri()

    # idempotent: the same folders again change nothing
    again = cli("skills", "scan", str(skills), "--api", served.api, "--key", ADMIN_KEY)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(catalogue(served)) == len(local)

    # the service shares no disk with the repository: it scores from what it recorded
    shutil.rmtree(checkout)
    capture = load_capture(NAME)
    for request in (capture.native_traces, capture.native_logs):
        response = httpx.post(
            f"{served.otlp_http}/v1/{request.signal}",
            content=request.body,
            headers={"content-type": request.content_type, "x-skillsight-key": AGENT_KEY},
            timeout=30,
        )
        assert response.status_code == 200, response.text
    wait_scored(served)
    listed = httpx.get(
        served.api + "/api/v1/activations", headers={"x-skillsight-key": ADMIN_KEY}, timeout=30
    ).json()
    [activation] = listed
    assert activation["contract"]["allowed_tools"] == ["Read"]
    assert activation["skill_version"] == local["sales-report"].version
    verdicts = {e["evaluator"]: e for e in activation["evaluations"]}
    expected = {e["evaluator"]: e for e in capture.manifest["expected"]["evaluations"]}
    bash = next(c["tool_call_id"] for c in activation["tool_calls"] if c["name"] == "Bash")
    assert verdicts["allowed_tools"]["passed"] is False
    assert verdicts["allowed_tools"]["evidence"]["tool_call_ids"] == [bash]
    assert expected["allowed_tools"]["cites"] == [bash]
    # the script and body came from the recorded SKILL.md: script_execution could judge
    assert verdicts["script_execution"]["label"] == "ran", verdicts["script_execution"]
    assert verdicts["security"]["findings"] == []


def test_what_the_catalogue_refuses_and_who_may_write_it(
    served: RunningServer, tmp_path: Path
) -> None:
    build_scenario("one_skill", tmp_path / "p").write()
    good = pack_skills([tmp_path / "p" / ".claude" / "skills" / "csv-summary"])
    # an agent's ingest key may send telemetry, not rewrite contracts
    refused = post(served, good, key=AGENT_KEY)
    assert refused.status_code == 403
    assert "admin" in refused.json()["detail"]
    assert post(served, good, **{"content-type": "text/plain"}).status_code == 415
    broken = post(served, b"\x1f\x8b not really gzip")
    assert broken.status_code == 400 and "not a readable" in broken.json()["detail"]

    # a hostile archive: a member that climbs out of the upload folder
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("../escape/SKILL.md")
        info.size = 3
        archive.addfile(info, io.BytesIO(b"---\n"))
    climbing = post(served, buffer.getvalue())
    assert climbing.status_code == 400 and "not a relative path" in climbing.json()["detail"]

    # the rules of `skills scan`: a skill whose name differs from its folder is not recorded
    bad = tmp_path / "bad" / "report-maker"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: sales-report\ndescription: Reports.\n---\nGo.\n")
    before = len(catalogue(served))
    answer = post(served, pack_skills([bad]))
    assert answer.status_code == 422
    body = answer.json()
    assert body["recorded"] == []
    assert [(v["file"], v["rule"]) for v in body["violations"]] == [
        ("report-maker/SKILL.md", "name-matches-folder")
    ]
    assert len(catalogue(served)) == before
    local = cli("skills", "scan", str(bad.parent), "--json")
    assert json.loads(local.stdout)["violations"][0]["rule"] == "name-matches-folder"
