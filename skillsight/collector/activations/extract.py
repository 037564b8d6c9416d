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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from skillsight.collector.activations.model import (
    Activation,
    SkillContract,
    Tokens,
    ToolCall,
    Trigger,
    VisibleSkill,
    activation_id,
)
from skillsight.collector.trajectories import atif

_SKILL_MD = re.compile(r"(?:^|[/\\])skills[/\\]([^/\\]+)[/\\]SKILL\.md$", re.IGNORECASE)
_TOOL_TRIGGERS = ("skill_tool", "read_skill_md", "load_skill_tool")
LOAD_SKILL_TOOLS = frozenset({"load_skill", "loadSkill", "LoadSkill"})
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})


@dataclass(eq=False)
class _Item:
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
class _Start:
    skill: str
    trigger: str
    item: _Item
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
class _Open:
    start: _Start
    parent: _Open | None
    calls: list[_Item] = field(default_factory=list)
    messages: list[_Item] = field(default_factory=list)
    last_index: int = -1
    integration: _Item | None = None
    reason: str = "end"


@dataclass
class _Context:
    trajectory: atif.Trajectory
    session_id: str
    project_id: str
    catalogue: Mapping[str, SkillContract]
    visible: list[VisibleSkill]
    agent: str
    subagent: str = ""
    decision: atif.ToolCall | None = None
    out: list[Activation] = field(default_factory=list)
    requests: list[atif.Step | None] | None = None


def extract_activations(
    trajectory: atif.Trajectory,
    *,
    project_id: str = "default",
    catalogue: Mapping[str, SkillContract] | None = None,
) -> list[Activation]:
    """Every activation in the session, ordered by start (nested ones after their parent)."""
    context = _Context(
        trajectory=trajectory,
        session_id=trajectory.session_id or trajectory.trajectory_id or "",
        project_id=project_id,
        catalogue=catalogue or {},
        visible=_visible(trajectory),
        agent=trajectory.agent.name,
    )
    _walk(context)
    return context.out


def _walk(context: _Context) -> None:
    trajectory = context.trajectory
    items = _items(trajectory)
    spans = {s["span_id"]: s for s in (trajectory.extra or {}).get("skill_activations", [])}
    starts = _starts(items, spans)
    claimed: set[int] = set()
    for activation in _explicit(context, items, spans, claimed):
        context.out.append(activation)
    for index in claimed:  # a loading call a span accounts for starts nothing else
        starts.pop(index, None)
    for activation in _inferred(context, items, starts):
        context.out.append(activation)
    subs = {s.trajectory_id: s for s in trajectory.subagent_trajectories or ()}
    for index, item in enumerate(items):
        if item.call is None or item.result is None:
            continue
        for ref in item.result.subagent_trajectory_ref or ():
            sub = subs.get(ref.trajectory_id or "")
            if sub is None:
                continue
            child = _Context(
                trajectory=sub,
                session_id=context.session_id,
                project_id=context.project_id,
                catalogue=context.catalogue,
                visible=_visible(sub) or context.visible,
                agent=context.agent,
                subagent=sub.agent.name,
                decision=item.call,
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


def _next_message(items: list[_Item], index: int) -> _Item | None:
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
    activation: Activation, parent: _Context, task: _Item, integration: _Item | None
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
    request, logged = _request(parent, task.step)
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
        }
    )


# --- items and starts ---------------------------------------------------------------------------


def _items(trajectory: atif.Trajectory) -> list[_Item]:
    items: list[_Item] = []
    for step in trajectory.steps:
        if step.source == "user":
            items.append(_Item("user", step, time=step.timestamp or ""))
            continue
        if step.source != "agent":
            continue
        logged = (step.extra or {}).get("message_logged", True)
        if step.message or not logged or not step.tool_calls:
            items.append(_Item("message", step, time=step.timestamp or ""))
        results = {
            r.source_call_id: r for r in (step.observation.results if step.observation else ())
        }
        for call in step.tool_calls or ():
            started = str((call.extra or {}).get("started_at", step.timestamp or ""))
            items.append(_Item("call", step, call, results.get(call.tool_call_id), time=started))
    loose = (trajectory.extra or {}).get("skill_events", [])
    for event in sorted(loose, key=lambda e: int(e.get("time_ns", 0))):
        when = _iso_ns(int(event.get("time_ns", 0)))
        position = next(
            (i for i, item in enumerate(items) if item.time and item.time > when), len(items)
        )
        anchor = items[position - 1].step if position else trajectory.steps[0]
        items.insert(position, _Item("event", anchor, event=event, time=when))
    for index, item in enumerate(items):
        item.index = index
    return items


