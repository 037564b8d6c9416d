"""Which model request a Claude Code tool call without a request id belongs to.

Behind a gateway that drops the ``request-id`` header, a tool call goes to the latest model
request of its agent context that started before it (any context's when that one has none).
The reader finds it by bisection; these compare it with the rule read literally, a scan of every
request, over generated sessions with subagents, equal start times and calls before any request.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from skillsight.rebuild.trajectories._claude_code import _Latest, _LlmCall


def _scanned(calls: list[_LlmCall], time_ns: int, context: object) -> tuple[_LlmCall | None, bool]:
    """The owner, and whether it is of the call's own context."""
    owner = anywhere = None
    for call in calls:
        if call.start_ns <= time_ns:
            anywhere = call
            if call.parent_call == context:
                owner = call
    return (owner, True) if owner is not None else (anywhere, False)


_CONTEXTS = st.sampled_from(["", "toolu_task_a", "toolu_task_b"])


@settings(max_examples=300, deadline=None)
@given(
    requests=st.lists(st.tuples(st.integers(0, 50), _CONTEXTS), max_size=40),
    looks=st.lists(
        st.tuples(st.integers(-5, 55), st.one_of(_CONTEXTS, st.just("toolu_other"), st.none())),
        min_size=1,
        max_size=20,
    ),
)
def test_the_owner_found_by_bisection_is_the_one_a_scan_finds(
    requests: list[tuple[int, str]], looks: list[tuple[int, object]]
) -> None:
    calls = [
        _LlmCall(key=f"req-{n:03d}", start_ns=start, parent_call=context)
        for n, (start, context) in enumerate(requests)
    ]
    calls.sort(key=lambda c: (c.start_ns, c.key))  # as the reader orders the main loop
    latest = _Latest(calls)
    for time_ns, context in looks:
        found, own = latest.before(time_ns, context)
        assert (found, own) == _scanned(calls, time_ns, context)


def test_a_subagents_call_goes_to_its_own_context_before_the_main_agents_later_request() -> None:
    main = _LlmCall(key="a", start_ns=10)
    sub = _LlmCall(key="b", start_ns=20, parent_call="toolu_task")
    later_main = _LlmCall(key="c", start_ns=30)
    latest = _Latest([main, sub, later_main])
    assert latest.before(35, "toolu_task") == (sub, True)
    assert latest.before(35, "") == (later_main, True)
    assert latest.before(15, "toolu_task") == (main, False)  # none of its context yet: any's
    assert latest.before(5, "") == (None, False)
