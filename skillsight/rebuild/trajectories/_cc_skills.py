"""Claude Code's ``skill_activated`` events: tied to the Skill call they report, and named.

A ``skill_activated`` event is logged under the Skill call's ``tool.execution`` span (with the
enhanced telemetry beta); without span ids it belongs to the Skill call of that skill running
when it was logged. Events no Skill call accounts for (a slash command) stay loose and start an
activation of their own.

Names may be masked: without ``OTEL_LOG_TOOL_DETAILS`` (and in some CLI versions) the event says
``custom_skill`` for project and user skills and ``third-party`` for plugin skills, and a Skill
call carries no input. The real name survives in the Skill call's input when it is logged and in
``api_request``'s ``skill.name`` on the LLM calls made while the skill is active; the real name
always wins over a masked one.
"""

from __future__ import annotations

from skillsight.rebuild.trajectories._draft import AgentDraft, CallDraft, StepDraft
from skillsight.rebuild.trajectories._rows import Event

__all__ = ["MASKED_SKILL_NAMES", "claim_skill_events", "name_unnamed_skills"]

# What skill_activated says in place of the name for project, user and plugin skills when
# OTEL_LOG_TOOL_DETAILS is off, or in CLI versions that mask names; the real name is still in
# the Skill call's input and in api_request's skill.name.
MASKED_SKILL_NAMES = frozenset({"custom_skill", "third-party", "third_party"})


def _masked(name: str) -> bool:
    return not name or name in MASKED_SKILL_NAMES


def _active_after(steps: list[StepDraft], index: int) -> str:
    """The skill the first LLM call after ``steps[index]`` was made under (``skill.name``)."""
    return next(
        (str(s.extra["active_skill"]) for s in steps[index + 1 :] if "active_skill" in s.extra),
        "",
    )


def name_unnamed_skills(draft: AgentDraft) -> bool:
    """Name what telemetry left masked from what it did not mask.

    Without OTEL_LOG_TOOL_DETAILS a Skill call carries no skill name, and some CLI versions
    mask the name in ``skill_activated`` (``custom_skill``, ``third-party``); the LLM calls made
    while the skill is active still carry it (``api_request`` ``skill.name``). A masked event
    tied to a named Skill call takes the call's name.

    True when a name was looked for past the last step: steps that arrive later may name it."""
    steps = draft.steps
    open_ended = False
    for index, step in enumerate(steps):
        for call in step.calls:
            if call.name != "Skill":
                continue
            event = call.extra.get("skill_activated") or {}
            named = str(call.extra.get("skill") or "") or str(
                (call.arguments or {}).get("skill") or (call.arguments or {}).get("command") or ""
            )
            if not named:
                named = event.get("skill_name", "")
                if _masked(named):
                    named = _active_after(steps, index)
                    open_ended = open_ended or not named
                if not _masked(named):
                    call.extra["skill"] = named
            if event and _masked(event.get("skill_name", "")) and not _masked(named):
                event["masked_name"] = event.get("skill_name", "")
                event["skill_name"] = named.lstrip("/")
    for loose in draft.skill_events:
        if not _masked(str(loose.get("skill_name", ""))):
            continue
        after = next(
            (i for i, s in enumerate(steps) if s.time_ns >= int(loose.get("time_ns", 0))),
            len(steps),
        )
        named = _active_after(steps, after - 1)
        if named:
            loose["masked_name"] = loose.get("skill_name", "")
            loose["skill_name"] = named
        else:
            open_ended = True
    return open_ended


def claim_skill_events(
    draft: AgentDraft,
    events: list[Event],
    calls: dict[str, CallDraft],
    execution_to_call: dict[str, str],
) -> None:
    """Tie each ``skill_activated`` event to the Skill call it reports, else keep it loose."""
    skill_calls = sorted(
        (c for c in calls.values() if c.name == "Skill"), key=lambda c: (c.start_ns, c.call_id)
    )
    for event in events:
        if event.name != "claude_code.skill_activated":
            continue
        masked = _masked(event.skill_name)
        info = {
            "record_id": event.record_id,
            "skill_name": event.skill_name,
            "skill_source": event.attr("skill.source"),
            "invocation_trigger": event.attr("invocation_trigger"),
            "time_ns": event.time_ns,
            "span_id": event.span_id,
        }
        owner = calls.get(execution_to_call.get(event.span_id, ""))
        if owner is None:
            # without span ids: the Skill call of that skill running when the event was logged
            for call in skill_calls:
                named = call.extra.get("skill") or (call.arguments or {}).get("skill")
                running = call.start_ns <= event.time_ns <= max(call.end_ns, call.start_ns)
                unclaimed = "skill_activated" not in call.extra
                if running and unclaimed and (named in (event.skill_name, None) or masked):
                    owner = call
                    break
        if owner is not None and "skill_activated" not in owner.extra:
            owner.extra["skill_activated"] = info
        else:
            draft.skill_events.append(info)
