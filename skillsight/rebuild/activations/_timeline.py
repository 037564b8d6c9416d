"""The agent context as a sequence of items (user messages, agent messages, tool calls, loose
skill events), and which of them start a skill activation."""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skillsight.rebuild.trajectories import atif
from skillsight.store.records import Trigger, iso

_SKILL_MD = re.compile(r"(?:^|[/\\])skills[/\\]([^/\\]+)[/\\]SKILL\.md$", re.IGNORECASE)
TOOL_TRIGGERS = ("skill_tool", "read_skill_md", "load_skill_tool")
LOAD_SKILL_TOOLS = frozenset({"load_skill", "loadSkill", "LoadSkill"})


@dataclass(eq=False, slots=True)
class Item:
    """One thing in an agent context, in order: a user message, an agent message (before its
    step's calls), a tool call with its result, or a Claude Code event placed by its time."""

    kind: str  # "user" | "message" | "call" | "event"
    step: atif.Step
    call: atif.ToolCall | None = None
    result: atif.ObservationResult | None = None
    event: Mapping[str, Any] | None = None
    time: str = ""
    index: int = 0

    @property
    def final(self) -> bool:
        return self.kind == "message" and not self.step.tool_calls


@dataclass
class Start:
    """An item that starts an activation of ``skill``."""

    skill: str
    trigger: str
    item: Item
    index: int
    nested: bool = False
    span: Mapping[str, Any] | None = None

    @property
    def loads(self) -> bool:
        """Whether ``item`` is the call that loaded the skill (else a span or event started it)."""
        if self.item.kind != "call" or self.item.call is None:
            return False
        return self.span is None or start_of(self.item.call) is not None


@dataclass
class Extent:
    """An activation being bounded: its start, what it holds so far, and why it ended."""

    start: Start
    parent: Extent | None
    calls: list[Item] = field(default_factory=list)
    messages: list[Item] = field(default_factory=list)
    last_index: int = -1
    integration: Item | None = None
    reason: str = "end"


def items_of(trajectory: atif.Trajectory) -> list[Item]:
    items: list[Item] = []
    for step in trajectory.steps:
        _add_items(step, items)
    loose = (trajectory.extra or {}).get("skill_events", [])
    for event in sorted(loose, key=lambda e: int(e.get("time_ns", 0))):
        when = iso(int(event.get("time_ns", 0)))
        position = next(
            (i for i, item in enumerate(items) if item.time and item.time > when), len(items)
        )
        anchor = items[position - 1].step if position else trajectory.steps[0]
        items.insert(position, Item("event", anchor, event=event, time=when))
    for index, item in enumerate(items):
        item.index = index
    return items


def _add_items(step: atif.Step, items: list[Item]) -> None:
    """The items of one step (each step's are its own: its message, then its calls)."""
    if step.source == "user":
        items.append(Item("user", step, time=step.timestamp or ""))
        return
    if step.source != "agent":
        return
    logged = (step.extra or {}).get("message_logged", True)
    if step.message or not logged or not step.tool_calls:
        items.append(Item("message", step, time=step.timestamp or ""))
    results = {r.source_call_id: r for r in (step.observation.results if step.observation else ())}
    for call in step.tool_calls or ():
        started = str((call.extra or {}).get("started_at", step.timestamp or ""))
        items.append(Item("call", step, call, results.get(call.tool_call_id), time=started))


@dataclass(frozen=True, eq=False, repr=False)
class Timeline:
    """An agent context's items, the starts among them and the calls that delegated to a
    subagent, as one extraction derived them from ``steps``. An extraction of the same steps
    followed by more (a session extended by new prompts) extends it rather than deriving them
    all again (:func:`timeline_of`); Items and Starts are not changed once made."""

    steps: tuple[atif.Step, ...]
    items: list[Item]
    starts: Mapping[int, Start]
    delegations: tuple[int, ...]
    """Indices of the call items whose result refers to a subagent trajectory."""
    extendable: bool
    """Derived without loose skill events or activation spans (whose places depend on every
    item), so that each step's items, and the starts among them, are the step's own."""


def timeline_of(
    trajectory: atif.Trajectory,
    spans: Mapping[str, Mapping[str, Any]],
    previous: Timeline | None = None,
) -> Timeline:
    """The context's timeline; ``previous``'s items and starts are taken as they are when its
    steps are this trajectory's first ones (the same step objects) and neither timeline has
    loose skill events or activation spans, and only the steps after them are read."""
    steps = tuple(trajectory.steps)
    loose = bool((trajectory.extra or {}).get("skill_events"))
    extendable = not loose and not spans
    count = len(previous.steps) if previous is not None else 0
    if (
        previous is None
        or not extendable
        or not previous.extendable
        or count > len(steps)
        or not all(map(operator.is_, previous.steps, steps[:count]))
    ):
        items = items_of(trajectory)
        return Timeline(steps, items, find_starts(items, spans), _delegations(items, 0), extendable)
    items = list(previous.items)
    first = len(items)
    for step in steps[count:]:
        _add_items(step, items)
    for index in range(first, len(items)):
        items[index].index = index
    starts = dict(previous.starts)
    starts.update(find_starts(items, spans, first))
    return Timeline(
        steps, items, starts, previous.delegations + _delegations(items, first), extendable
    )


def _delegations(items: list[Item], first: int) -> tuple[int, ...]:
    found: list[int] = []
    for index in range(first, len(items)):
        result = items[index].result
        if items[index].call is not None and result is not None and result.subagent_trajectory_ref:
            found.append(index)
    return tuple(found)


def _arg(call: atif.ToolCall, *keys: str) -> str:
    for key in keys:
        value = call.arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def start_of(call: atif.ToolCall) -> tuple[str, Trigger] | None:
    """(skill, trigger) when this call loads a skill."""
    extra = call.extra or {}
    if call.function_name == "Skill":
        skill = _arg(call, "skill", "command", "name") or str(extra.get("skill", ""))
        return (skill.lstrip("/"), "skill_tool") if skill else None
    if call.function_name in LOAD_SKILL_TOOLS:
        skill = _arg(call, "name", "skill", "skill_name") or str(extra.get("skill", ""))
        return (skill, "load_skill_tool") if skill else None
    if call.function_name == "Read":
        match = _SKILL_MD.search(_arg(call, "file_path", "path"))
        return (match.group(1), "read_skill_md") if match else None
    return None


def find_starts(
    items: list[Item], spans: Mapping[str, Mapping[str, Any]], first: int = 0
) -> dict[int, Start]:
    """The items (from ``items[first]`` on) that start an activation, by index."""
    starts: dict[int, Start] = {}
    for index in range(first, len(items)):
        item = items[index]
        if item.kind == "event" and item.event is not None:
            skill = str(item.event.get("skill_name", ""))
            starts[index] = Start(skill, "event", item, index)
        elif item.kind == "call" and item.call is not None:
            if (item.call.extra or {}).get("activation_span_id") in spans:
                continue  # inside an explicit activation: its span says everything
            found = start_of(item.call)
            if found is None:
                continue
            # Claude Code's invocation_trigger "nested-skill" only says another skill was still
            # marked active; it does not tell composition from a sequence, so it is not nesting.
            starts[index] = Start(found[0], found[1], item, index)
    return starts
