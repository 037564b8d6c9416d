"""The completeness rule tallied as rows are read agrees with the rule read literally.

The row cache counts, for each session it holds, what the rule needs of the rows it has added
(:class:`CompletenessTally`), so a session of many prompts is not looked at whole after each;
``is_complete`` tallies all the rows the same way. Over the recorded scenarios' rows, in any
order and any subset (parent spans and request events missing, rows repeated), the tally's
answer, whenever it gives one, is the rule's as written below, and ``is_complete``'s always.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillsight.rebuild._completeness import CompletenessTally
from skillsight.rebuild.finalizer import is_complete
from skillsight.rebuild.trajectories import (
    REQUEST_EVENTS,
    REQUEST_SPAN,
    Event,
    Span,
    requests_logged,
)
from skillsight.store import EmbeddedStore
from tests.support.captures import SCENARIOS, store_capture

CAPTURES = ("one_skill", "subagent_skill", "tool_error")
VARIANTS = ("claude_code", "claude_code_no_request_id")
Rows = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def literal_rule(spans: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
    """Every span's parent arrived; with request events, every request span's id logged by
    one, else the request spans and events paired by context and order."""
    present = {(s["trace_id"], s["span_id"]) for s in spans}
    if any(
        s["parent_span_id"] and (s["trace_id"], s["parent_span_id"]) not in present for s in spans
    ):
        return False
    requests = [e for e in events if e["event_name"] in REQUEST_EVENTS]
    if not requests:
        return True
    request_spans = [s for s in spans if s["name"] == REQUEST_SPAN]
    logged = {e["attributes"].get("request_id", "") for e in requests}
    named = [
        s["attributes"].get("request_id", "") or s["attributes"].get("gen_ai.response.id", "")
        for s in request_spans
    ]
    if all(named) and logged.issuperset(named):
        return True
    return requests_logged([Span(s) for s in request_spans], [Event(e) for e in requests])


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rows]:
    store = EmbeddedStore(tmp_path_factory.mktemp("tally") / "store")
    store.migrate()
    out: dict[str, Rows] = {}
    try:
        for variant in VARIANTS:
            project = variant
            for name in CAPTURES:
                store_capture(store, project, SCENARIOS / name / variant)
            spans = store.spans.find(project, limit=10_000)
            events = store.events.find(project, limit=10_000)
            out[variant] = (spans, events)  # type: ignore[assignment]
    finally:
        store.close()
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_tally_answers_as_the_rule_on_all_rows(
    captured: dict[str, Rows], data: st.DataObject
) -> None:
    variant = data.draw(st.sampled_from(VARIANTS))
    spans, events = captured[variant]
    kept_spans = data.draw(st.lists(st.sampled_from(spans), unique_by=id, max_size=len(spans)))
    kept_events = data.draw(st.lists(st.sampled_from(events), unique_by=id, max_size=len(events)))
    rows = [("span", s) for s in kept_spans] + [("event", e) for e in kept_events]
    order = data.draw(st.permutations(rows))
    tally = CompletenessTally()
    added_spans: list[dict[str, Any]] = []
    added_events: list[dict[str, Any]] = []
    for kind, row in order:
        if kind == "span":
            tally.add_span(row)
            added_spans.append(row)
        else:
            tally.add_event(row)
            added_events.append(row)
        told = tally.complete()
        expected = literal_rule(added_spans, added_events)
        if told is not None:
            assert told == expected
        assert is_complete(added_spans, added_events) == expected


def test_the_tally_answers_the_common_cases(captured: dict[str, Rows]) -> None:
    spans, events = captured["claude_code"]
    tally = CompletenessTally()
    for span in spans:
        tally.add_span(span)
    assert tally.complete() is True  # no request events yet: not held back
    for event in events:
        tally.add_event(event)
    assert tally.complete() is True and is_complete(spans, events) and literal_rule(spans, events)
    orphan = {**spans[0], "span_id": "f" * 16, "parent_span_id": "e" * 16}
    tally.add_span(orphan)
    assert tally.complete() is False and not is_complete([*spans, orphan], events)
    assert not literal_rule([*spans, orphan], events)
    # without request ids, only the pairing by context and order can tell
    spans, events = captured["claude_code_no_request_id"]
    tally = CompletenessTally()
    for span in spans:
        tally.add_span(span)
    for event in events:
        tally.add_event(event)
    assert tally.complete() is None and is_complete(spans, events) and literal_rule(spans, events)
