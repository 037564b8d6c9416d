"""The input mapping: the parts of an activation a rubric's prompt shows, fenced and cut to fit.

Truncation policy (``docs/judges.md`` states it for users):

1. Each text is cut to its own cap, keeping its head and tail (:class:`Limits`).
2. If the shown steps still exceed the prompt budget, whole internal steps are left out from the
   middle, never these: the first two and the last two internal steps, every step whose call
   failed, and every step that ran one of the skill's scripts; the decision and integration
   steps are separate sections and always shown. Steps left out are named in one line, and a
   judge cannot earn credit by citing them.
3. If the kept steps alone still exceed the budget, the caps are halved (at most three times).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import groupby

from skillsight.evaluators import EvaluationContext
from skillsight.evaluators.judges._context import JudgeContext
from skillsight.evaluators.judges._fence import clip, fence
from skillsight.evaluators.judges._rubric import Rubric
from skillsight.rebuild.trajectories.atif import Step, Trajectory
from skillsight.store.records import Activation, ToolCall

KEEP_AT_ENDS = 2


@dataclass(frozen=True, slots=True)
class Limits:
    """Characters kept of each kind of text."""

    request: int = 4000
    description: int = 600
    procedure: int = 4000
    arguments: int = 1500
    result: int = 2000
    message: int = 4000

    def halved(self) -> Limits:
        return Limits(*(max(200, getattr(self, f) // 2) for f in self.__slots__))


@dataclass(frozen=True, slots=True)
class RenderedInputs:
    text: str
    """The rubric's sections, fenced (boundary still a placeholder)."""
    shown_steps: frozenset[int]
    """The step ids a judge may cite."""
    elided_steps: tuple[int, ...]


def render_inputs(
    rubric: Rubric,
    activation: Activation,
    context: EvaluationContext,
    budget: int,
    limits: Limits = Limits(),
) -> RenderedInputs:
    for _ in range(4):
        rendered = _render(rubric, activation, context, budget, limits)
        if len(rendered.text) <= budget:
            break
        limits = limits.halved()
    return rendered


def _render(
    rubric: Rubric,
    activation: Activation,
    context: EvaluationContext,
    budget: int,
    limits: Limits,
) -> RenderedInputs:
    fixed: dict[str, str] = {}
    shown: set[int] = set()
    for name in rubric.inputs:
        if name == "request":
            fixed[name] = "## The user's request\n" + fence(
                clip(activation.request, limits.request), "request"
            )
        elif name == "catalogue":
            fixed[name] = _catalogue(activation, context, limits)
        elif name == "skill":
            fixed[name] = _skill(activation, context, limits)
        elif name == "procedure":
            fixed[name] = _procedure(activation, context, limits)
        elif name == "decision" and activation.trigger_step_id is not None:
            fixed[name] = _decision(activation, context, limits)
            shown.add(activation.trigger_step_id)
        elif (
            name == "integration"
            and activation.integration_message is not None
            and activation.integration_step_id is not None
        ):
            fixed[name] = (
                f"## The next agent message: step {activation.integration_step_id}\n"
                + fence(clip(activation.integration_message, limits.message), "agent message")
            )
            shown.add(activation.integration_step_id)
    elided: tuple[int, ...] = ()
    if "internal" in rubric.inputs:
        steps = _internal_steps(activation, limits)
        room = budget - sum(len(text) + 2 for text in fixed.values())
        kept = _keep(steps, activation, context, room)
        elided = tuple(step for step, _ in steps if step not in kept)
        shown |= kept
        body = [text for step, text in steps if step in kept]
        if elided:
            body.append(f"(steps {', '.join(map(str, elided))} not shown: left out for length)")
        if not steps:
            body.append("(no steps: the skill made no tool calls)")
        fixed["internal"] = "## Steps while the skill was active\n" + "\n\n".join(body)
    text = "\n\n".join(fixed[name] for name in rubric.inputs if name in fixed)
    return RenderedInputs(text, frozenset(shown), elided)


def _catalogue(activation: Activation, context: EvaluationContext, limits: Limits) -> str:
    visible = activation.visible_skills or list(context.catalogue)
    title = "## Skills the agent could see"
    if not visible:
        own = activation.contract.description if activation.contract else ""
        note = "(the list was not recorded; judge from the request and the activated skill)"
        if own:
            return f"{title}\n{note}\n" + fence(
                f"{activation.skill_name}: {clip(own, limits.description)}", "skill description"
            )
        return f"{title}\n{note}"
    lines = [f"- {s.name}: {clip(s.description, limits.description)}" for s in visible]
    return f"{title}\n" + fence("\n".join(lines), "skill catalogue")


