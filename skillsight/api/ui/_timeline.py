"""An activation as a timeline: the decision, the internal tool calls, the integration, each
marked with the failing evaluations that cite it (by tool call, else by step).

Only evaluations that *failed* mark a step: one that did not apply, or could not score, cites
nothing that went wrong. A cited step outside the activation's timeline is listed apart with a
link to the session, so nothing an evaluator cited is lost from view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillsight.reports import ActivationDetailOut, EvaluationOut

RESULT_PREVIEW = 4000


@dataclass
class Note:
    """A failing evaluation's word on one item: the evaluator, and its finding or reason."""

    evaluator: str
    message: str
    severity: str = ""


@dataclass
class Item:
    kind: str  # decision | call | integration
    step_id: int | None
    title: str
    detail: str = ""
    arguments: Any = None
    result: str | None = None
    result_cut: bool = False
    is_error: bool = False
    duration_ms: float | None = None
    started_at: str = ""
    tool_call_id: str = ""
    notes: list[Note] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return bool(self.notes)

    @property
    def anchor(self) -> str:
        return f"call-{self.tool_call_id}" if self.tool_call_id else f"{self.kind}-{self.step_id}"


@dataclass
class Timeline:
    items: list[Item]
    outside: list[tuple[int, list[Note]]]
    """cited steps that are not on the timeline, with what cited them"""
    step_anchor: dict[int, str]
    """the first item of each step, for links to a cited step"""


def _cut(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= RESULT_PREVIEW:
        return text, False
    return text[:RESULT_PREVIEW], True


def _trigger_title(activation: ActivationDetailOut) -> str:
    trigger = activation.trigger
    if trigger == "subagent":
        return f"subagent {activation.subagent or ''} runs {activation.skill_name}".strip()
    return {
        "skill_tool": f"Skill tool call: {activation.skill_name}",
        "read_skill_md": f"reads {activation.skill_name}/SKILL.md",
        "load_skill_tool": f"load_skill({activation.skill_name})",
        "span": f"activation span: {activation.skill_name}",
        "event": f"skill_activated event: {activation.skill_name}",
    }.get(trigger, f"{trigger}: {activation.skill_name}")


def _items(activation: ActivationDetailOut) -> list[Item]:
    output, output_cut = _cut(activation.skill_output)
    items = [
        Item(
            kind="decision",
            step_id=activation.trigger_step_id,
            title=_trigger_title(activation),
            detail=activation.request if activation.request_logged else "",
            result=output,
            result_cut=output_cut,
            started_at=activation.started_at,
            tool_call_id=activation.trigger_call_id
            if activation.trigger in ("skill_tool", "read_skill_md", "load_skill_tool")
            else "",
        )
    ]
    for call in activation.tool_calls:
        result, cut = _cut(call.result)
        items.append(
            Item(
                kind="call",
                step_id=call.step_id,
                title=call.name,
                arguments=call.arguments,
                result=result,
                result_cut=cut,
                is_error=call.is_error,
                duration_ms=call.duration_ms,
                started_at=call.started_at,
                tool_call_id=call.tool_call_id,
            )
        )
    items.append(
        Item(
            kind="integration",
            step_id=activation.integration_step_id,
            title="integration: the agent's next message",
            detail=activation.integration_message or "",
        )
    )
    return items


def _notes(evaluation: EvaluationOut) -> list[tuple[str | None, int | None, Note]]:
    """(tool call, step, note) for each place a failing evaluation cites."""
    out: list[tuple[str | None, int | None, Note]] = []
    for finding in evaluation.findings:
        note = Note(evaluation.evaluator, finding.message or evaluation.reason, finding.severity)
        out.append((finding.tool_call_id, finding.step_id, note))
    cited_calls = {f.tool_call_id for f in evaluation.findings if f.tool_call_id}
    cited_steps = {f.step_id for f in evaluation.findings if f.step_id is not None}
    for call in evaluation.evidence.tool_call_ids:
        if call not in cited_calls:
            out.append((call, None, Note(evaluation.evaluator, evaluation.reason)))
    for step in evaluation.evidence.step_ids:
        if step not in cited_steps and not evaluation.evidence.tool_call_ids:
            out.append((None, step, Note(evaluation.evaluator, evaluation.reason)))
    return out


def timeline(
    activation: ActivationDetailOut, evaluations: Sequence[EvaluationOut] | None = None
) -> Timeline:
    items = _items(activation)
    by_call = {item.tool_call_id: item for item in items if item.tool_call_id}
    by_step: dict[int, Item] = {}
    for item in items:
        if item.step_id is not None:
            by_step.setdefault(item.step_id, item)
    outside: dict[int, list[Note]] = {}
    for evaluation in evaluations if evaluations is not None else activation.evaluations:
        if evaluation.passed is not False:
            continue
        for call, step, note in _notes(evaluation):
            target = by_call.get(call or "") or (by_step.get(step) if step is not None else None)
            if target is not None:
                if note not in target.notes:
                    target.notes.append(note)
            elif step is not None:
                outside.setdefault(step, []).append(note)
    anchors = {step: item.anchor for step, item in by_step.items()}
    return Timeline(items, sorted(outside.items()), anchors)
