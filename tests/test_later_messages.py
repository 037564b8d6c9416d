"""What the agent said after an activation, found through one index of the session's
activations, is what the rule read literally (a scan of every other activation) finds."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from skillsight.evaluators.scheduler._context import LaterMessages
from skillsight.store.records import Activation


def scanned(activation: Activation, siblings: Sequence[Activation]) -> tuple[str, ...]:
    """The rule as written: later integration messages of the same session, agent context and
    turn (any turn for a record without one), in step order, each message once."""
    step = activation.integration_step_id
    if step is None:
        return ()
    turn = activation.request_step_id
    later = sorted(
        (s.integration_step_id, s.integration_message)
        for s in siblings
        if s.session_id == activation.session_id
        and s.decision_trajectory_id == activation.decision_trajectory_id
        and (turn is None or s.request_step_id == turn)
        and s.integration_step_id is not None
        and s.integration_step_id > step
        and s.integration_message
    )
    return tuple(dict.fromkeys(message for _, message in later if message))


def activation(
    n: int, session: str, where: str, turn: int | None, step: int | None, message: str | None
) -> Activation:
    return Activation.model_construct(
        activation_id=f"a{n}",
        session_id=session,
        decision_trajectory_id=where,
        request_step_id=turn,
        integration_step_id=step,
        integration_message=message,
    )


_ONE = st.tuples(
    st.sampled_from(["s1", "s2"]),
    st.sampled_from(["main", "main/toolu_sub"]),
    st.one_of(st.none(), st.integers(1, 3)),
    st.one_of(st.none(), st.integers(1, 12)),
    st.one_of(st.none(), st.sampled_from(["", "done", "next", "the total is 133"])),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ONE, max_size=25))
def test_the_index_finds_what_a_scan_finds(found: list[tuple[object, ...]]) -> None:
    siblings = [activation(n, *row) for n, row in enumerate(found)]  # type: ignore[arg-type]
    index = LaterMessages(siblings)
    for one in siblings:
        assert index.after(one) == scanned(one, siblings)
        assert LaterMessages(siblings).after(one) == scanned(one, siblings)  # one at a time


def test_later_turns_and_other_contexts_are_left_out() -> None:
    first = activation(0, "s1", "main", 1, 2, "calling the next tool")
    same_turn = activation(1, "s1", "main", 1, 5, "the total is 133")
    repeated = activation(2, "s1", "main", 1, 7, "the total is 133")
    next_turn = activation(3, "s1", "main", 2, 9, "another request's answer")
    subagent = activation(4, "s1", "main/toolu_sub", 1, 6, "the subagent's own")
    siblings = [next_turn, subagent, repeated, same_turn, first]
    assert LaterMessages(siblings).after(first) == ("the total is 133",)
    unturned = activation(5, "s1", "main", None, 1, "before turns were recorded")
    assert LaterMessages([*siblings, unturned]).after(unturned) == (
        "calling the next tool",
        "the total is 133",
        "another request's answer",
    )