def _skill(activation: Activation, context: EvaluationContext, limits: Limits) -> str:
    manifest = context.manifest
    contract = activation.contract
    description = (contract.description if contract else "") or (
        manifest.description if manifest else ""
    )
    allowed = contract.allowed_tools if contract and contract.allowed_tools is not None else None
    if allowed is None and manifest is not None:
        allowed = manifest.allowed_tools
    tools = " ".join(allowed) if allowed is not None else "(none declared: any tool is allowed)"
    described = (
        fence(clip(description, limits.description), "skill description")
        if description
        else "(description not recorded)"
    )
    return (
        f"## The skill `{activation.skill_name}`\nallowed-tools: {tools}\ndescription:\n"
        + described
    )


def _procedure(activation: Activation, context: EvaluationContext, limits: Limits) -> str:
    # The loading call's result is the SKILL.md text the agent read, when the manifest is not at
    # hand (Claude Code's Skill tool returns it).
    body = context.manifest.body if context.manifest else (activation.skill_output or "")
    title = "## The skill's procedure (its SKILL.md)"
    if not body.strip():
        return f"{title}\n(not available)"
    return f"{title}\n" + fence(clip(body, limits.procedure), "SKILL.md")


def _decision(activation: Activation, context: EvaluationContext, limits: Limits) -> str:
    step = activation.trigger_step_id
    lines = [
        f"## The decision: step {step}",
        f"The agent activated the skill `{activation.skill_name}` "
        f"(trigger {activation.trigger}, call {activation.trigger_call_id}).",
    ]
    said = _decision_message(activation, context)
    if said:
        lines.append("What the agent said at this step:")
        lines.append(fence(clip(said, limits.message), "agent message"))
    return "\n".join(lines)


def _decision_message(activation: Activation, context: EvaluationContext) -> str:
    trajectory = context.trajectory if isinstance(context, JudgeContext) else None
    if trajectory is None or activation.trigger_step_id is None:
        return ""
    found = _find_step(trajectory, activation.decision_trajectory_id, activation.trigger_step_id)
    return found.message if found is not None else ""


def _find_step(trajectory: Trajectory, trajectory_id: str, step_id: int) -> Step | None:
    candidates: list[Trajectory] = [trajectory, *(trajectory.subagent_trajectories or ())]
    for candidate in candidates:
        if trajectory_id and trajectory_id not in (candidate.trajectory_id, candidate.session_id):
            continue
        if 1 <= step_id <= len(candidate.steps):
            found: Step = candidate.steps[step_id - 1]
            return found
    return None


def _internal_steps(activation: Activation, limits: Limits) -> list[tuple[int, str]]:
    out = []
    for step_id, calls in groupby(activation.tool_calls, key=lambda c: c.step_id):
        parts = [f"### step {step_id}"]
        parts.extend(_call(call, limits) for call in calls)
        out.append((step_id, "\n".join(parts)))
    return out


def _call(call: ToolCall, limits: Limits) -> str:
    status = "failed" if call.is_error else "ok"
    if call.arguments is None:
        arguments = "(not logged)"
    else:
        raw = (
            call.arguments
            if isinstance(call.arguments, str)
            else json.dumps(call.arguments, ensure_ascii=False)
        )
        arguments = fence(clip(raw, limits.arguments), "tool arguments")
    result = (
        "(not logged)"
        if call.result is None
        else fence(clip(call.result, limits.result), "tool result")
    )
    return (
        f"call {call.tool_call_id}: tool `{call.name}` ({status})\narguments:\n{arguments}\n"
        f"result:\n{result}"
    )


def _keep(
    steps: list[tuple[int, str]],
    activation: Activation,
    context: EvaluationContext,
    room: int,
) -> set[int]:
    if sum(len(text) + 2 for _, text in steps) <= room:
        return {step for step, _ in steps}
    ids = [step for step, _ in steps]
    must = set(ids[:KEEP_AT_ENDS]) | set(ids[-KEEP_AT_ENDS:])
    scripts = _script_markers(activation, context)
    for call in activation.tool_calls:
        text = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else ""
        if call.is_error or any(marker in text for marker in scripts):
            must.add(call.step_id)
    size = {step: len(text) + 2 for step, text in steps}
    used = sum(size[step] for step in must) + 80  # the "not shown" line
    kept = set(must)
    for step in ids:
        if step not in kept and used + size[step] <= room:
            kept.add(step)
            used += size[step]
    return kept


def _script_markers(activation: Activation, context: EvaluationContext) -> set[str]:
    markers = {f"skills/{activation.skill_name}/"}
    if context.manifest is not None:
        markers |= {script.rsplit("/", 1)[-1] for script in context.manifest.scripts}
    return markers
