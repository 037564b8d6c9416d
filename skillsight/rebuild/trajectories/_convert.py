"""An agent draft → an ATIF-v1.7 trajectory (subagents embedded, metrics summed).

The document is assembled as plain data and validated once by :class:`atif.Trajectory`:
pydantic validates a nested document in one pass, several times faster than building each of
thousands of step objects one by one, and every ATIF rule is still checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from skillsight.rebuild.trajectories import atif
from skillsight.rebuild.trajectories._draft import AgentDraft, CallDraft, StepDraft, Usage
from skillsight.store.records import iso


def _clean(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def to_atif(draft: AgentDraft) -> atif.Trajectory:
    return atif.Trajectory.model_validate(document(draft))


def document(draft: AgentDraft) -> dict[str, Any]:
    subagents: list[dict[str, Any]] = []
    steps = convert_steps(draft.steps, 1, subagents)
    return assemble(draft, steps, subagents, steps_usage(draft), map(subagent_usage, subagents))


def convert_steps(
    steps: list[StepDraft], first_id: int, subagents: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Draft steps as ATIF steps numbered from ``first_id``; the subagent runs their calls
    started are appended to ``subagents``."""
    return [_step(first_id + index, step, subagents) for index, step in enumerate(steps)]


def subagent_usage(sub: dict[str, Any]) -> Usage:
    """What an embedded subagent trajectory's final metrics count."""
    fm = sub["final_metrics"]
    return Usage(
        fm.get("total_prompt_tokens", 0),
        fm.get("total_completion_tokens", 0),
        fm.get("total_cached_tokens", 0),
        int(fm.get("extra", {}).get("total_cache_creation_tokens", 0)),
        fm.get("total_cost_usd"),
    )


def assemble(
    draft: AgentDraft,
    steps: Sequence[Any],
    subagents: Sequence[Any],
    totals: Usage,
    subagent_totals: Iterable[Usage],
) -> dict[str, Any]:
    """The document of ``draft`` whose ``steps`` and embedded ``subagents`` are converted
    already (as data, or as validated :mod:`atif` models); ``totals``, its steps' usage (added
    to here), and ``subagent_totals``, each subagent's, in order."""
    final_extra: dict[str, Any] = {}
    if draft.side_requests:
        totals.add(draft.side_usage)
        final_extra["side_requests"] = draft.side_requests
    for usage in subagent_totals:
        totals.add(usage)
    if totals.cache_creation:
        final_extra["total_cache_creation_tokens"] = totals.cache_creation
    extra: dict[str, Any] = {"source_convention": draft.source, "trace_ids": draft.trace_ids}
    if draft.visible_skills:
        extra["visible_skills"] = draft.visible_skills
    if draft.activation_spans:
        extra["skill_activations"] = draft.activation_spans
    if draft.skill_events:
        extra["skill_events"] = draft.skill_events
    extra.update({k: v for k, v in draft.extra.items() if k != "total_usage"})
    return _clean(
        {
            "schema_version": atif.SCHEMA_VERSION,
            "session_id": draft.session_id,
            "trajectory_id": draft.trajectory_id,
            "agent": _clean(
                {
                    "name": draft.name or draft.source or "agent",
                    "version": draft.version or "unknown",
                    "model_name": draft.model or None,
                }
            ),
            "steps": list(steps),
            "notes": " ".join(dict.fromkeys(draft.notes)) or None,
            "final_metrics": _clean(
                {
                    "total_prompt_tokens": totals.prompt,
                    "total_completion_tokens": totals.completion,
                    "total_cached_tokens": totals.cache_read,
                    "total_cost_usd": round(totals.cost_usd, 10)
                    if totals.cost_usd is not None
                    else None,
                    "total_steps": len(steps),
                    "extra": final_extra or None,
                }
            ),
            "extra": extra,
            "subagent_trajectories": list(subagents) or None,
        }
    )


def steps_usage(draft: AgentDraft) -> Usage:
    """The steps' usage; what the source reports only as a run total (an agent span's cost,
    OpenInference's token counts) fills what no step carries."""
    totals = Usage()
    for step in draft.steps:
        if step.usage is not None:
            totals.add(step.usage)
    reported: Usage | None = draft.extra.get("total_usage")
    if reported is None:
        return totals
    if not (totals.prompt or totals.completion or totals.cache_read or totals.cache_creation):
        totals = Usage(
            reported.prompt,
            reported.completion,
            reported.cache_read,
            reported.cache_creation,
            totals.cost_usd,
        )
    if totals.cost_usd is None:
        totals.cost_usd = reported.cost_usd
    return totals


def _step(step_id: int, step: StepDraft, subagents: list[dict[str, Any]]) -> dict[str, Any]:
    extra: dict[str, Any] = {k: v for k, v in step.extra.items() if not k.startswith("_")}
    if step.span_id:
        extra["span_id"] = step.span_id
    if step.end_ns > step.time_ns:
        extra["ended_at"] = iso(step.end_ns)
    if not step.message_logged:
        extra["message_logged"] = False
    out: dict[str, Any] = {
        "step_id": step_id,
        "timestamp": iso(step.time_ns) if step.time_ns else None,
        "source": step.source,
        "message": step.message,
    }
    if step.source == "agent":
        if step.model:
            out["model_name"] = step.model
        if step.calls:
            out["tool_calls"] = [_call(call) for call in step.calls]
            out["observation"] = {"results": [_result(call, subagents) for call in step.calls]}
        if step.usage is not None:
            out["metrics"] = _clean(
                {
                    "prompt_tokens": step.usage.prompt,
                    "completion_tokens": step.usage.completion,
                    "cached_tokens": step.usage.cache_read,
                    "cost_usd": step.usage.cost_usd,
                    "extra": {"cache_creation_tokens": step.usage.cache_creation},
                }
            )
        if step.llm_calls:
            out["llm_call_count"] = step.llm_calls
    if extra:
        out["extra"] = extra
    return _clean(out)


def _call(call: CallDraft) -> dict[str, Any]:
    extra: dict[str, Any] = {k: v for k, v in call.extra.items() if not k.startswith("_")}
    if call.span_id:
        extra["span_id"] = call.span_id
        extra["trace_id"] = call.trace_id
    if call.start_ns:
        extra["started_at"] = iso(call.start_ns)
        extra["duration_ms"] = round(max(0, call.end_ns - call.start_ns) / 1e6, 3)
    if call.sources:
        extra["sources"] = sorted(set(call.sources))
    if call.arguments is None:
        extra["arguments_logged"] = False
    out: dict[str, Any] = {
        "tool_call_id": call.call_id,
        "function_name": call.name,
        "arguments": call.arguments or {},
    }
    if extra:
        out["extra"] = extra
    return out


def _result(call: CallDraft, subagents: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"source_call_id": call.call_id}
    if call.result is not None:
        out["content"] = call.result
    if call.subagent is not None:
        sub = document(call.subagent)
        subagents.append(sub)
        out["subagent_trajectory_ref"] = [{"trajectory_id": sub["trajectory_id"]}]
    extra: dict[str, Any] = {}
    if call.is_error:
        extra["is_error"] = True
    if call.result is None:
        extra["output_logged"] = False
    if extra:
        out["extra"] = extra
    return out
