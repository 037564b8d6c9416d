"""A project for the web UI's browser tests, fed with recorded Claude Code scenarios.

Two phases on one data folder, so a skill has two versions: the scenarios' skills are recorded
in the catalogue and a first set of captures is replayed into a real ``skillsight serve`` and
scored; then ``csv-summary`` is recorded again with a changed SKILL.md (a new version) and the
second set is replayed into the server the tests browse. Everything is real: Claude Code's own
OTLP exports, the collector, the rebuild, the deterministic evaluators.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from demo.scenario_library import build_scenario
from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server

PROJECT, KEY = "ui", "ui-key"
OTHER_PROJECT, OTHER_KEY = "other", "other-key"
FIRST = ("one_skill", "tool_error", "allowed_tools_violation", "security", "distractor")
SECOND = ("skipped_script", "two_skills")
HEADERS = {"x-skillsight-key": KEY}


def _cli(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skillsight.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _scan(folder: Path, data: Path) -> None:
    _cli("skills", "scan", str(folder), "--store", "--data", str(data), "--project", PROJECT)


def _send(server: RunningServer, name: str, key: str = KEY) -> None:
    capture = load_capture(name)
    for request in (capture.native_traces, capture.native_logs):
        response = httpx.post(
            f"{server.otlp_http}/v1/{request.signal}",
            content=request.body,
            headers={"content-type": request.content_type, "x-skillsight-key": key},
            timeout=30,
        )
        assert response.status_code == 200, response.text


def wait_scored(server: RunningServer, sessions: int, timeout: float = 180.0) -> None:
    """Until the scheduler has scored ``sessions`` sessions and nothing is left (polls)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health: dict[str, Any] = server.get("/healthz")
        evaluation = health["evaluation"]
        if (
            evaluation["sessions_scored"] >= sessions
            and evaluation["idle"]
            and health["rebuild"]["idle"]
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"sessions not scored within {timeout}s: {server.get('/healthz')}")


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    return {
        "SKILLSIGHT_API_KEYS": f"{KEY}:{PROJECT},{OTHER_KEY}:{OTHER_PROJECT}",
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
        **extra,
    }


@contextmanager
def fed_server(
    work: Path, env: Mapping[str, str] | None = None, first: Sequence[str] = FIRST
) -> Iterator[RunningServer]:
    """A running server whose project ``ui`` holds both phases, scored."""
    data = work / "data"
    for name in (*first, *SECOND):
        root = Path(load_capture(name).manifest["project_root"])
        build_scenario(name, root).write()
        _scan(root / ".claude" / "skills", data)
    with running_server(data, env=_env(env or {})) as server:
        server.headers.update(HEADERS)
        for name in first:
            _send(server, name)
        wait_scored(server, len(first))
    # csv-summary, changed: a second version (a copy, so the shared scenario folders stay as is)
    source = Path(load_capture("one_skill").manifest["project_root"]) / ".claude" / "skills"
    changed = work / "skills-v2"
    shutil.copytree(source / "csv-summary", changed / "csv-summary")
    skill_md = changed / "csv-summary" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\nReport the row count first.\n")
    _scan(changed, data)
    with running_server(data, env=_env(env or {})) as server:
        server.headers.update(HEADERS)
        for name in SECOND:
            _send(server, name)
        wait_scored(server, len(SECOND))
        yield server
