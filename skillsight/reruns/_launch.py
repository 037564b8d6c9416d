"""One attempt: a fresh workspace, the agent started with the contract's environment, bounded
by the run's timeout, then its telemetry found and scored into one ``run_results`` row."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillsight.goldens import GoldenCase
from skillsight.reruns._agents import AgentCommand, Launch
from skillsight.reruns._evidence import Evidence, collect
from skillsight.reruns._scoring import METRICS, RunScorer
from skillsight.reruns._workspace import SkillFolders, attempt_dir, prepare
from skillsight.store import Store

ANSWER_CHARS = 4000
TIMEOUT_EVIDENCE_S = 2.0


@dataclass(frozen=True)
class Attempt:
    case: GoldenCase
    condition: str
    attempt: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.case.case_id, self.condition, self.attempt)


@dataclass(frozen=True)
class LaunchSettings:
    """What every attempt of a run shares."""

    run_id: str
    project_id: str
    agent: AgentCommand
    skills: SkillFolders
    files_root: Path | None
    workdir: Path
    endpoint: str
    headers: Mapping[str, str]
    timeout_s: float
    telemetry_wait_s: float
    drained: Callable[[], bool] = lambda: True
    """Whether the hosted collector has committed every row it took."""


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _run_agent(
    argv: list[str], env: dict[str, str], cwd: Path, folder: Path, timeout_s: float
) -> tuple[str, int, str]:
    """Run the agent; ``(outcome, exit code, error)`` with outcome done/timeout/not_started."""
    with (
        (folder / "stdout.txt").open("wb") as out,
        (folder / "stderr.txt").open("wb") as err,
    ):
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True
            )
        except OSError as exc:
            return "not_started", -1, f"the agent did not start: {exc}"
        try:
            code = await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            _kill(process)
            await process.wait()
            return "timeout", -9, f"killed after the {timeout_s:g} s timeout"
        except BaseException:
            _kill(process)
            raise
    return "done", code, ""


def _tail(path: Path, chars: int = 600) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:].strip()
    except OSError:
        return ""


async def run_attempt(
    store: Store, settings: LaunchSettings, attempt: Attempt, scorer: RunScorer
) -> dict[str, Any]:
    """Play one attempt and return its ``run_results`` row (not yet written)."""
    case = attempt.case
    folder = attempt_dir(
        settings.workdir, settings.run_id, case.case_id, attempt.condition, attempt.attempt
    )
    workspace = await asyncio.to_thread(
        prepare, folder, case, attempt.condition, settings.skills, settings.files_root
    )
    launch = Launch(
        run_id=settings.run_id,
        case_id=case.case_id,
        condition=attempt.condition,
        attempt=attempt.attempt,
        key=uuid.uuid4().hex,
        prompt=case.question,
        prompt_file=folder / "prompt.txt",
        workspace=workspace,
        endpoint=settings.endpoint,
        headers=settings.headers,
    )
    started_us = int(time.time() * 1_000_000)
    clock = time.monotonic()
    outcome, code, error = await _run_agent(
        settings.agent.argv(launch),
        settings.agent.environment(launch),
        workspace,
        folder,
        settings.timeout_s,
    )
    duration_ms = (time.monotonic() - clock) * 1000.0
    wait = TIMEOUT_EVIDENCE_S if outcome != "done" else settings.telemetry_wait_s
    evidence = await collect(
        store, settings.project_id, launch.key, wait_s=wait, drained=settings.drained
    )
    row: dict[str, Any] = {
        "run_id": settings.run_id,
        "case_id": case.case_id,
        "condition": attempt.condition,
        "attempt": attempt.attempt,
        "session_ids": evidence.session_ids,
        "activation_ids": [a.activation_id for a in evidence.activations],
        "skill_invoked": any(a.skill_name == scorer.skill for a in evidence.activations),
        **{m: None for m in (*METRICS, "overall")},
        "passed": None,
        "tokens": 0,
        "cost_usd": 0.0,
        "duration_ms": round(duration_ms, 3),
        "exit_code": code,
        "answer": "",
        "reasons": "{}",
        "error": error,
        "started_at": started_us,
    }
    row.update(await _scored(outcome, code, evidence, attempt, scorer, workspace, folder))
    row["finished_at"] = int(time.time() * 1_000_000)
    return row


async def _scored(
    outcome: str,
    code: int,
    evidence: Evidence,
    attempt: Attempt,
    scorer: RunScorer,
    workspace: Path,
    folder: Path,
) -> dict[str, Any]:
    if outcome == "timeout":
        return {"status": "timeout"}
    if outcome == "not_started":
        return {"status": "agent_error"}
    if evidence.trajectory is None:
        if code != 0:
            stderr = _tail(folder / "stderr.txt")
            return {"status": "agent_error", "error": f"exit {code}: {stderr}"[:2000]}
        return {"status": "no_telemetry", "error": "no session carried this launch's key"}
    score = await asyncio.to_thread(
        scorer.score,
        attempt.case,
        attempt.condition,
        evidence.trajectory,
        evidence.activations,
        workspace=workspace,
    )
    overall = score.overall
    return {
        "status": "ok" if overall is not None else "unscored",
        **score.metrics,
        "overall": overall,
        "passed": score.passed,
        "tokens": score.tokens,
        "cost_usd": score.cost_usd,
        "answer": score.answer[:ANSWER_CHARS],
        "reasons": json.dumps(score.reasons, sort_keys=True),
        "skill_invoked": score.skill_invoked,
        "error": "" if evidence.settled else "scored from a rebuild not yet settled",
    }
