"""The failure text: what the evaluators know about one failing activation, in a few lines.

Raw transcripts cluster by surface (length, how often each tool was called); a text shaped by the
skill's contract clusters by cause. So a failing activation is described by its skill, each
failing evaluator with its label and reason, each finding's kind and message with the call it
cites, the tool-call signature of the internal trajectory and the first line of each tool error —
every line passed through :func:`~skillsight.clustering._normalize.normalize` so that two
instances of one pattern read alike. The cause comes first: the embedding model reads at most
256 word pieces. The signature names tools only (a call's arguments are cited where a finding
points at it) and an error is its message's last line, where a traceback puts the exception:
measured on the recorded scenarios, arguments and whole tracebacks in these two lines made
instances of one pattern read less alike than two different patterns did (docs/clusters.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillsight.clustering._normalize import normalize
from skillsight.evaluators import Evaluation, Finding
from skillsight.store.records import Activation, ToolCall

# Cluster severities, the most urgent first; a failing security evaluation outranks the rest.
SEVERITY_ORDER: tuple[str, ...] = ("critical", "high", "medium", "low")
_FINDING_SEVERITY = {"high": "high", "medium": "medium", "low": "low", "info": "low"}
_SECURITY = "security"

_MAX_CHARS = 1200
_MAX_FINDINGS = 4  # per evaluation
_MAX_ERRORS = 2
_MAX_ARGUMENT = 80
# The argument that says what a call did, per tool (the first one present).
_ARGUMENT_KEYS = ("command", "skill", "file_path", "path", "pattern", "url", "query", "prompt")


@dataclass(frozen=True, slots=True)
class FailureText:
    """A failing activation as the clustering sees it."""

    text: str
    evaluators: tuple[str, ...]
    """The failing evaluators, by name."""
    kinds: tuple[str, ...]
    """``evaluator:kind`` of every finding of the failing evaluations, first seen first."""
    severity: str
    """One of :data:`SEVERITY_ORDER`."""


def failure_text(activation: Activation, failed: Sequence[Evaluation]) -> FailureText:
    """Describe ``activation`` by its failing evaluations (``failed``, any order)."""
    ordered = sorted(failed, key=lambda e: (e.evaluator != _SECURITY, e.evaluator))
    calls = {c.tool_call_id: c for c in activation.tool_calls}
    by_step = {c.step_id: c for c in activation.tool_calls}
    lines = [
        f"{activation.skill_name} fails " + ", ".join(f"{e.evaluator} ({e.label})" for e in ordered)
    ]
    kinds: dict[str, None] = {}
    for evaluation in ordered:
        lines.append(f"{evaluation.evaluator}: {normalize(evaluation.reason)}")
        seen: set[str] = set()
        for finding in evaluation.findings:
            kinds[f"{evaluation.evaluator}:{finding.kind}"] = None
            line = f"{finding.kind}: {normalize(finding.message)}"
            cited = _cited(finding, activation, calls, by_step)
            if cited:
                line += f" (at {cited})"
            if line not in seen and len(seen) < _MAX_FINDINGS:
                seen.add(line)
                lines.append(line)
    if activation.tool_calls:
        lines.append("calls: " + " → ".join(_signature(activation.tool_calls)))
    errors = [c for c in activation.tool_calls if c.is_error][:_MAX_ERRORS]
    lines += [f"error: {c.name}: {normalize(_error_line(c.result))}" for c in errors]
    text = "\n".join(lines)
    return FailureText(
        text=text[:_MAX_CHARS],
        evaluators=tuple(sorted({e.evaluator for e in failed})),
        kinds=tuple(kinds),
        severity=severity_of(failed),
    )


def severity_of(failed: Sequence[Evaluation]) -> str:
    """``critical`` when security failed, else the highest severity among the findings
    (``info`` counts as ``low``), ``medium`` for a failure that reports no finding."""
    if any(e.evaluator == _SECURITY for e in failed):
        return "critical"
    levels = {_FINDING_SEVERITY.get(f.severity, "medium") for e in failed for f in e.findings}
    if not levels:
        return "medium"
    return min(levels, key=SEVERITY_ORDER.index)


def _cited(
    finding: Finding,
    activation: Activation,
    calls: dict[str, ToolCall],
    by_step: dict[int, ToolCall],
) -> str:
    call = calls.get(finding.tool_call_id or "") or (
        by_step.get(finding.step_id) if finding.step_id is not None else None
    )
    if call is not None:
        return _call(call)
    if finding.step_id is not None and finding.step_id == activation.integration_step_id:
        return "the answer"
    if finding.step_id is not None and finding.step_id == activation.trigger_step_id:
        return "the decision"
    return ""


def _call(call: ToolCall) -> str:
    argument = _argument(call.arguments)
    if not argument:
        return call.name
    return f"{call.name} {normalize(argument)[:_MAX_ARGUMENT]}"


def _argument(arguments: Any) -> str:
    if isinstance(arguments, dict):
        for key in _ARGUMENT_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
        return ""
    if isinstance(arguments, str):
        return arguments
    return "" if arguments is None else json.dumps(arguments)[:_MAX_ARGUMENT]


def _signature(calls: Sequence[ToolCall]) -> list[str]:
    """Each call as its tool, ``(error)`` when it failed; repeats in a row collapse into
    ``x<n>``."""
    out: list[str] = []
    previous, repeats = "", 0
    for call in calls:
        current = call.name + (" (error)" if call.is_error else "")
        if current == previous:
            repeats += 1
            continue
        if repeats:
            out[-1] += " x<n>"
        out.append(current)
        previous, repeats = current, 0
    if repeats:
        out[-1] += " x<n>"
    return out


def _error_line(text: str | None) -> str:
    """The line of an error output that says what went wrong: the last one (a traceback ends
    with its exception)."""
    if not text:
        return "(no output logged)"
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:200]
    return "(empty)"


__all__ = ["SEVERITY_ORDER", "FailureText", "failure_text", "severity_of"]
