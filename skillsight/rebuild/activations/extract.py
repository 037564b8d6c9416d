"""Skill activations from a session's ATIF trajectory: one algorithm for every source.

DESIGN.md, *Skill activations*, and docs/activations.md give the rules; in short, per agent
context (the main agent, each subagent run):

- **start**: a ``Skill`` call (input ``skill``, older CLIs ``command``), a ``Read`` of
  ``…/skills/<name>/SKILL.md``, a ``load_skill`` call, an explicit activation span, or a Claude
  Code ``skill_activated`` event no Skill call accounts for. Inside a subagent every activation
  is triggered by the delegating ``Task``/``Agent`` call (trigger ``subagent``).
- **internal trajectory**: the calls and messages after the start, until the next start (a
  start marked nested keeps its parent open), the end of the agent's turn (a message with no
  tool calls), a new user message, or the end of the context. An explicit span bounds exactly:
  its descendants, nothing else.
- **integration**: the first agent message after the internal trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from skillsight.rebuild.activations._bounds import explicit_activations, inferred_activations
from skillsight.rebuild.activations._record import (
    Context,
    build_activation,
    request_before,
    visible_skills,
)
from skillsight.rebuild.activations._timeline import (
    Extent,
    Item,
    Start,
    Timeline,
    items_of,
    timeline_of,
)
from skillsight.rebuild.catalogue import Catalogue
from skillsight.rebuild.trajectories import atif
from skillsight.store.records import Activation, SkillContract, activation_id

__all__ = ["Extraction", "Timeline", "extract", "extract_activations"]


def extract_activations(
    trajectory: atif.Trajectory,
    *,
    project_id: str = "default",
    catalogue: Mapping[str, SkillContract] | None = None,
    kept: tuple[list[Activation], int] | None = None,
) -> list[Activation]:
    """Every activation in the session, ordered by start (nested ones after their parent).

    ``catalogue``: a :class:`Catalogue`, or a plain ``{name: contract}`` (one version per
    skill); each activation is joined to it as :meth:`Catalogue.contract` says. ``kept``: the
    main agent's activations that start before a user step, as an extraction of the same
    steps with the same catalogue and workspace gave them, and that step's id; only those that
    start from there on are built (a session extended by new prompts).
    """
    return extract(trajectory, project_id=project_id, catalogue=catalogue, kept=kept).activations


class Extraction(NamedTuple):
    activations: list[Activation]
    timeline: Timeline
    """The main agent context's items and starts, which the extraction of this trajectory
    extended by more steps extends (:func:`extract`)."""


def extract(
    trajectory: atif.Trajectory,
    *,
    project_id: str = "default",
    catalogue: Mapping[str, SkillContract] | None = None,
    kept: tuple[list[Activation], int] | None = None,
    timeline: Timeline | None = None,
) -> Extraction:
    """:func:`extract_activations`, with the main context's timeline. ``timeline``: the one an
    extraction of this trajectory's first steps made, so that only the steps after those are
    read (:func:`timeline_of`); with ``kept`` as well, activations are bounded only from the
    kept user step on, so an extension's extraction costs what its new prompt holds."""
    context = Context(
        trajectory=trajectory,
        session_id=trajectory.session_id or trajectory.trajectory_id or "",
        project_id=project_id,
        catalogue=Catalogue.of(catalogue),
        visible=visible_skills(trajectory),
        agent=trajectory.agent.name,
        workspace=str((trajectory.extra or {}).get("workspace") or ""),
    )
    made = _walk(context, kept, timeline)
    return Extraction(context.out, made)