def _iso_ns(ns: int) -> str:
    from skillsight.collector.trajectories._convert import iso

    return iso(ns)


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


def _starts(items: list[_Item], spans: Mapping[str, Mapping[str, Any]]) -> dict[int, _Start]:
    starts: dict[int, _Start] = {}
    for index, item in enumerate(items):
        if item.kind == "event" and item.event is not None:
            skill = str(item.event.get("skill_name", ""))
            starts[index] = _Start(skill, "event", item, index)
        elif item.kind == "call" and item.call is not None:
            if (item.call.extra or {}).get("activation_span_id") in spans:
                continue  # inside an explicit activation: its span says everything
            found = start_of(item.call)
            if found is None:
                continue
            # Claude Code's invocation_trigger "nested-skill" only says another skill was still
            # marked active; it does not tell composition from a sequence, so it is not nesting.
            starts[index] = _Start(found[0], found[1], item, index)
    return starts


# --- inferred boundaries ------------------------------------------------------------------------


def _inferred(context: _Context, items: list[_Item], starts: dict[int, _Start]) -> list[Activation]:
    done: list[_Open] = []
    stack: list[_Open] = []

    def close(keep: int, reason: str, integration: _Item | None = None) -> None:
        while len(stack) > keep:
            current = stack.pop()
            current.reason = reason
            if integration is not None:
                current.integration = integration
            elif (
                reason == "next"
                and current.messages
                and current.messages[-1].index > current.last_index
            ):
                current.integration = current.messages.pop()
            done.append(current)

    explicit_members = {
        index
        for index, item in enumerate(items)
        if item.call is not None and (item.call.extra or {}).get("activation_span_id")
    }
    for index, item in enumerate(items):
        start = starts.get(index)
        if start is not None:
            if start.nested and stack:
                base = next((i for i, o in enumerate(stack) if not o.start.nested), 0)
                close(base + 1, "next")
            else:
                close(0, "next")
            opened = _Open(start, stack[-1] if stack else None, last_index=index)
            stack.append(opened)
            continue
        if not stack or index in explicit_members:
            continue
        if item.kind == "user":
            close(0, "user")
        elif item.kind == "message":
            if item.final:
                close(0, "turn_end", item)
            else:
                for current in stack:
                    current.messages.append(item)
        elif item.kind == "call":
            for current in stack:
                current.calls.append(item)
                current.last_index = index
    close(0, "end")
    done.sort(key=lambda o: o.start.index)
    ids: dict[int, str] = {}
    out: list[Activation] = []
    for current in done:
        activation = _activation(context, items, current, ids)
        ids[id(current)] = activation.activation_id
        out.append(activation)
    return out


# --- explicit activation spans ------------------------------------------------------------------


