"""``skillsight bench overhead``: what the Claude Agent SDK instrumentor costs an agent.

Two measurements, reported in one run:

- **end to end**: the demo session (real Claude Code CLI, scripted model, a skill with a script)
  run alternately without and with :class:`ClaudeAgentSDKInstrumentor`, spans going through a
  batch processor. Reported as ratios of the medians (wall time per session, CPU time of this
  Python process) and as added milliseconds per session and per tool call. The CLI's own start-up
  dominates a session, so this ratio is close to 1 by construction. CPU time of the CLI
  (a reaped child) plus this process is reported too: it does not move with the machine's load;
- **in isolation**: the instrumentor's own work — hook callbacks and message handling, spans
  built and exported through the batch processor — replayed from a synthetic session with the
  SDK's own message types, without the CLI. CPU microseconds per session and per tool call
  (the slope between sessions of 0 and N tool calls), and the Python memory a session holds at
  its peak and keeps after it ends (tracemalloc).
"""

from __future__ import annotations

import asyncio
import gc
import resource
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from rich.console import Console

from demo.scripted_anthropic import ScriptedAnthropic
from demo.workload import DemoProject, create_demo_project, demo_turns, run_session
from skillsight.instrumentation import ClaudeAgentSDKInstrumentor

__all__ = ["replay_session", "run_overhead_bench", "synthetic_session"]


class _CountingExporter(SpanExporter):
    """Accepts every batch and only counts it: the cost measured is the instrumentor's."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def _provider() -> tuple[TracerProvider, _CountingExporter]:
    exporter = _CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, exporter


# --- the synthetic session ---------------------------------------------------------------------

Event = tuple[str, Any]
"""``("hook", hook input dict)`` or ``("message", SDK message)``, in the order the CLI sends."""


def synthetic_session(project: DemoProject, tool_calls: int) -> list[Event]:
    """A session shaped like the demo: Skill, then ``tool_calls`` Bash runs, then the answer."""
    from claude_agent_sdk import (
        AssistantMessage,
        ResultMessage,
        SystemMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )

    session_id = "bench-session"
    model = "claude-sonnet-4-5"
    usage = {
        "input_tokens": 8,
        "output_tokens": 40,
        "cache_read_input_tokens": 13000,
        "cache_creation_input_tokens": 200,
    }
    base = {"session_id": session_id, "transcript_path": "", "cwd": str(project.root)}
    events: list[Event] = [
        ("hook", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Sum the CSV."}),
        (
            "message",
            SystemMessage(
                "init",
                {"session_id": session_id, "model": model, "skills": [project.skill_name]},
            ),
        ),
    ]

    def call(turn: int, name: str, tool_input: dict[str, Any], output: Any) -> None:
        call_id = f"toolu_bench_{turn}"
        events.extend(
            [
                (
                    "message",
                    AssistantMessage(
                        [ToolUseBlock(call_id, name, tool_input)],
                        model,
                        usage=usage,
                        message_id=f"msg_{turn}",
                    ),
                ),
                (
                    "hook",
                    {
                        **base,
                        "hook_event_name": "PreToolUse",
                        "tool_name": name,
                        "tool_input": tool_input,
                        "tool_use_id": call_id,
                    },
                ),
                (
                    "hook",
                    {
                        **base,
                        "hook_event_name": "PostToolUse",
                        "tool_name": name,
                        "tool_input": tool_input,
                        "tool_response": output,
                        "tool_use_id": call_id,
                    },
                ),
                ("message", UserMessage([ToolResultBlock(call_id, str(output))])),
            ]
        )

    call(0, "Skill", {"skill": project.skill_name}, {"success": True})
    for turn in range(1, tool_calls + 1):
        call(turn, "Bash", {"command": project.command}, {"stdout": project.expected_output})
    events += [
        (
            "message",
            AssistantMessage([TextBlock(project.expected_output)], model, usage=usage),
        ),
        ("hook", {**base, "hook_event_name": "Stop", "stop_hook_active": False}),
        (
            "message",
            ResultMessage(
                "success",
                1000,
                500,
                False,
                tool_calls + 2,
                session_id,
                total_cost_usd=0.01,
                usage=usage,
                result=project.expected_output,
            ),
        ),
    ]
    return events


async def replay_session(
    instrumentor: ClaudeAgentSDKInstrumentor, options: Any, events: Sequence[Event]
) -> None:
    """Feed one session's events through a fresh instrumentor session, as the SDK would."""
    session = instrumentor._new_session(options)
    assert session is not None
    hook = session.hooks(None)["PreToolUse"][-1].hooks[0]
    for kind, event in events:
        if kind == "hook":
            await hook(event, event.get("tool_use_id"), {"signal": None})
        else:
            session.handle_message(event)
    session.end()


