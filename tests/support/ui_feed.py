"""A project for the web UI's browser tests, fed with recorded Claude Code scenarios.

Two phases on one data folder, so a skill has two versions: the scenarios' skills are recorded
in the catalogue and a first set of captures is replayed into a real ``skillsight serve`` and
scored; then ``csv-summary`` is recorded again with a changed SKILL.md (a new version) and the
second set is replayed into the server the tests browse. Everything is real: Claude Code's own
OTLP exports (``demo.replay``), the collector, the rebuild, the deterministic evaluators.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from demo import replay
from tests.support.serve import RunningServer, running_server

PROJECT, KEY = "ui", "ui-key"
OTHER_PROJECT, OTHER_KEY = "other", "other-key"
FIRST = ("one_skill", "tool_error", "allowed_tools_violation", "security", "distractor")
SECOND = ("skipped_script", "two_skills")
HEADERS = {"x-skillsight-key": KEY}


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    return {
        "SKILLSIGHT_API_KEYS": f"{KEY}:{PROJECT},{OTHER_KEY}:{OTHER_PROJECT}",
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
        **extra,
    }


def _replay(server: RunningServer, names: Sequence[str]) -> None:
    server.headers.update(HEADERS)
    for name in names:
        replay.send(server.otlp_http, name, HEADERS)

    def get(path: str) -> dict[str, Any]:
        found: dict[str, Any] = server.get(path)
        return found

    replay.wait_scored(get, len(names))


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
        _replay(server, SECOND)
        yield server