def _explicit(
    context: _Context,
    items: list[_Item],
    spans: Mapping[str, Mapping[str, Any]],
    claimed: set[int],
) -> list[Activation]:
    if not spans:
        return []

    def chain(span_id: str) -> list[str]:
        out, seen = [], set()
        while span_id in spans and span_id not in seen:
            out.append(span_id)
            seen.add(span_id)
            span_id = str(spans[span_id].get("parent_span_id", ""))
        return out

    opened: dict[str, _Open] = {}
    for span_id, span in sorted(spans.items(), key=lambda kv: (kv[1].get("start_ns", 0), kv[0])):
        members = [
            i
            for i, item in enumerate(items)
            if span_id
            in chain(
                str(
                    ((item.call.extra if item.call else item.step.extra) or {}).get(
                        "activation_span_id", ""
                    )
                )
            )
        ]
        member_calls = [i for i in members if items[i].kind == "call"]
        named = str(span.get("call_id") or "")
        loader = next(
            (
                i
                for i, item in enumerate(items)
                if named and item.call and item.call.tool_call_id == named
            ),
            None,
        )
        loader = (
            loader
            if loader is not None
            else next(
                (
                    i
                    for i in member_calls
                    if (found := start_of(items[i].call))  # type: ignore[arg-type]
                    and found[0] == span.get("skill_name")
                ),
                None,
            )
        )
        if loader is None:
            loader = _loader_before(items, members, span)
        # a span with no loading call starts at its first member
        first = loader if loader is not None else (members[0] if members else None)
        if first is None:
            anchor = (
                _Item("event", context.trajectory.steps[0]) if context.trajectory.steps else None
            )
            if anchor is None:
                continue
            first_item = anchor
        else:
            first_item = items[first]
        start = _Start(str(span.get("skill_name", "")), "span", first_item, first or 0, span=span)
        if loader is None and first_item.kind == "call":
            # the first member is skill work, not a loading call: keep it inside
            first_item = _Item(
                "event", first_item.step, time=first_item.time, index=first_item.index
            )
            start.item = first_item
        parent_span = str(span.get("parent_span_id", ""))
        parent = next((opened[s] for s in chain(parent_span) if s in opened), None)
        current = _Open(start, parent)
        current.calls = [items[i] for i in member_calls if i != loader]
        current.messages = [items[i] for i in members if items[i].kind == "message"]
        last = max(members + ([loader] if loader is not None else []), default=first or 0)
        current.last_index = last
        current.integration = next(
            (
                item
                for item in items[last + 1 :]
                if item.kind == "message"
                and item.step.message
                and item.step not in [m.step for m in current.messages]
            ),
            None,
        )
        current.reason = "span"
        opened[span_id] = current
        if loader is not None:
            claimed.add(loader)
    out: list[Activation] = []
    ids: dict[int, str] = {}
    for current in sorted(opened.values(), key=lambda o: o.start.index):
        activation = _activation(context, items, current, ids)
        ids[id(current)] = activation.activation_id
        out.append(activation)
    return out


def _loader_before(items: list[_Item], members: list[int], span: Mapping[str, Any]) -> int | None:
    """A Skill/load_skill call just before the span that loaded the same skill (instrumentors
    may open the activation span after the loading call returned)."""
    limit = members[0] if members else len(items)
    for index in range(limit - 1, -1, -1):
        item = items[index]
        if item.kind == "call" and item.call is not None:
            found = start_of(item.call)
            unclaimed = not (item.call.extra or {}).get("activation_span_id")
            if found is not None and found[0] == span.get("skill_name") and unclaimed:
                return index
            return None
    return None


# --- building the record ------------------------------------------------------------------------


def _visible(trajectory: atif.Trajectory) -> list[VisibleSkill]:
    raw = (trajectory.extra or {}).get("visible_skills", [])
    return [VisibleSkill(name=s["name"], description=s.get("description", "")) for s in raw]


def _end_of(item: _Item) -> str:
    if item.call is not None:
        extra = item.call.extra or {}
        started = extra.get("started_at")
        if isinstance(started, str):
            duration = float(extra.get("duration_ms") or 0.0)
            return _plus_ms(started, duration)
    extra = item.step.extra or {}
    return str(extra.get("ended_at") or item.step.timestamp or item.time or "")


