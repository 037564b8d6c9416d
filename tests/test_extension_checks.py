"""What an extension of a session by new prompts takes as it is, and what it checks again.

An extension appends the new prompt's steps to the steps of the rebuild before, the very step
objects. Its ATIF validation (:func:`atif.extended`) takes those as checked, and its
activation extraction (:func:`timeline_of`) takes the items derived from them, only while
that is exact: a step that is not the very object checked before is checked, references are
resolved again when an embedded subagent run is gone, and a context whose loose skill events
place items across the whole is derived again.
"""

from __future__ import annotations

import operator
from typing import Any

import pytest

from skillsight.rebuild.activations._timeline import timeline_of
from skillsight.rebuild.activations.extract import extract
from skillsight.rebuild.trajectories import atif

AGENT = {"name": "claude-code", "version": "2.1.0"}


def _call_step(step_id: int, call_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "step_id": step_id,
        "source": "agent",
        "message": "",
        "timestamp": f"2026-12-01T10:{step_id:02d}:00.000000Z",
        "tool_calls": [{"tool_call_id": call_id, "function_name": tool, "arguments": args}],
        "observation": {"results": [{"source_call_id": call_id, "content": "ok"}]},
    }


def _prompt(first: int, skill: str) -> list[dict[str, Any]]:
    """A user step, a Skill call, a Bash call under it and a final message."""
    stamp = f"2026-12-01T10:{first:02d}:00.000000Z"
    return [
        {"step_id": first, "source": "user", "message": f"use {skill}", "timestamp": stamp},
        _call_step(first + 1, f"load-{first}", "Skill", {"skill": skill}),
        _call_step(first + 2, f"run-{first}", "Bash", {"command": "ls"}),
        {
            "step_id": first + 3,
            "source": "agent",
            "message": "done",
            "timestamp": f"2026-12-01T10:{first + 3:02d}:00.000000Z",
        },
    ]


def _document(steps: list[Any], **more: Any) -> dict[str, Any]:
    return {"session_id": "s", "trajectory_id": "s", "agent": AGENT, "steps": steps, **more}


def test_an_extension_checks_its_new_steps_and_takes_the_kept_ones_as_checked() -> None:
    before = atif.Trajectory.model_validate(_document(_prompt(1, "pdf")))
    document = _document([*before.steps, *_prompt(5, "xlsx")])
    extended = atif.extended(document, before)
    assert extended.steps[:4] == before.steps and extended.steps[0] is before.steps[0]
    assert extended == atif.Trajectory.model_validate(document)  # what a whole check gives

    # a new step that breaks a rule is refused
    broken = _prompt(5, "xlsx")
    broken[0]["tool_calls"] = broken[1]["tool_calls"]  # a user step with tool calls
    with pytest.raises(ValueError, match="only allowed on agent steps"):
        atif.extended(_document([*before.steps, *broken]), before)
    # new steps that do not number on from the kept ones are refused
    with pytest.raises(ValueError, match="step ids run from 1"):
        atif.extended(_document([*before.steps, *_prompt(6, "xlsx")]), before)


def test_the_kept_steps_are_not_checked_again() -> None:
    """What makes an extension cheap: the steps of the trajectory before are not checked
    again (shown with one that was never checked, and breaks a rule: it passes through)."""
    valid = _prompt(1, "pdf")
    unchecked = atif.Step.model_construct(
        **{**valid[0], "tool_calls": [atif.ToolCall(tool_call_id="c", function_name="Bash")]}
    )
    rest = [atif.Step.model_validate(step) for step in valid[1:]]
    before = atif.Trajectory.model_construct(
        agent=atif.Agent.model_validate(AGENT), steps=[unchecked, *rest], subagent_trajectories=None
    )
    document = _document([*before.steps, *_prompt(5, "x")])
    assert atif.extended(document, before).steps[0] is unchecked
    with pytest.raises(ValueError, match="only allowed on agent steps"):
        atif.Trajectory.model_validate(document)


