"""Where activations begin and end: inferred from the item sequence, or exact from spans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillsight.rebuild.activations._record import Context, build_activation
from skillsight.rebuild.activations._timeline import Extent, Item, Start, start_of
from skillsight.store.records import Activation, iso

# --- inferred boundaries ------------------------------------------------------------------------


def inferred_activations(
    context: Context, items: list[Item], starts: Mapping[int, Start], *, build_from: int = 0
) -> list[Activation]:
    """The activations ``starts`` open, bounded by what follows each; only those that start at
    ``items[build_from]`` or later are built: that item is a user message, which closes every
    activation before it (the caller holds those), so the items are walked from there."""
    done: list[Extent] = []
    stack: list[Extent] = []

    def close(keep: int, reason: str, integration: Item | None = None) -> None:
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
        for index in range(build_from, len(items))
        if (call := items[index].call) is not None and (call.extra or {}).get("activation_span_id")
    }
    for index in range(build_from, len(items)):
        item = items[index]
        start = starts.get(index)
        if start is not None:
            if start.nested and stack:
                base = next((i for i, o in enumerate(stack) if not o.start.nested), 0)
                close(base + 1, "next")
            else:
                close(0, "next")
            opened = Extent(start, stack[-1] if stack else None, last_index=index)
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
        activation = build_activation(context, items, current, ids)
        ids[id(current)] = activation.activation_id
        out.append(activation)
    return out


# --- explicit activation spans ------------------------------------------------------------------


def explicit_activations(
    context: Context,
    items: list[Item],
    spans: Mapping[str, Mapping[str, Any]],
    claimed: set[int],
) -> list[Activation]:
    """One activation per span, holding exactly what ran beneath it (nested spans included).

    The indices of the loading calls the spans account for are added to ``claimed``, so that
    the inferred pass does not start a second activation from them.
    """
    if not spans:
        return []

    def chain(span_id: str) -> list[str]:
        """The span and the activation spans above it."""
        out, seen = [], set()
        while span_id in spans and span_id not in seen:
            out.append(span_id)
            seen.add(span_id)
            span_id = str(spans[span_id].get("parent_span_id", ""))
        return out

    under = [chain(_span_of(item)) for item in items]
    opened: dict[str, Extent] = {}
    for span_id, span in sorted(spans.items(), key=lambda kv: (kv[1].get("start_ns", 0), kv[0])):
        members = [i for i, spans_above in enumerate(under) if span_id in spans_above]
        member_calls = [i for i in members if items[i].kind == "call"]
        loader = _loader(items, members, member_calls, span)
        start = _span_start(context, items, members, loader, span)
        if start is None:
            continue
        parent = next(
            (opened[s] for s in chain(str(span.get("parent_span_id", ""))) if s in opened), None
        )
        current = Extent(start, parent, reason="span")
        current.calls = [items[i] for i in member_calls if i != loader]
        current.messages = [items[i] for i in members if items[i].kind == "message"]
        current.last_index = max(
            members + ([loader] if loader is not None else []), default=start.index
        )
        inside = {id(m.step) for m in current.messages}
        current.integration = next(
            (
                item
                for item in items[current.last_index + 1 :]
                if item.kind == "message" and item.step.message and id(item.step) not in inside
            ),
            None,
        )
        opened[span_id] = current
        if loader is not None:
            claimed.add(loader)
    out: list[Activation] = []
    ids: dict[int, str] = {}
    for current in sorted(opened.values(), key=lambda o: o.start.index):
        activation = build_activation(context, items, current, ids)
        ids[id(current)] = activation.activation_id
        out.append(activation)
    return out


def _span_of(item: Item) -> str:
    extra = (item.call.extra if item.call is not None else item.step.extra) or {}
    return str(extra.get("activation_span_id", ""))


def _loader(
    items: list[Item], members: list[int], member_calls: list[int], span: Mapping[str, Any]
) -> int | None:
    """The call that loaded the span's skill: the one the span names, else a loading call of
    that skill beneath it, else one just before it."""
    named = str(span.get("call_id") or "")
    if named:
        for index, item in enumerate(items):
            if item.call is not None and item.call.tool_call_id == named:
                return index
    for index in member_calls:
        call = items[index].call
        found = start_of(call) if call is not None else None
        if found is not None and found[0] == span.get("skill_name"):
            return index
    return _loader_before(items, members, span)


def _span_start(
    context: Context,
    items: list[Item],
    members: list[int],
    loader: int | None,
    span: Mapping[str, Any],
) -> Start | None:
    """Where the span's activation starts: its loading call, else just before its first
    member (a span with no loading call starts with the skill's work, which stays inside)."""
    skill = str(span.get("skill_name", ""))
    if loader is not None:
        return Start(skill, "span", items[loader], loader, span=span)
    if members:
        first = items[members[0]]
        marker = Item("event", first.step, time=first.time, index=first.index)
        return Start(skill, "span", marker, members[0], span=span)
    if context.trajectory.steps:
        # nothing recorded beneath it: place it by its start time
        began = iso(int(span.get("start_ns", 0)))
        position = next((i for i, item in enumerate(items) if item.time > began), len(items))
        step = items[position - 1].step if position else context.trajectory.steps[0]
        marker = Item("event", step, time=began, index=position - 1)
        return Start(skill, "span", marker, position - 1, span=span)
    return None


def _loader_before(items: list[Item], members: list[int], span: Mapping[str, Any]) -> int | None:
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