def _parse(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _plus_ms(start: str, ms: float) -> str:
    from datetime import timedelta

    moment = _parse(start)
    if moment is None:
        return start
    return (moment + timedelta(milliseconds=ms)).isoformat().replace("+00:00", "Z")


def _request(context: _Context, before: atif.Step) -> tuple[str, bool]:
    if context.requests is None:
        # the latest user step at or before each step, computed once per context
        context.requests = []
        latest: atif.Step | None = None
        for step in context.trajectory.steps:
            if step.source == "user":
                latest = step
            context.requests.append(latest)
    request = context.requests[before.step_id - 1] if context.requests else None
    if request is None:
        return "", True
    return request.message, (request.extra or {}).get("message_logged", True) is not False


def _tool_call(item: _Item) -> ToolCall:
    call = item.call
    assert call is not None
    extra = call.extra or {}
    result_extra = (item.result.extra if item.result else None) or {}
    return ToolCall(
        tool_call_id=call.tool_call_id,
        name=call.function_name,
        arguments=call.arguments if extra.get("arguments_logged", True) is not False else None,
        result=item.result.content if item.result else None,
        is_error=bool(result_extra.get("is_error", False)),
        step_id=item.step.step_id,
        started_at=str(extra.get("started_at", "")),
        duration_ms=extra.get("duration_ms"),
        span_id=str(extra.get("span_id", "")),
    )


def _contract(context: _Context, skill: str, start: _Start) -> SkillContract | None:
    known = context.catalogue.get(skill)
    contract = known.model_copy() if known is not None else None
    evidence: dict[str, Any] = {}
    if start.span is not None:
        evidence = {
            "description": start.span.get("description") or None,
            "version": start.span.get("version") or None,
            "source_uri": start.span.get("source_uri") or None,
            "allowed_tools": start.span.get("allowed_tools"),
        }
    elif start.item.call is not None:
        evidence = {"allowed_tools": (start.item.call.extra or {}).get("allowed_tools")}
    evidence = {k: v for k, v in evidence.items() if v is not None}
    if contract is None and not evidence:
        return None
    if contract is None:
        contract = SkillContract(name=skill)
    return contract.model_copy(update=evidence)


def _tokens(context: _Context, first: int, last: int) -> tuple[Tokens, float]:
    fresh = output = cache_read = cache_creation = 0
    cost = 0.0
    for step in context.trajectory.steps[first:last]:  # step ids first+1 … last
        metrics = step.metrics
        if metrics is None:
            continue
        creation = int((metrics.extra or {}).get("cache_creation_tokens", 0))
        cached = metrics.cached_tokens or 0
        fresh += max(0, (metrics.prompt_tokens or 0) - cached - creation)
        output += metrics.completion_tokens or 0
        cache_read += cached
        cache_creation += creation
        cost += metrics.cost_usd or 0.0
    tokens = Tokens(
        input=fresh, output=output, cache_read=cache_read, cache_creation=cache_creation
    )
    return tokens, round(cost, 10)


def _activation(
    context: _Context, items: list[_Item], current: _Open, ids: Mapping[int, str]
) -> Activation:
    start = current.start
    trajectory = context.trajectory
    trace_ids = (trajectory.extra or {}).get("trace_ids") or []
    span = start.span
    loader = start.item if start.loads else None
    trigger: Trigger = start.trigger  # type: ignore[assignment]
    if span is not None and loader is not None and loader.call is not None:
        # the span bounds it exactly; the call that loaded the skill still started it, so the
        # id and trigger are the ones every other source of the session gives
        trigger_id = loader.call.tool_call_id
        trigger = (start_of(loader.call) or ("", "span"))[1]
        trace_id = str(span.get("trace_id") or (trace_ids[0] if trace_ids else ""))
    elif span is not None:
        # the span may name the call that started it even when that call was not recorded
        declared = str(span.get("trigger", ""))
        trigger_id = str(span.get("call_id") or span["span_id"])
        if span.get("call_id") and declared in _TOOL_TRIGGERS:
            trigger = declared  # type: ignore[assignment]
        trace_id = str(span.get("trace_id") or (trace_ids[0] if trace_ids else ""))
    elif loader is not None and loader.call is not None:
        trigger_id = loader.call.tool_call_id
        trace_id = str(
            (loader.call.extra or {}).get("trace_id") or (trace_ids[0] if trace_ids else "")
        )
    else:
        event = start.item.event or {}
        trigger_id = f"event:{event.get('record_id', start.index)}"
        trace_id = str(trace_ids[0] if trace_ids else "")
    calls = [_tool_call(item) for item in current.calls]
    internal_steps = sorted({i.step.step_id for i in current.calls + current.messages})
    if loader is not None and loader.step.step_id in internal_steps:
        internal_steps.remove(loader.step.step_id)
    trigger_step = start.item.step.step_id
    integration = current.integration
    last_step = max([trigger_step, *internal_steps, integration.step.step_id if integration else 0])
    tokens, cost = _tokens(context, trigger_step, last_step)
    if span is not None:
        from skillsight.collector.trajectories._convert import iso

        started_at = iso(int(span.get("start_ns", 0)))
        ended_at = iso(int(span.get("end_ns", 0)))
        cost = cost or float(span.get("cost_usd") or 0.0)
    else:
        started_at = (
            str((loader.call.extra or {}).get("started_at", ""))
            if loader is not None and loader.call is not None
            else start.item.time
        )
        started_at = started_at or start.item.step.timestamp or ""
        ends = [_end_of(i) for i in current.calls]
        if loader is not None:
            ends.append(_end_of(loader))
        if integration is not None:
            ends.append(_end_of(integration))
        ended_at = max([e for e in ends if e] or [started_at])
    begin, end = _parse(started_at), _parse(ended_at)
    duration = (end - begin).total_seconds() * 1000 if begin and end and end > begin else 0.0
    request, logged = _request(context, start.item.step)
    load_result = loader.result if loader is not None else None
    skill_output = None
    if loader is not None and loader.call is not None:
        body = (loader.call.extra or {}).get("skill_body")
        skill_output = (
            body if isinstance(body, str) else (load_result.content if load_result else None)
        )
    contract = _contract(context, start.skill, start)
    load_failed = bool(((load_result.extra if load_result else None) or {}).get("is_error"))
    outcome = "completed"
    if load_failed or (calls and calls[-1].is_error) or (span is not None and span.get("is_error")):
        outcome = "error"
    elif current.reason in ("end", "user") and integration is None:
        outcome = "interrupted"
    integration_text = None
    if integration is not None:
        logged_text = (integration.step.extra or {}).get("message_logged", True) is not False
        integration_text = integration.step.message if logged_text else None
    return Activation(
        activation_id=activation_id(trace_id or context.session_id, trigger_id),
        project_id=context.project_id,
        session_id=context.session_id,
        trace_id=trace_id,
        skill_name=start.skill,
        skill_version=contract.version if contract else "",
        trigger=trigger,
        trigger_call_id=trigger_id,
        trigger_step_id=trigger_step,
        mechanism=trigger,
        load_call_id=trigger_id if loader is not None or span is not None else "",
        activation_span_id=str(span["span_id"]) if span is not None else "",
        trajectory_id=trajectory.trajectory_id or "",
        decision_trajectory_id=trajectory.trajectory_id or "",
        agent=context.agent,
        subagent=context.subagent,
        parent_activation_id=ids.get(id(current.parent), "") if current.parent else "",
        source_convention=str((trajectory.extra or {}).get("source_convention", "")),
        request=request,
        request_logged=logged,
        tool_calls=calls,
        skill_output=skill_output,
        integration_message=integration_text,
        integration_step_id=integration.step.step_id if integration else None,
        step_ids=internal_steps,
        started_at=started_at,
        ended_at=ended_at,
        duration_ms=round(duration, 3),
        tokens=tokens,
        cost_usd=cost,
        outcome=outcome,  # type: ignore[arg-type]
        visible_skills=context.visible,
        contract=contract,
    )


def _preloaded(context: _Context) -> Activation | None:
    """A subagent that ran with a skill but never loaded one: its definition preloaded it."""
    skills = [
        str((s.extra or {}).get("active_skill"))
        for s in context.trajectory.steps
        if (s.extra or {}).get("active_skill")
    ]
    if not skills or context.decision is None or not context.trajectory.steps:
        return None
    items = _items(context.trajectory)
    first = items[0]
    start = _Start(skills[0], "subagent", first, 0)
    current = _Open(start, None)
    current.calls = [i for i in items if i.kind == "call"]
    current.messages = [i for i in items if i.kind == "message" and not i.final]
    current.integration = next((i for i in reversed(items) if i.final), None)
    current.reason = "turn_end" if current.integration else "end"
    activation = _activation(context, items, current, {})
    return activation.model_copy(update={"mechanism": "preloaded", "load_call_id": ""})
