"""Play scenario workloads with the real Claude Code CLI and a scripted model.

A scenario (see :mod:`demo.scenario_library`) is a project with skills, a prompt,
scripted model turns for the main agent and its subagents, and the facts the run must produce.
:func:`run_scenario` plays one; the session can export Claude Code's native telemetry to an
OTLP endpoint (``endpoint=``), run under a third-party instrumentor (``instrumentation=
openinference(url)``) or under any instrumentation the caller provides: a zero-argument
callable returning a context manager, entered around the SDK call (instrumentors patch
``claude_agent_sdk`` while it is active).

``python -m demo.scenarios --list`` lists them;
``python -m demo.scenarios --run NAME --endpoint URL`` plays one against a running
collector and checks the workload did what its script says.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demo.scenario_library import (
    ISSUE_3_SCENARIOS,
    ISSUE_5_SCENARIOS,
    ISSUE_10_SCENARIOS,
    SCENARIOS,
    build_scenario,
)
from demo.scenario_types import (
    ExpectedActivation,
    ExpectedCall,
    ExpectedEvaluation,
    ExpectedFacts,
    Scenario,
    Trigger,
)
from demo.scripted_anthropic import MAIN_AGENT, RecordedRequest, ScriptedAnthropic
from demo.session import ClientKind, ExecutedCall, Transcript, run_claude, transcript
from demo.workload import PROTOCOLS, Protocol, telemetry_env

__all__ = [
    "ISSUE_3_SCENARIOS",
    "ISSUE_5_SCENARIOS",
    "ISSUE_10_SCENARIOS",
    "SCENARIOS",
    "ExpectedActivation",
    "ExpectedCall",
    "ExpectedEvaluation",
    "ExpectedFacts",
    "Instrumentation",
    "Scenario",
    "ScenarioResult",
    "Trigger",
    "build_scenario",
    "executed_facts",
    "main",
    "mismatches",
    "openinference",
    "run_scenario",
    "run_scenario_async",
    "run_scenarios_async",
]

Instrumentation = Callable[[], AbstractContextManager[Any]]
"""Makes the context manager entered around the SDK call (instrumentors patch the SDK)."""


@dataclass
class ScenarioResult:
    """What one played scenario produced on the client side."""

    scenario: Scenario
    messages: list[Any]
    """The ``claude_agent_sdk`` messages, in order."""
    requests: list[RecordedRequest]
    """Every request the scripted model server received."""
    transcript: Transcript
    duration_s: float

    @property
    def session_id(self) -> str | None:
        """The Claude Code session id."""
        return self.transcript.session_id

    @property
    def result_text(self) -> str | None:
        """The final answer (the SDK's result message)."""
        return self.transcript.result_text

    @property
    def calls(self) -> list[ExecutedCall]:
        """The tool calls the CLI executed, in the order the model made them."""
        return self.transcript.calls


def openinference(endpoint: str, *, headers: Mapping[str, str] | None = None) -> Instrumentation:
    """Arize's OpenInference instrumentor exporting OTLP/HTTP protobuf spans to ``endpoint``."""
    from demo.third_party import instrumented

    return lambda: instrumented("openinference", endpoint, headers=headers)


def _agent_of(call: ExecutedCall, calls: Sequence[ExecutedCall]) -> str:
    if call.parent_tool_use_id is None:
        return MAIN_AGENT
    parent = next((c for c in calls if c.tool_use_id == call.parent_tool_use_id), None)
    subagent = parent.input.get("subagent_type") if parent is not None else None
    return str(subagent) if subagent else call.parent_tool_use_id


def executed_facts(result: ScenarioResult) -> list[tuple[str, str, str, str, bool]]:
    """``(tool_use_id, name, key argument, agent, is_error)`` of every executed call."""
    calls = result.calls
    return [(c.tool_use_id, c.name, c.key, _agent_of(c, calls), c.is_error) for c in calls]


def mismatches(result: ScenarioResult) -> list[str]:
    """Where the run differs from the scenario's script (empty when it did what it says)."""
    expected = result.scenario.expected
    problems: list[str] = []
    want = [(c.tool_use_id, c.name, c.key, c.agent, c.is_error) for c in expected.tool_calls]
    got = executed_facts(result)
    if got != want:
        problems.append(f"tool calls: expected {want}, got {got}")
    results = {c.tool_use_id: c.result for c in result.calls}
    for call in expected.tool_calls:
        actual = results.get(call.tool_use_id)
        if call.result is not None and (actual or "").strip() != call.result:
            problems.append(f"{call.name} {call.tool_use_id} printed {actual!r}")
    if result.transcript.result_text != expected.final_answer:
        problems.append(
            f"final answer: expected {expected.final_answer!r}, "
            f"got {result.transcript.result_text!r}"
        )
    return problems


def _resolve(scenario: str | Scenario, workdir: Path) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    return build_scenario(scenario, workdir / "project")


async def run_scenario_async(
    scenario: str | Scenario,
    *,
    workdir: Path | None = None,
    endpoint: str | None = None,
    protocol: Protocol = "http/protobuf",
    project_key: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    instrumentation: Instrumentation | None = None,
    client: ClientKind = "query",
    timeout_s: float = 90.0,
    request_ids: bool = True,
    log_tool_content: bool = True,
) -> ScenarioResult:
    """Write the scenario's project, serve its script, run the real CLI on it.

    ``scenario`` is a name (the project goes to ``workdir/project``; default: a temporary
    directory removed afterwards) or a built :class:`Scenario`. With ``endpoint`` set Claude
    Code exports its native traces and logs there over ``protocol``. ``request_ids=False``:
    the model server sends no ``request-id`` header (as behind a gateway);
    ``log_tool_content=False``: ``OTEL_LOG_TOOL_CONTENT`` off (no tool output exported).
    """
    if workdir is None and not isinstance(scenario, Scenario):
        with tempfile.TemporaryDirectory(prefix="skillsight-scenario-") as tmp:
            return await run_scenario_async(
                scenario,
                workdir=Path(tmp),
                endpoint=endpoint,
                protocol=protocol,
                project_key=project_key,
                extra_env=extra_env,
                instrumentation=instrumentation,
                client=client,
                timeout_s=timeout_s,
                request_ids=request_ids,
                log_tool_content=log_tool_content,
            )
    built = _resolve(scenario, workdir or Path(tempfile.gettempdir()))
    built.write()
    env: dict[str, str] = {}
    if endpoint is not None:
        env.update(
            telemetry_env(
                endpoint,
                protocol,
                project_key=project_key,
                log_tool_content=log_tool_content,
                workspace=built.root,
            )
        )
    env.update(extra_env or {})
    server = ScriptedAnthropic(built.turns, agents=built.subagents, request_ids=request_ids)
    context = instrumentation() if instrumentation is not None else contextlib.nullcontext()
    started = time.monotonic()
    with server as base_url, context:
        messages = await run_claude(
            built.root,
            base_url=base_url,
            prompt=built.prompt,
            skills=built.skills,
            allowed_tools=built.allowed_tools,
            env=env,
            client=client,
            timeout_s=timeout_s,
            # The CLI refuses an unapproved rm outside its working directories; granting the
            # (fresh, empty) outside dir lets it run, while it stays outside the project.
            add_dirs=[built.outside_dir] if built.outside_dir is not None else [],
        )
    return ScenarioResult(
        scenario=built,
        messages=messages,
        requests=list(server.requests),
        transcript=transcript(messages),
        duration_s=time.monotonic() - started,
    )


def run_scenario(scenario: str | Scenario, **kwargs: Any) -> ScenarioResult:
    """Blocking :func:`run_scenario_async` (runs its own event loop); same arguments."""
    return asyncio.run(run_scenario_async(scenario, **kwargs))


async def run_scenarios_async(
    names: Sequence[str],
    workdir: Path,
    *,
    concurrency: int = 3,
    instrumentation: Instrumentation | None = None,
    **kwargs: Any,
) -> dict[str, ScenarioResult]:
    """Play several scenarios at once, each in ``workdir/<name>``; results by name.

    ``instrumentation`` is entered once around all of them: instrumentors patch the SDK
    process-wide, so per-session contexts would undo each other.
    """
    gate = asyncio.Semaphore(concurrency)

    async def one(name: str) -> ScenarioResult:
        async with gate:
            return await run_scenario_async(name, workdir=workdir / name, **kwargs)

    context = instrumentation() if instrumentation is not None else contextlib.nullcontext()
    with context:
        results = await asyncio.gather(*(one(name) for name in names))
    return dict(zip(names, results, strict=True))


@contextlib.contextmanager
def _workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="skillsight-scenario-") as tmp:
        yield Path(tmp)