def test_only_the_very_steps_checked_before_are_taken_as_they_are() -> None:
    before = atif.Trajectory.model_validate(_document(_prompt(1, "pdf")))
    # an unchecked copy of a kept step (the same fields, another object) that breaks a rule
    copied = atif.Step.model_construct(
        **{**dict(before.steps[0]), "tool_calls": before.steps[1].tool_calls}
    )
    with pytest.raises(ValueError, match="only allowed on agent steps"):
        atif.extended(_document([copied, *before.steps[1:], *_prompt(5, "x")]), before)
    # the kept steps in another order are not the steps checked before, position by position
    shuffled = [before.steps[1], before.steps[0], *before.steps[2:]]
    with pytest.raises(ValueError, match="step ids run from 1"):
        atif.extended(_document(shuffled), before)


def test_references_are_resolved_again_when_an_embedded_run_is_gone() -> None:
    first = _prompt(1, "pdf")
    first[2]["observation"]["results"][0]["subagent_trajectory_ref"] = [{"trajectory_id": "sub"}]
    sub = {"trajectory_id": "sub", "agent": AGENT, "steps": []}
    before = atif.Trajectory.model_validate(_document(first, subagent_trajectories=[sub]))
    kept = [*before.steps, *_prompt(5, "x")]
    assert (
        atif.extended(_document(kept, subagent_trajectories=[sub]), before).steps[0]
        is (before.steps[0])
    )
    with pytest.raises(ValueError, match="matches no embedded subagent trajectory"):
        atif.extended(_document(kept), before)


def test_an_extraction_extends_the_timeline_of_the_steps_before() -> None:
    before = atif.Trajectory.model_validate(_document(_prompt(1, "pdf")))
    after = atif.extended(_document([*before.steps, *_prompt(5, "xlsx")]), before)
    made = extract(before)
    extended = extract(after, timeline=made.timeline)
    head = made.timeline.items
    assert all(map(operator.is_, head, extended.timeline.items[: len(head)]))
    assert extended.timeline.starts[1] is made.timeline.starts[1]  # the kept Skill call
    whole = extract(after)
    assert extended.activations == whole.activations
    assert [i.index for i in extended.timeline.items] == [i.index for i in whole.timeline.items]
    assert sorted(extended.timeline.starts) == sorted(whole.timeline.starts)
    assert [a.skill_name for a in extended.activations] == ["pdf", "xlsx"]

    # held activations and the timeline: only the new prompt's activations are bounded
    kept = ([made.activations[0]], 5)
    assert extract(after, kept=kept, timeline=made.timeline).activations == whole.activations

    # another trajectory's timeline (other step objects) is not taken
    other = atif.Trajectory.model_validate(_document(_prompt(1, "pdf")))
    fresh = timeline_of(after, {}, extract(other).timeline)
    assert fresh.items[0] is not made.timeline.items[0]
    assert [i.kind for i in fresh.items] == [i.kind for i in whole.timeline.items]


def test_loose_skill_events_derive_the_timeline_again() -> None:
    """A Claude Code skill event no Skill call accounts for is placed among the items by its
    time, anywhere in the context: such a timeline is derived whole."""
    event = {"skill_name": "pdf", "time_ns": 1_795_000_000_000_000_000, "record_id": "r1"}
    before = atif.Trajectory.model_validate(_document(_prompt(1, "pdf")))
    after = atif.extended(
        _document([*before.steps, *_prompt(5, "xlsx")], extra={"skill_events": [event]}), before
    )
    made = extract(before)
    assert made.timeline.extendable
    extended = extract(after, timeline=made.timeline)
    assert not extended.timeline.extendable
    assert extended.timeline.items[0] is not made.timeline.items[0]
    assert any(item.kind == "event" for item in extended.timeline.items)
    assert extended.activations == extract(after).activations
