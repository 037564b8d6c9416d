"""Run one real Claude Code session that uses a project skill, with native OTLP export on.

The session is the demo and test workload: Claude Code (the CLI bundled with
``claude-agent-sdk``) loads ``.claude/skills/csv-summary/SKILL.md`` from a generated project,
the scripted model calls the ``Skill`` tool, then ``Bash`` to run the skill's script, then
answers with the script's output. Everything except the model is real, including the CLI's own
OpenTelemetry traces, logs and metrics.

``python -m demo.workload --endpoint URL --protocol P`` runs it end to end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import quote

from demo._project_files import (
    EXPECTED_SUMMARY,
    SALES_CSV,
    SUMMARY_SCRIPT,
    csv_summary_skill_md,
)
from demo.scripted_anthropic import (
    Block,
    RecordedRequest,
    ScriptedAnthropic,
    Text,
    ToolUse,
    Turn,
    last_tool_result_text,
)
from demo.session import ClientKind, run_claude, transcript

__all__ = [
    "DEFAULT_PROMPT",
    "SKILL_NAME",
    "ClientKind",
    "DemoProject",
    "DemoResult",
    "Protocol",
    "create_demo_project",
    "demo_turns",
    "main",
    "run_demo",
    "run_demo_async",
    "run_session",
    "telemetry_env",
]

Protocol = Literal["http/json", "http/protobuf", "grpc"]
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)

SKILL_NAME = "csv-summary"
DEFAULT_PROMPT = "What is the total amount in data/sales.csv, and which region sold the most?"
PROJECT_KEY_HEADER = "x-skillsight-key"


@dataclass(frozen=True)
class DemoProject:
    """A generated project directory holding one skill, its script and a data file."""

    root: Path
    skill_name: str
    skill_dir: Path
    script: Path
    data_file: Path
    command: str
    """The shell command the skill body tells the agent to run (relative to ``root``)."""
    expected_output: str
    """What ``command`` prints (stdout, stripped)."""


@dataclass
class DemoResult:
    """Everything one demo session produced on the client side."""

    project: DemoProject
    messages: list[Any]
    """The ``claude_agent_sdk`` messages, in order."""
    requests: list[RecordedRequest]
    """Every request the scripted model server received."""
    duration_s: float
    session_id: str | None = None
    result_text: str | None = None
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """``(tool_use_id, tool name, input)`` of each tool call the agent made."""


def create_demo_project(root: Path, *, skill_name: str = SKILL_NAME) -> DemoProject:
    """Write the demo project (skill, script, CSV) under ``root`` and describe it."""
    skill_dir = root / ".claude" / "skills" / skill_name
    script = skill_dir / "scripts" / "summarize_csv.py"
    data_file = root / "data" / "sales.csv"
    script.parent.mkdir(parents=True, exist_ok=True)
    data_file.parent.mkdir(parents=True, exist_ok=True)
    command = (
        f"python3 {script.relative_to(root).as_posix()} {data_file.relative_to(root).as_posix()}"
    )
    skill_md = csv_summary_skill_md(skill_name, script.relative_to(root).as_posix())
    (skill_dir / "SKILL.md").write_text(skill_md, encoding="utf-8")
    script.write_text(SUMMARY_SCRIPT, encoding="utf-8")
    data_file.write_text(SALES_CSV, encoding="utf-8")
    return DemoProject(
        root=root,
        skill_name=skill_name,
        skill_dir=skill_dir,
        script=script,
        data_file=data_file,
        command=command,
        expected_output=EXPECTED_SUMMARY,
    )


def demo_turns(project: DemoProject) -> list[Turn]:
    """The scripted model: ``Skill``, then ``Bash`` running the script, then the answer."""

    def final_answer(body: dict[str, Any]) -> Sequence[Block]:
        output = last_tool_result_text(body).strip() or "(the script printed nothing)"
        return [
            Text(
                f"The {project.skill_name} skill summarised "
                f"{project.data_file.relative_to(project.root).as_posix()}:\n\n{output}"
            )
        ]

    return [
        [
            Text(f"I'll use the {project.skill_name} skill for this."),
            ToolUse("Skill", {"skill": project.skill_name}),
        ],
        [
            ToolUse(
                "Bash",
                {"command": project.command, "description": "Summarise the CSV file"},
            )
        ],
        final_answer,
    ]


def telemetry_env(
    endpoint: str,
    protocol: Protocol = "http/protobuf",
    *,
    project_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    metrics: bool = False,
    export_interval_ms: int = 500,
    log_tool_content: bool = True,
    workspace: Path | str | None = None,
) -> dict[str, str]:
    """Environment that makes Claude Code export traces and logs (and metrics) over OTLP.

    ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA`` turns on traces and puts trace/span ids on log
    records; ``OTEL_LOG_TOOL_DETAILS`` is what makes ``skill_activated`` carry the real skill
    name (it says ``custom_skill`` otherwise) and tools carry their inputs;
    ``OTEL_LOG_TOOL_CONTENT`` adds a ``tool.output`` span event with the tool's output.
    ``workspace`` (the directory the CLI runs in) goes into every row's resource as
    ``process.working_directory`` (``OTEL_RESOURCE_ATTRIBUTES``): Claude Code reports no working
    directory of its own, and without one skillsight cannot tell a path in the project from one
    outside it.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    interval = str(export_interval_ms)
    env = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp" if metrics else "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint.rstrip("/"),
        "OTEL_LOG_USER_PROMPTS": "1",
        "OTEL_LOG_TOOL_DETAILS": "1",
        "OTEL_LOG_TOOL_CONTENT": "1" if log_tool_content else "0",
        # Short intervals so batches leave while the session runs; the CLI also flushes on exit.
        "OTEL_LOGS_EXPORT_INTERVAL": interval,
        "OTEL_TRACES_EXPORT_INTERVAL": interval,
        "OTEL_BSP_SCHEDULE_DELAY": interval,
        "OTEL_METRIC_EXPORT_INTERVAL": str(max(export_interval_ms, 1000)),
    }
    if workspace is not None:
        directory = quote(str(workspace), safe="/:@._-~+")
        env["OTEL_RESOURCE_ATTRIBUTES"] = f"process.working_directory={directory}"
    # Per-signal settings inherited from the caller's environment would win over the generic
    # ones, so pin them to the same values.
    for signal in ("TRACES", "LOGS", "METRICS"):
        if f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT" in os.environ:
            base = endpoint.rstrip("/")
            per_signal = base if protocol == "grpc" else f"{base}/v1/{signal.lower()}"
            env[f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"] = per_signal
        if f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL" in os.environ:
            env[f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"] = protocol
    all_headers = dict(headers or {})
    if project_key is not None:
        all_headers[PROJECT_KEY_HEADER] = project_key
    if all_headers:
        env["OTEL_EXPORTER_OTLP_HEADERS"] = ",".join(f"{k}={v}" for k, v in all_headers.items())
    return env


async def run_session(
    project: DemoProject,
    *,
    base_url: str,
    prompt: str = DEFAULT_PROMPT,
    env: Mapping[str, str] | None = None,
    model: str | None = None,
    client: ClientKind = "query",
    timeout_s: float = 90.0,
    stderr: Any = None,
) -> list[Any]:
    """Run one Claude Code session in ``project`` against the model at ``base_url``.

    ``env`` is merged over the session defaults (scripted endpoint, API key, private config
    dir); put :func:`telemetry_env` there to export OTLP. Returns the SDK messages.
    """
    return await run_claude(
        project.root,
        base_url=base_url,
        prompt=prompt,
        skills=[project.skill_name],
        allowed_tools=["Bash(python3:*)", "Read"],
        env=env,
        model=model,
        client=client,
        timeout_s=timeout_s,
        stderr=stderr,
    )


def _summarise_messages(result: DemoResult) -> None:
    told = transcript(result.messages)
    result.session_id = told.session_id
    result.result_text = told.result_text
    result.tool_calls = [(c.tool_use_id, c.name, c.input) for c in told.calls]


async def run_demo_async(
    endpoint: str | None = None,
    protocol: Protocol = "http/protobuf",
    *,
    project_key: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    prompt: str = DEFAULT_PROMPT,
    metrics: bool = False,
    client: ClientKind = "query",
    timeout_s: float = 90.0,
) -> DemoResult:
    """Start the scripted model, build the project, run the session; export OTLP if asked.

    With ``endpoint`` set, Claude Code exports to it over ``protocol``; ``project_key`` is sent
    as the ``x-skillsight-key`` header. ``workdir`` (default: a fresh temporary directory that
    is removed afterwards) receives the project.
    """
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="skillsight-demo-") as tmp:
            return await run_demo_async(
                endpoint,
                protocol,
                project_key=project_key,
                extra_env=extra_env,
                workdir=Path(tmp),
                prompt=prompt,
                metrics=metrics,
                client=client,
                timeout_s=timeout_s,
            )
    project = create_demo_project(workdir / "project")
    env: dict[str, str] = {}
    if endpoint is not None:
        env.update(
            telemetry_env(
                endpoint,
                protocol,
                project_key=project_key,
                metrics=metrics,
                workspace=project.root,
            )
        )
    env.update(extra_env or {})
    server = ScriptedAnthropic(demo_turns(project))
    started = time.monotonic()
    with server as base_url:
        messages = await run_session(
            project, base_url=base_url, prompt=prompt, env=env, client=client, timeout_s=timeout_s
        )
    result = DemoResult(
        project=project,
        messages=messages,
        requests=list(server.requests),
        duration_s=time.monotonic() - started,
    )
    _summarise_messages(result)
    return result


def run_demo(
    endpoint: str | None = None,
    protocol: Protocol = "http/protobuf",
    *,
    project_key: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    prompt: str = DEFAULT_PROMPT,
    metrics: bool = False,
    client: ClientKind = "query",
    timeout_s: float = 90.0,
) -> DemoResult:
    """Blocking :func:`run_demo_async` (runs its own event loop)."""
    return asyncio.run(
        run_demo_async(
            endpoint,
            protocol,
            project_key=project_key,
            extra_env=extra_env,
            workdir=workdir,
            prompt=prompt,
            metrics=metrics,
            client=client,
            timeout_s=timeout_s,
        )
    )


def _parse_env(pairs: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run the demo session against an OTLP endpoint and print a summary."""
    parser = argparse.ArgumentParser(
        prog="python -m demo.workload",
        description="Run one real Claude Code session that uses a project skill, exporting "
        "its native OpenTelemetry traces and logs to ENDPOINT.",
    )
    parser.add_argument("--endpoint", help="OTLP endpoint, e.g. http://127.0.0.1:4318")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="http/protobuf")
    parser.add_argument("--project-key", help="sent as the x-skillsight-key OTLP header")
    parser.add_argument("--metrics", action="store_true", help="export metrics as well")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds for the session")
    args = parser.parse_args(argv)

    result = run_demo(
        args.endpoint,
        args.protocol,
        project_key=args.project_key,
        extra_env=_parse_env(args.env),
        prompt=args.prompt,
        metrics=args.metrics,
        timeout_s=args.timeout,
    )
    main_requests = sum(1 for r in result.requests if r.kind == "main")
    print(f"session      {result.session_id}")
    print(f"duration     {result.duration_s:.1f} s")
    print(f"model calls  {main_requests} agent-loop + {len(result.requests) - main_requests} side")
    for call_id, name, tool_input in result.tool_calls:
        detail = tool_input.get("skill") or tool_input.get("command") or ""
        print(f"tool call    {name:<6} {call_id}  {detail}")
    if args.endpoint:
        print(f"telemetry    {args.protocol} -> {args.endpoint}")
    print("answer")
    print(textwrap.indent(result.result_text or "(none)", "  "))
    ok = result.result_text is not None and result.project.expected_output in result.result_text
    if not ok:
        print("the session did not produce the expected answer", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