def _print_list() -> None:
    for name, factory in SCENARIOS.items():
        scenario = factory(Path("/project"))
        issue = (
            "issue 3"
            if name in ISSUE_3_SCENARIOS
            else "issue 10"
            if name in ISSUE_10_SCENARIOS
            else "issue 5"
        )
        print(f"{name:<24} ({issue}) {scenario.summary}")


def _print_result(result: ScenarioResult) -> None:
    print(f"scenario     {result.scenario.name}")
    print(f"session      {result.session_id}")
    print(f"duration     {result.duration_s:.1f} s")
    for call_id, name, key, agent, is_error in executed_facts(result):
        flag = "  (error)" if is_error else ""
        print(f"tool call    {agent:<12} {name:<6} {call_id}  {key}{flag}")
    print("answer")
    print(textwrap.indent(result.transcript.result_text or "(none)", "  "))


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: list the scenarios, or play some against an OTLP endpoint."""
    parser = argparse.ArgumentParser(
        prog="python -m demo.scenarios",
        description="Play scenario workloads with the real Claude Code CLI (scripted model).",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--run", action="append", default=[], metavar="NAME", help="scenario to play ('all')"
    )
    parser.add_argument("--endpoint", help="OTLP endpoint, e.g. http://127.0.0.1:4318")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="http/protobuf")
    parser.add_argument("--project-key", help="sent as the x-skillsight-key OTLP header")
    parser.add_argument(
        "--instrumentor",
        choices=["none", "openinference"],
        default="none",
        help="also trace the SDK with OpenInference (spans to --endpoint over http/protobuf)",
    )
    parser.add_argument(
        "--no-request-id",
        action="store_true",
        help="the model server sends no request-id header (Claude Code behind a gateway)",
    )
    parser.add_argument(
        "--no-tool-content",
        action="store_true",
        help="OTEL_LOG_TOOL_CONTENT=0: Claude Code exports no tool output",
    )
    parser.add_argument("--workdir", type=Path, help="keep the projects here")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per session")
    args = parser.parse_args(argv)
    if args.list:
        _print_list()
        return 0
    names = list(SCENARIOS) if args.run == ["all"] else args.run
    unknown = [n for n in names if n not in SCENARIOS]
    if not names or unknown:
        parser.error(f"--run takes one of: all, {', '.join(SCENARIOS)} (got {unknown or 'none'})")
    instrumentation: Instrumentation | None = None
    if args.instrumentor == "openinference":
        if not args.endpoint:
            parser.error("--instrumentor needs --endpoint")
        headers = {"x-skillsight-key": args.project_key} if args.project_key else None
        instrumentation = openinference(args.endpoint, headers=headers)
    failed = 0
    with _workdir(args.workdir) as workdir:
        for name in names:
            result = run_scenario(
                name,
                workdir=workdir / name,
                endpoint=args.endpoint,
                protocol=args.protocol,
                project_key=args.project_key,
                instrumentation=instrumentation,
                timeout_s=args.timeout,
                request_ids=not args.no_request_id,
                log_tool_content=not args.no_tool_content,
            )
            _print_result(result)
            for problem in mismatches(result):
                failed += 1
                print(f"MISMATCH     {problem}", file=sys.stderr)
            print()
    if args.endpoint:
        print(f"telemetry    {args.protocol} -> {args.endpoint}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