def _walk(
    context: Context,
    kept: tuple[list[Activation], int] | None = None,
    previous: Timeline | None = None,
) -> Timeline:
    trajectory = context.trajectory
    spans = {s["span_id"]: s for s in (trajectory.extra or {}).get("skill_activations", [])}
    timeline = timeline_of(trajectory, spans, previous)
    items, starts = timeline.items, timeline.starts
    claimed: set[int] = set()
    for activation in explicit_activations(context, items, spans, claimed):
        context.out.append(activation)
    if claimed:  # a loading call a span accounts for starts nothing else
        starts = {index: start for index, start in starts.items() if index not in claimed}
    build_from = 0
    if kept is not None and not spans:
        held, user_step = kept
        found = _user_item(timeline, user_step)
        if found is not None:
            build_from = found
            context.out.extend(held)
    for activation in inferred_activations(context, items, starts, build_from=build_from):
        context.out.append(activation)
    subs = {s.trajectory_id: s for s in trajectory.subagent_trajectories or ()}
    for index in timeline.delegations:
        item = items[index]
        assert item.call is not None and item.result is not None
        for ref in item.result.subagent_trajectory_ref or ():
            sub = subs.get(ref.trajectory_id or "")
            if sub is None:
                continue
            child = Context(
                trajectory=sub,
                session_id=context.session_id,
                project_id=context.project_id,
                catalogue=context.catalogue,
                visible=visible_skills(sub) or context.visible,
                agent=context.agent,
                subagent=sub.agent.name,
                decision=item.call,
                workspace=context.workspace,
            )
            _walk(child)
            if not child.out:
                preloaded = _preloaded(child)
                if preloaded is not None:
                    child.out.append(preloaded)
            integration = _next_message(items, index)
            context.out.extend(
                _delegated(activation, context, item, integration) for activation in child.out
            )
    return timeline


def _user_item(timeline: Timeline, user_step: int) -> int | None:
    """The index of the first item of step ``user_step``. An extendable timeline's items are
    in step order (no loose events placed among them), so it is looked for from the end,
    where an extension's kept user step is."""
    items = timeline.items
    if not timeline.extendable:
        return next((i.index for i in items if i.step.step_id == user_step), None)
    found = None
    for index in range(len(items) - 1, -1, -1):
        step_id = items[index].step.step_id
        if step_id < user_step:
            break
        if step_id == user_step:
            found = index
    return found


def _next_message(items: list[Item], index: int) -> Item | None:
    """The first agent message with text (or unlogged text) after ``items[index]``."""
    for item in items[index + 1 :]:
        if item.kind == "user":
            return None
        logged = (item.step.extra or {}).get("message_logged", True) is not False
        later = item.step.step_id > items[index].step.step_id
        if item.kind == "message" and later and (item.step.message or not logged):
            return item
    return None


def _delegated(
    activation: Activation, parent: Context, task: Item, integration: Item | None
) -> Activation:
    """An activation inside a subagent, seen from the agent that delegated to it.

    The decision is the ``Task``/``Agent`` call; the integration is what the delegating agent
    said after the subagent returned. Activations already delegated (a subagent's subagent)
    keep their own decision.
    """
    if activation.trigger == "subagent" and activation.decision_trajectory_id != (
        activation.trajectory_id
    ):
        return activation
    assert task.call is not None
    load = activation.load_call_id
    request, logged, request_step = request_before(parent, task.step)
    text = None
    if integration is not None:
        logged = (integration.step.extra or {}).get("message_logged", True) is not False
        text = integration.step.message if logged else None
    return activation.model_copy(
        update={
            "activation_id": activation_id(
                activation.trace_id or activation.session_id, load or task.call.tool_call_id
            ),
            "trigger": "subagent",
            "trigger_call_id": task.call.tool_call_id,
            "trigger_step_id": task.step.step_id,
            "decision_trajectory_id": parent.trajectory.trajectory_id or "",
            "integration_message": text,
            "integration_step_id": integration.step.step_id if integration else None,
            # the user's request, which the delegating agent decided on (not the task prompt)
            "request": request,
            "request_logged": logged,
            "request_step_id": request_step,
        }
    )


def _preloaded(context: Context) -> Activation | None:
    """A subagent that ran with a skill but never loaded one: its definition preloaded it."""
    skills = [
        str((s.extra or {}).get("active_skill"))
        for s in context.trajectory.steps
        if (s.extra or {}).get("active_skill")
    ]
    if not skills or context.decision is None or not context.trajectory.steps:
        return None
    items = items_of(context.trajectory)
    first = items[0]
    start = Start(skills[0], "subagent", first, 0)
    current = Extent(start, None)
    current.calls = [i for i in items if i.kind == "call"]
    current.messages = [i for i in items if i.kind == "message" and not i.final]
    current.integration = next((i for i in reversed(items) if i.final), None)
    current.reason = "turn_end" if current.integration else "end"
    activation = build_activation(context, items, current, {})
    return activation.model_copy(update={"mechanism": "preloaded", "load_call_id": ""})
