"""One activation record from its bounds: ids, calls, integration, context, usage, outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from skillsight.rebuild.activations._timeline import (
    TOOL_TRIGGERS,
    Extent,
    Item,
    Start,
    start_of,
)
from skillsight.rebuild.catalogue import Catalogue
from skillsight.rebuild.trajectories import atif
from skillsight.store.records import (
    Activation,
    SkillContract,
    Tokens,
    ToolCall,
    Trigger,
    VisibleSkill,
    activation_id,
    iso,
)


@dataclass
class Context:
    trajectory: atif.Trajectory
    session_id: str
    project_id: str
    catalogue: Catalogue
    visible: list[VisibleSkill]
    agent: str
    subagent: str = ""
    decision: atif.ToolCall | None = None
    out: list[Activation] = field(default_factory=list)
    workspace: str = ""
    """The agent's working directory as the telemetry reported it ("" when not)."""
    requests: list[atif.Step | None] | None = None


def visible_skills(trajectory: atif.Trajectory) -> list[VisibleSkill]:
    raw = (trajectory.extra or {}).get("visible_skills", [])
    return [VisibleSkill(name=s["name"], description=s.get("description", "")) for s in raw]


def _end_of(item: Item) -> str:
    if item.call is not None:
        extra = item.call.extra or {}
        started = extra.get("started_at")
        if isinstance(started, str):
            duration = float(extra.get("duration_ms") or 0.0)
            return _plus_ms(started, duration)
    extra = item.step.extra or {}
    return str(extra.get("ended_at") or item.step.timestamp or item.time or "")


def _ns(text: str) -> int | None:
    """Nanoseconds of a trajectory timestamp, exactly (no float rounding)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    whole = int(moment.replace(microsecond=0).timestamp())
    return whole * 1_000_000_000 + moment.microsecond * 1000


def _plus_ms(start: str, ms: float) -> str:
    began = _ns(start)
    return start if began is None else iso(began + round(ms * 1_000_000))


def request_before(context: Context, before: atif.Step) -> tuple[str, bool, int | None]:
    """The user request the agent acted on at ``before``: the text of the latest user step at
    or before it, whether that text was logged, and that step's id (None without one)."""
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
        return "", True, None
    logged = (request.extra or {}).get("message_logged", True) is not False
    return request.message, logged, request.step_id


def _tool_call(item: Item) -> ToolCall:
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


def _contract(context: Context, skill: str, start: Start) -> SkillContract | None:
    """The catalogue's contract of the version the source reported, overlaid with what the
    source itself reported; the latest catalogued version when it reported none."""
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
    # a version the catalogue does not hold joins nothing: the contract is only what the
    # source reported, rather than another version's allowed-tools and description
    known = context.catalogue.contract(skill, evidence.get("version", ""))
    if known is None and not evidence:
        return None
    contract = known if known is not None else SkillContract(name=skill, catalogued=False)
    return contract.model_copy(update={**evidence, "reported": sorted(evidence)})


def _tokens(context: Context, first: int, last: int) -> tuple[Tokens, float]:
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


def build_activation(
    context: Context, items: list[Item], current: Extent, ids: Mapping[int, str]
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
        if span.get("call_id") and declared in TOOL_TRIGGERS:
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
    begin, end = _ns(started_at), _ns(ended_at)
    duration = (end - begin) / 1e6 if begin is not None and end is not None and end > begin else 0.0
    request, logged, request_step = request_before(context, start.item.step)
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
        request_step_id=request_step,
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
        workspace=context.workspace,
    )
