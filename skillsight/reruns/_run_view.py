"""A whole run seen as one unit, in the activation record's shape.

The paired metrics are about the run, not one activation: a baseline run has no activation of
the withheld skill, yet its security and its answer count. The *run view* is an
:class:`Activation` whose internal calls are every tool call of the main trajectory, whose
request is the first user message and whose integration message is the final answer, so the
same evaluators and judges score both conditions. Its id is ``run:<session id>``; it is never
stored as an activation.
"""

from __future__ import annotations

from skillsight.goldens import final_answer
from skillsight.rebuild.trajectories import Trajectory
from skillsight.skills import SkillManifest
from skillsight.store.records import Activation, SkillContract, ToolCall


def run_tokens(trajectory: Trajectory) -> tuple[int, float]:
    """Tokens (prompt, cached and completion) and cost of the whole run."""
    final = trajectory.final_metrics
    if final is not None and (final.total_prompt_tokens or final.total_completion_tokens):
        tokens = (final.total_prompt_tokens or 0) + (final.total_completion_tokens or 0)
        return tokens, float(final.total_cost_usd or 0.0)
    tokens, cost = 0, 0.0
    for step in trajectory.steps:
        if step.metrics is not None:
            tokens += (step.metrics.prompt_tokens or 0) + (step.metrics.completion_tokens or 0)
            cost += step.metrics.cost_usd or 0.0
    return tokens, cost


def run_view(
    trajectory: Trajectory,
    *,
    skill: str,
    project_id: str,
    manifest: SkillManifest | None = None,
) -> Activation:
    """The run as one activation-shaped record (see the module)."""
    request = next((s.message for s in trajectory.steps if s.source == "user"), "")
    calls: list[ToolCall] = []
    for step in trajectory.steps:
        if step.source != "agent":
            continue
        results = {
            r.source_call_id: r for r in (step.observation.results if step.observation else ())
        }
        for call in step.tool_calls or ():
            result = results.get(call.tool_call_id)
            extra = (result.extra if result else None) or {}
            calls.append(
                ToolCall(
                    tool_call_id=call.tool_call_id,
                    name=call.function_name,
                    arguments=call.arguments,
                    result=result.content if result else None,
                    is_error=bool(extra.get("is_error", False)),
                    step_id=step.step_id,
                    started_at=str((call.extra or {}).get("started_at", step.timestamp or "")),
                )
            )
    answer = final_answer(trajectory)
    answer_step = next(
        (
            s.step_id
            for s in reversed(trajectory.steps)
            if s.source == "agent" and not s.tool_calls and s.message == answer
        ),
        None,
    )
    times = [s.timestamp for s in trajectory.steps if s.timestamp]
    session = trajectory.session_id or trajectory.trajectory_id or "run"
    _, cost = run_tokens(trajectory)
    contract = None
    if manifest is not None:
        contract = SkillContract(
            name=manifest.name,
            description=manifest.description,
            allowed_tools=manifest.allowed_tools,
            version=manifest.version,
            source_uri=manifest.path.absolute().as_uri(),
        )
    return Activation(
        activation_id=f"run:{session}",
        project_id=project_id,
        session_id=session,
        trace_id="",
        skill_name=skill,
        skill_version=manifest.version if manifest is not None else "",
        trigger="span",
        trigger_call_id="run",
        agent=trajectory.agent.name,
        request=request,
        tool_calls=calls,
        integration_message=answer,
        integration_step_id=answer_step,
        step_ids=sorted({c.step_id for c in calls}),
        started_at=min(times) if times else "",
        ended_at=max(times) if times else "",
        cost_usd=cost,
        contract=contract,
    )
