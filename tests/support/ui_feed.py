"""A project for the web UI's browser tests, fed with recorded Claude Code scenarios.

Two phases on one data folder, so a skill has two versions: the scenarios' skills are recorded
in the catalogue and a first set of captures is replayed into a real ``skillsight serve`` and
scored; then ``csv-summary`` is recorded again with a changed SKILL.md (a new version) and the
second set is replayed into the server the tests browse. Everything is real: Claude Code's own
OTLP exports (``demo.replay``), the collector, the rebuild, the deterministic evaluators.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from demo import replay
from tests.support.serve import RunningServer, running_server

PROJECT, KEY = "ui", "ui-key"
OTHER_PROJECT, OTHER_KEY = "other", "other-key"
# reads the service's own state (/healthz details), which project keys do not
ADMIN_KEY = "ui-admin"
# an agent's exporter key: may send telemetry, not read it
INGEST_KEY = "ui-ingest"
FIRST = ("one_skill", "tool_error", "allowed_tools_violation", "security", "distractor")
SECOND = ("skipped_script", "two_skills")
# Failure patterns replayed again as fresh sessions (new ids, now), enough of each for a cluster.
REPEATED = ("allowed_tools_violation", "tool_error")
REPEATS = 6
HEADERS = {"x-skillsight-key": KEY}


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    return {
        "SKILLSIGHT_API_KEYS": (
            f"{KEY}:{PROJECT},{OTHER_KEY}:{OTHER_PROJECT},{ADMIN_KEY}:{PROJECT}:read+admin,"
            f"{INGEST_KEY}:{PROJECT}:ingest"
        ),
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
        "SKILLSIGHT_CLUSTER_INTERVAL_S": "1",
        **extra,
    }


def health(server: RunningServer) -> dict[str, Any]:
    """The service's state, read with the admin key."""
    response = httpx.get(
        server.api + "/healthz", headers={"x-skillsight-key": ADMIN_KEY}, timeout=30
    )
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


def _get(server: RunningServer) -> Callable[[str], dict[str, Any]]:
    return lambda path: health(server)


def _replay(server: RunningServer, names: Sequence[str], repeats: int = 0) -> None:
    server.headers.update(HEADERS)
    for name in names:
        replay.send(server.otlp_http, name, HEADERS)
    for name in REPEATED if repeats else ():
        for index in range(repeats):
            replay.send(server.otlp_http, name, HEADERS, replay.Variant(ago_s=600 + 60 * index))
    replay.wait_scored(_get(server), len(names) + repeats * len(REPEATED))


def _wait_clustered(server: RunningServer, timeout: float = 600.0) -> None:
    """Until a clustering run of the project has found the repeated failure patterns (polls:
    failures are embedded as they are scored, and runs repeat every second)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = health(server)["clustering"].get("last_runs") or {}
        if int((runs.get(PROJECT) or {}).get("clusters", 0)) >= len(REPEATED):
            return
        time.sleep(0.2)
    raise AssertionError(f"no clusters within {timeout}s: {health(server)['clustering']}")


@contextmanager
def fed_server(
    work: Path, env: Mapping[str, str] | None = None, first: Sequence[str] = FIRST
) -> Iterator[RunningServer]:
    """A running server whose project ``ui`` holds both phases, scored."""
    data = work / "data"
    for name in (*first, *SECOND):
        replay.scan_into_store(replay.write_skills(name), data, PROJECT)
    with running_server(data, env=_env(env or {})) as server:
        _replay(server, first)
    # csv-summary, changed: a second version (a copy, so the shared scenario folders stay as is)
    source = replay.project_root("one_skill") / ".claude" / "skills" / "csv-summary"
    changed = work / "skills-v2"
    shutil.copytree(source, changed / "csv-summary")
    skill_md = changed / "csv-summary" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\nReport the row count first.\n")
    replay.scan_into_store(changed, data, PROJECT)
    with running_server(data, env=_env(env or {})) as server:
        _replay(server, SECOND, repeats=REPEATS)
        _wait_clustered(server)
        yield server
