"""Replay recorded Claude Code scenarios into a running ``skillsight serve``.

The captures under ``tests/fixtures/captures/scenarios/<name>/claude_code/`` are what Claude
Code itself exported (OTLP/JSON traces and log events) while it ran each scenario of
``demo.scenarios`` against the scripted model. Replaying them gives a service real sessions in
seconds, without starting the CLI: the web UI's screenshots and its browser tests use this.

A scenario's skills are written where they were when the capture was recorded (the manifest's
``project_root``) so the service's catalogue and evaluators see the same files.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from demo.scenario_library import build_scenario

CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "captures" / "scenarios"
FAILING = ("allowed_tools_violation", "distractor", "security", "skipped_script", "tool_error")
CLEAN = ("one_skill", "two_skills")


def manifest(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CAPTURES / name / "manifest.json").read_text("utf-8"))
    return loaded


def project_root(name: str) -> Path:
    return Path(manifest(name)["project_root"])


def write_skills(name: str) -> Path:
    """Write scenario ``name``'s project where it was recorded; return its skills folder."""
    root = project_root(name)
    build_scenario(name, root).write()
    return root / ".claude" / "skills"


def scan_into_store(skills: Path, data: Path, project: str = "default") -> None:
    """``skillsight skills scan DIR --store``: record the skills in the catalogue (before the
    service starts, as the embedded store has one owner)."""
    done = subprocess.run(
        [sys.executable, "-m", "skillsight.cli", "skills", "scan", str(skills), "--store",
         "--data", str(data), "--project", project],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"skills scan failed:\n{done.stdout}{done.stderr}")


# What makes one recorded session another: its ids (trace and span ids, session UUIDs, tool_use
# ids) and its moments (nanosecond timestamps, written as 19-digit strings in OTLP/JSON).
_IDS = re.compile(
    rb'(?<=")[0-9a-f]{32}(?=")|(?<=")[0-9a-f]{16}(?=")'
    rb"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|toolu_[A-Za-z0-9]{8,}"
)
_NANOS = re.compile(rb'(?<=")1[0-9]{18}(?=")')


class Variant:
    """A fresh copy of recorded sessions: every id replaced by a new one of the same shape
    (consistently across the traces and logs of one variant), every timestamp moved so the
    session ends ``ago_s`` seconds before now."""

    def __init__(self, ago_s: float = 60.0) -> None:
        self._ids: dict[bytes, bytes] = {}
        self._ago_ns = int(ago_s * 1e9)
        self._shift: int | None = None

    def _id(self, match: re.Match[bytes]) -> bytes:
        old = match.group(0)
        new = self._ids.get(old)
        if new is None:
            if old.startswith(b"toolu_"):
                new = b"toolu_" + secrets.token_hex(12).encode()
            elif b"-" in old:
                raw = secrets.token_hex(16)
                new = f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}".encode()
            else:
                new = secrets.token_hex(len(old) // 2).encode()
            self._ids[old] = new
        return new

    def apply(self, body: bytes) -> bytes:
        if self._shift is None:
            latest = max((int(m) for m in _NANOS.findall(body)), default=0)
            self._shift = time.time_ns() - self._ago_ns - latest if latest else 0
        shift = self._shift
        body = _NANOS.sub(lambda m: str(int(m.group(0)) + shift).encode(), body)
        return _IDS.sub(self._id, body)


def send(
    otlp_http: str,
    name: str,
    headers: Mapping[str, str] | None = None,
    variant: Variant | None = None,
) -> None:
    """POST the scenario's recorded traces and log events to an OTLP/HTTP endpoint; with a
    ``variant``, as a new session (fresh ids, moved in time)."""
    folder = CAPTURES / name / "claude_code"
    for signal in ("traces", "logs"):
        body = (folder / f"{signal}.json").read_bytes()
        response = httpx.post(
            f"{otlp_http}/v1/{signal}",
            content=variant.apply(body) if variant is not None else body,
            headers={"content-type": "application/json", **(headers or {})},
            timeout=30,
        )
        response.raise_for_status()


def wait_scored(
    get: Callable[[str], dict[str, Any]], sessions: int, timeout: float = 600.0
) -> None:
    """Until the service has scored ``sessions`` sessions and has nothing left (polls its
    ``/healthz``; ``get`` fetches a path as JSON with the caller's credentials)."""
    deadline = time.monotonic() + timeout
    health: dict[str, Any] = {}
    while time.monotonic() < deadline:
        health = get("/healthz")
        if health.get("evaluation", {}).get("sessions_scored", 0) >= sessions and health.get(
            "caught_up"
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"sessions not scored within {timeout}s: {health}")


def play_failures(
    api: str,
    otlp_http: str,
    *,
    repeats: int = 6,
    clean: bool = True,
    already_scored: int = 0,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Replay each failing scenario ``repeats`` times as fresh sessions spread over the last two
    days (and the clean ones once), wait until the service scored them, and cluster the
    failures now; returns the clustering run's summary. The scenarios' skills must be in the
    service's catalogue (:func:`write_skills`, then ``serve --skills`` or :func:`scan_into_store`).
    """
    sessions = 0
    for index, name in enumerate(CLEAN if clean else ()):
        send(otlp_http, name, headers, Variant(ago_s=1800 + 600 * index))
        sessions += 1
    for offset, name in enumerate(FAILING):
        for index in range(repeats):
            ago = 3600 * (2 + index * 7 + offset) % (46 * 3600) + 300
            send(otlp_http, name, headers, Variant(ago_s=ago))
            sessions += 1

    def get(path: str) -> dict[str, Any]:
        found: dict[str, Any] = httpx.get(
            api + path, headers=dict(headers or {}), timeout=30
        ).json()
        return found

    wait_scored(get, already_scored + sessions)
    response = httpx.post(f"{api}/api/v1/clusters/run", headers=dict(headers or {}), timeout=600)
    response.raise_for_status()
    summary: dict[str, Any] = response.json()
    return summary