@dataclass
class _Isolated:
    per_session_us: float
    per_tool_call_us: float
    peak_kib_per_session: float
    retained_kib_per_session: float
    spans: int


def _time_replays(
    instrumentor: ClaudeAgentSDKInstrumentor,
    options: Any,
    events: list[Event],
    replays: int,
    provider: TracerProvider,
) -> float:
    # CPU time of this process (the batch processor's thread included), not wall time: on a
    # shared machine other processes' load would otherwise be measured as ours.
    async def run() -> float:
        started = time.process_time()
        for _ in range(replays):
            await replay_session(instrumentor, options, events)
        provider.force_flush()
        return (time.process_time() - started) / replays

    return asyncio.run(run())


def _isolated(project: DemoProject, replays: int, tool_calls: int) -> _Isolated:
    from claude_agent_sdk import ClaudeAgentOptions

    provider, exporter = _provider()
    instrumentor = ClaudeAgentSDKInstrumentor()
    # Only the session machinery is used here: nothing is patched.
    instrumentor._tracer_provider = provider
    options = ClaudeAgentOptions(cwd=str(project.root), skills=[project.skill_name])
    small, large = synthetic_session(project, 0), synthetic_session(project, tool_calls)
    _time_replays(instrumentor, options, large, max(1, replays // 10), provider)  # warm up
    t_small = _time_replays(instrumentor, options, small, replays, provider)
    t_large = _time_replays(instrumentor, options, large, replays, provider)

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    asyncio.run(replay_session(instrumentor, options, large))
    _, peak = tracemalloc.get_traced_memory()
    provider.force_flush()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    retained = sum(s.size_diff for s in after.compare_to(before, "filename"))
    provider.shutdown()
    return _Isolated(
        per_session_us=t_small * 1e6,
        per_tool_call_us=(t_large - t_small) / tool_calls * 1e6,
        peak_kib_per_session=peak / 1024,
        retained_kib_per_session=max(retained, 0) / 1024,
        spans=exporter.spans,
    )


# --- end to end ------------------------------------------------------------------------------


def _cpu_s() -> tuple[float, float]:
    """CPU seconds of this process and of its reaped children (the CLI, once it has exited)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


async def _one_run(project: DemoProject) -> tuple[float, float, float]:
    with ScriptedAnthropic(demo_turns(project)) as base_url:
        (own0, cli0), started = _cpu_s(), time.perf_counter()
        messages = await run_session(project, base_url=base_url, timeout_s=120)
        wall = time.perf_counter() - started
        own1, cli1 = _cpu_s()
    result = messages[-1]
    if project.expected_output not in (getattr(result, "result", None) or ""):
        raise RuntimeError("the benchmark session did not produce the expected answer")
    return wall, own1 - own0, cli1 - cli0


def _end_to_end(workdir: Path, sessions: int) -> dict[str, Any]:
    provider, exporter = _provider()
    instrumentor = ClaudeAgentSDKInstrumentor()
    runs: dict[str, list[tuple[float, float, float]]] = {"baseline": [], "instrumented": []}
    for index in range(sessions):
        # Alternate, so that drift in machine load lands on both sides alike.
        for kind in ("baseline", "instrumented"):
            project = create_demo_project(workdir / f"{kind}-{index}")
            if kind == "instrumented":
                instrumentor.instrument(tracer_provider=provider)
            try:
                runs[kind].append(asyncio.run(_one_run(project)))
            finally:
                if kind == "instrumented":
                    instrumentor.uninstrument()
    provider.shutdown()
    wall = {k: statistics.median(r[0] for r in v) for k, v in runs.items()}
    fastest = {k: min(r[0] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r[1] for r in v) for k, v in runs.items()}
    total = {k: statistics.median(r[1] + r[2] for r in v) for k, v in runs.items()}
    tool_calls = 2  # Skill and Bash
    return {
        "sessions_each": sessions,
        "wall_s_baseline": wall["baseline"],
        "wall_s_instrumented": wall["instrumented"],
        "wall_ratio": wall["instrumented"] / wall["baseline"],
        "wall_s_runs": {k: [round(r[0], 3) for r in v] for k, v in runs.items()},
        "wall_ratio_fastest": fastest["instrumented"] / fastest["baseline"],
        "added_ms_per_session": (wall["instrumented"] - wall["baseline"]) * 1e3,
        "added_ms_per_tool_call": (wall["instrumented"] - wall["baseline"]) * 1e3 / tool_calls,
        "cpu_s_baseline": cpu["baseline"],
        "cpu_s_instrumented": cpu["instrumented"],
        "cpu_ratio": cpu["instrumented"] / cpu["baseline"] if cpu["baseline"] else float("inf"),
        "cpu_s_with_cli_baseline": total["baseline"],
        "cpu_s_with_cli_instrumented": total["instrumented"],
        "cpu_with_cli_ratio": total["instrumented"] / total["baseline"],
        "spans_exported": exporter.spans,
    }


def run_overhead_bench(
    *, sessions: int, replays: int, tool_calls: int, console: Console
) -> dict[str, Any]:
    """Run both measurements, print the report, return the figures."""
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-overhead-") as tmp:
        root = Path(tmp)
        console.print(
            f"in isolation: {replays} replayed sessions of 0 and {tool_calls} tool calls…"
        )
        isolated = _isolated(create_demo_project(root / "isolated"), replays, tool_calls)
        figures: dict[str, Any] = {
            "isolated_us_per_session": isolated.per_session_us,
            "isolated_us_per_tool_call": isolated.per_tool_call_us,
            "isolated_peak_kib_per_session": isolated.peak_kib_per_session,
            "isolated_retained_kib_after_session": isolated.retained_kib_per_session,
        }
        if sessions > 0:
            console.print(f"end to end: {sessions} demo sessions each, without and with…")
            figures.update(_end_to_end(root / "e2e", sessions))
    console.print(
        f"[bold]instrumentor work[/]: {isolated.per_session_us:.0f} CPU-µs per session + "
        f"{isolated.per_tool_call_us:.0f} CPU-µs per tool call; "
        f"peak {isolated.peak_kib_per_session:.0f} KiB per session, "
        f"{isolated.retained_kib_per_session:.1f} KiB kept after it ends"
    )
    if sessions > 0:
        console.print(
            f"[bold]end to end[/] (median of {sessions}): wall "
            f"{figures['wall_s_baseline']:.2f} s -> {figures['wall_s_instrumented']:.2f} s "
            f"(x{figures['wall_ratio']:.3f}, {figures['added_ms_per_tool_call']:+.1f} ms per "
            f"tool call); Python CPU {figures['cpu_s_baseline']:.3f} s -> "
            f"{figures['cpu_s_instrumented']:.3f} s (x{figures['cpu_ratio']:.2f}); "
            f"CPU with the CLI {figures['cpu_s_with_cli_baseline']:.2f} s -> "
            f"{figures['cpu_s_with_cli_instrumented']:.2f} s "
            f"(x{figures['cpu_with_cli_ratio']:.3f}); "
            f"fastest runs x{figures['wall_ratio_fastest']:.3f}"
        )
        for kind, walls in figures["wall_s_runs"].items():
            console.print(f"  {kind:<13} " + "  ".join(f"{w:.2f}" for w in walls) + " s")
    return figures
