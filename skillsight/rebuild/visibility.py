"""What each telemetry source leaves out, counted over the sessions the finalizer rebuilds.

A verdict can only rest on what was exported. Claude Code exports no tool output without
``OTEL_LOG_TOOL_CONTENT=1``, no tool input without ``OTEL_LOG_TOOL_DETAILS=1``, no prompt or
response text without ``OTEL_LOG_USER_PROMPTS=1``, and no working directory unless
``OTEL_RESOURCE_ATTRIBUTES`` names one; a gateway may drop the ``request-id`` header. The
evaluators say so per verdict (``unseen``); this says it per source, in ``/healthz``
(``rebuild.sources``), so the person who set the agent up sees it without reading a verdict.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel

from skillsight.rebuild.trajectories import atif

__all__ = ["GAPS", "SourceVisibility", "Visibility", "gaps_of"]

# The calls whose output no source exports anyway (a skill's body, a subagent's report come
# through other channels): they say nothing about whether tool content is on.
_NO_OUTPUT_EXPECTED = frozenset({"Skill", "Task", "Agent"})

GAPS: dict[str, str] = {
    "logs": "sessions arrive with spans but no log records (Claude Code: OTEL_LOGS_EXPORTER=otlp; "
    "when it is set, the agent exited before they were sent, as Claude Code allows its "
    "telemetry 2 s at exit, or they could not reach the collector)",
    "tool_output": "sessions arrive without tool output (Claude Code: OTEL_LOG_TOOL_CONTENT=1)",
    "tool_input": "sessions arrive without tool inputs (Claude Code: OTEL_LOG_TOOL_DETAILS=1)",
    "prompts": "sessions arrive without prompt or response text "
    "(Claude Code: OTEL_LOG_USER_PROMPTS=1)",
    "workspace": "sessions arrive without a working directory "
    "(OTEL_RESOURCE_ATTRIBUTES=process.working_directory=<dir>)",
    "request_id": "model requests arrive without a request id (a gateway drops the header; "
    "spans and events are paired by order instead)",
}
"""Each gap a session may show, and what to set to close it."""


def _trajectories(trajectory: atif.Trajectory) -> Iterator[atif.Trajectory]:
    yield trajectory
    for sub in trajectory.subagent_trajectories or ():
        yield from _trajectories(sub)


def gaps_of(trajectory: atif.Trajectory) -> set[str]:
    """The gaps (keys of :data:`GAPS`) one rebuilt session shows."""
    gaps: set[str] = set()
    outputs_expected = outputs_seen = 0
    agent_steps = with_request_id = 0
    for part in _trajectories(trajectory):
        for step in part.steps:
            extra = step.extra or {}
            if extra.get("message_logged") is False and step.source in ("user", "agent"):
                gaps.add("prompts")
            if step.source == "agent" and extra.get("span_id"):
                agent_steps += 1
                with_request_id += bool(extra.get("request_id"))
            results = {
                r.source_call_id: r for r in (step.observation.results if step.observation else ())
            }
            for call in step.tool_calls or ():
                if (call.extra or {}).get("arguments_logged") is False:
                    gaps.add("tool_input")
                if call.function_name in _NO_OUTPUT_EXPECTED:
                    continue
                outputs_expected += 1
                result = results.get(call.tool_call_id)
                if result is not None and (result.extra or {}).get("output_logged") is not False:
                    outputs_seen += 1
    if outputs_expected and not outputs_seen:
        gaps.add("tool_output")
    extra = trajectory.extra or {}
    if not extra.get("workspace") and outputs_expected:
        gaps.add("workspace")
    if extra.get("source_convention") == "claude_code" and agent_steps and not with_request_id:
        gaps.add("request_id")
    if extra.get("logs_received") is False:
        # texts and tool inputs travel in the log records: their settings may well be on
        gaps = (gaps - {"prompts", "tool_input"}) | {"logs"}
    return gaps


@dataclass
class SourceVisibility:
    """One source's sessions, and how many of them showed each gap."""

    sessions: int = 0
    gaps: dict[str, int] = field(default_factory=dict)
    last_session: str = ""
    """The last session that showed a gap."""

    def to_json(self) -> dict[str, object]:
        return {
            "sessions": self.sessions,
            **{f"without_{gap}": self.gaps.get(gap, 0) for gap in GAPS},
            "last_session_with_gaps": self.last_session,
            "advice": [GAPS[gap] for gap in GAPS if self.gaps.get(gap)],
        }


class Visibility:
    """Per source convention (``claude_code``, ``openinference``, …), what the recently
    rebuilt sessions lacked; a session rebuilt again (late rows) counts once, as last seen."""

    def __init__(self, window: int = 10_000) -> None:
        self.window = window
        self._sessions: OrderedDict[tuple[str, str], tuple[str, frozenset[str]]] = OrderedDict()

    def observe(self, project_id: str, trajectory: BaseModel) -> None:
        if not isinstance(trajectory, atif.Trajectory):
            return
        extra = trajectory.extra or {}
        source = str(extra.get("source_convention") or "unknown")
        key = (project_id, trajectory.session_id or trajectory.trajectory_id or "")
        self._sessions.pop(key, None)
        self._sessions[key] = (source, frozenset(gaps_of(trajectory)))
        while len(self._sessions) > self.window:
            self._sessions.popitem(last=False)

    def sources(self) -> dict[str, SourceVisibility]:
        out: dict[str, SourceVisibility] = {}
        for (_, session), (source, gaps) in self._sessions.items():
            seen = out.setdefault(source, SourceVisibility())
            seen.sessions += 1
            for gap in gaps:
                seen.gaps[gap] = seen.gaps.get(gap, 0) + 1
            if gaps:
                seen.last_session = session
        return out

    def to_json(self) -> dict[str, object]:
        return {name: seen.to_json() for name, seen in sorted(self.sources().items())}
