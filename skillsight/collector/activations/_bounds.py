"""Where activations begin and end: inferred from the item sequence, or exact from spans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillsight.collector.activations._record import Context, build_activation
from skillsight.collector.activations._timeline import Extent, Item, Start, start_of
from skillsight.collector.activations.model import Activation

# --- inferred boundaries ------------------------------------------------------------------------


def inferred_activations(
    context: Context, items: list[Item], starts: dict[int, Start]
) -> list[Activation]:
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
    if not spans:
        return []

    def chain(span_id: str) -> list[str]:
        out, seen = [], set()
        while span_id in spans and span_id not in seen:
            out.append(span_id)
            seen.add(span_id)
            span_id = str(spans[span_id].get("parent_span_id", ""))
        return out

    opened: dict[str, Extent] = {}
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
                Item("event", context.trajectory.steps[0]) if context.trajectory.steps else None
            )
            if anchor is None:
                continue
            first_item = anchor
        else:
            first_item = items[first]
        start = Start(str(span.get("skill_name", "")), "span", first_item, first or 0, span=span)
        if loader is None and first_item.kind == "call":
            # the first member is skill work, not a loading call: keep it inside
            first_item = Item(
                "event", first_item.step, time=first_item.time, index=first_item.index
            )
            start.item = first_item
        parent_span = str(span.get("parent_span_id", ""))
        parent = next((opened[s] for s in chain(parent_span) if s in opened), None)
        current = Extent(start, parent)
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
        activation = build_activation(context, items, current, ids)
        ids[id(current)] = activation.activation_id
        out.append(activation)
    return out


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
