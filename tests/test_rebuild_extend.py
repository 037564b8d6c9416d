"""A Claude Code session rebuilt after each prompt by extending the rebuild before.

The prompts are the recorded scenarios (real CLI exports: skills, a subagent, a failing tool,
a gateway without request ids, tool content off), made one session of many prompts. After each
prompt, what the extension gives must be what a rebuild from all of the session's rows gives
(the whole ATIF document, every activation); where the new rows reach back into the old ones
(a late row of an earlier prompt, logs not in yet, another source's spans), the session is
rebuilt whole, and the result is the same again.
"""

from __future__ import annotations

import copy
import itertools
import operator
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from benchmarks.rebuild import raw_tables
from skillsight.rebuild.catalogue import Catalogue
from skillsight.rebuild.finalizer import SessionRowCache, rebuild_sessions
from skillsight.rebuild.session import Rebuilt, rebuild_or_extend, rebuild_session
from skillsight.rebuild.trajectories import Span, atif
from skillsight.rebuild.trajectories._cc_facts import ReadFacts
from skillsight.rebuild.trajectories._claude_code import read as read_claude_code
from skillsight.rebuild.trajectories._rows import unique_events, unique_spans
from skillsight.store import EmbeddedStore
from skillsight.store.records import SkillContract
from tests.support.captures import SCENARIOS, store_capture

NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "manifest.json").exists())
VARIANTS = ("claude_code", "claude_code_no_request_id", "claude_code_no_tool_content")
KEY = "5e551011-0000-4000-8000-00000000e47d"
_MINUTE = 60_000_000_000
Rows = tuple[list[dict[str, Any]], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def captured() -> dict[tuple[str, str], Rows]:
    """Each scenario's rows per variant (and its OpenInference export), as the store reads them
    (the store closed again: one embedded store is open in a process at a time)."""
    with tempfile.TemporaryDirectory(prefix="skillsight-extend-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        store.migrate()
        out: dict[tuple[str, str], Rows] = {}
        try:
            for name in NAMES:
                for variant in (*VARIANTS, "openinference"):
                    folder = SCENARIOS / name / variant
                    if not folder.is_dir():
                        continue
                    project = f"{name}.{variant}"
                    store_capture(store, project, folder)
                    spans = store.spans.find(project, limit=10_000)
                    events = store.events.find(project, limit=10_000)
                    out[(name, variant)] = (spans, events)  # type: ignore[assignment]
        finally:
            store.close()
    return out


def as_prompt(rows: Rows, index: int) -> Rows:
    """One scenario's rows as the ``index``-th prompt of session ``KEY``: a minute after the
    prompt before (each scenario is one trace, with its own ids, as the CLI sends a prompt)."""
    spans, events = copy.deepcopy(rows)
    first = min(
        [int(s["start_time_unix_nano"]) for s in spans] + [int(e["time_unix_nano"]) for e in events]
    )
    shift = 1_800_000_000_000_000_000 + index * 10 * _MINUTE - first
    for span in spans:
        span["start_time_unix_nano"] = int(span["start_time_unix_nano"]) + shift
        span["end_time_unix_nano"] = int(span["end_time_unix_nano"]) + shift
    for event in events:
        event["time_unix_nano"] = int(event["time_unix_nano"]) + shift
    for row in (*spans, *events):
        row["session_id"] = KEY
        if "session.id" in row["attributes"]:
            row["attributes"]["session.id"] = KEY
    return spans, events


def insert(store: EmbeddedStore, rows: Rows) -> None:
    """Rows as the store reads them, stored again (their session id normalized on insert)."""
    spans, events = raw_tables("p", *rows)
    store.spans.insert(spans)
    store.events.insert(events)


def view(rebuilt: Rebuilt) -> tuple[str, list[dict[str, Any]]]:
    return rebuilt.trajectory.model_dump_json(), [a.model_dump() for a in rebuilt.activations]


def replay(prompts: list[Rows]) -> tuple[list[Rebuilt], list[Rebuilt]]:
    """Each prompt's rows added in turn: the extended rebuilds and the whole ones."""
    spans: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    extended: list[Rebuilt] = []
    whole: list[Rebuilt] = []
    previous: Rebuilt | None = None
    for new_spans, new_events in prompts:
        spans += new_spans
        events += new_events
        previous = rebuild_or_extend(
            spans,
            events,
            previous=previous,
            new=(new_spans, new_events),
            project_id="p",
            catalogue=None,
            session_id=KEY,
        )
        extended.append(previous)
        whole.append(rebuild_session(spans, events, project_id="p", session_id=KEY))
    return extended, whole


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_new_prompt_extends_the_session_and_reads_as_its_whole_rebuild(
    captured: dict[tuple[str, str], Rows], variant: str
) -> None:
    prompts = [as_prompt(captured[(name, variant)], i) for i, name in enumerate(NAMES)]
    extended, whole = replay(prompts)
    # one prompt keeps no basis (its turn's rebuilds are whole); from the second on, one is kept
    assert [r.extended for r in extended] == [False, False] + [True] * (len(NAMES) - 2)
    assert [r.basis is None for r in extended] == [True] + [False] * (len(NAMES) - 1)
    for index, (got, want) in enumerate(zip(extended, whole, strict=True)):
        assert view(got) == view(want), f"after prompt {index} ({NAMES[index]})"
        # as the store writes it: the kept steps' texts, and the new ones
        stored = got.trajectory.compact_json()
        assert stored == want.trajectory.model_dump_json(exclude_none=True)
    last = extended[-1].trajectory
    assert last.final_metrics is not None and last.final_metrics.total_steps == len(last.steps)
    assert len(last.extra["trace_ids"]) == len(NAMES)  # type: ignore[index]
    assert last.subagent_trajectories  # the subagent scenario's run, carried along
    # the earlier steps are the same objects: extended, not converted again
    assert last.steps[0] is extended[2].trajectory.steps[0]
    assert sum(len(r.activations) for r in extended[-1:]) >= len(NAMES) - 2
    # and so are the items the extraction derived from them, where no loose skill event or
    # activation span places items across the whole context
    reused = 0
    for before, after in itertools.pairwise(extended):
        assert after.timeline is not None and after.timeline.steps == tuple(after.trajectory.steps)
        if before.timeline is None or not after.extended:
            continue
        head = before.timeline.items
        same = all(map(operator.is_, head, after.timeline.items[: len(head)]))
        assert same == (before.timeline.extendable and after.timeline.extendable)
        reused += same
    assert reused >= 2


def without_trace_context(rows: Rows, index: int, *, restarted: bool = False) -> Rows:
    """What a deployment without the CLI's enhanced telemetry beta sends of the ``index``-th
    prompt: log events alone, with no trace or span ids, numbered on from the prompt before
    (one CLI process), or from 0 again (``restarted``, as each recorded scenario was)."""
    events = []
    for event in rows[1]:
        attributes = dict(event["attributes"])
        sequence = attributes.get("event.sequence", "")
        if sequence.isdigit() and not restarted:
            attributes["event.sequence"] = str(int(sequence) + index * 1_000_000)
        events.append({**event, "trace_id": "", "span_id": "", "attributes": attributes})
    return [], events


def test_a_session_of_log_events_alone_is_extended_by_its_prompts(
    captured: dict[tuple[str, str], Rows],
) -> None:
    """Without traces the prompts are told apart by their prompt ids: from the third on, each
    extends the rebuild before, and each reads as the whole rebuild."""
    prompts = [
        without_trace_context(as_prompt(captured[(name, "claude_code")], i), i)
        for i, name in enumerate(NAMES)
    ]
    extended, whole = replay(prompts)
    assert [r.extended for r in extended] == [False, False] + [True] * (len(NAMES) - 2)
    for index, (got, want) in enumerate(zip(extended, whole, strict=True)):
        assert view(got) == view(want), f"after prompt {index} ({NAMES[index]})"
    assert extended[-1].trajectory.extra["trace_ids"] == []  # type: ignore[index]
    assert sum(len(r.activations) for r in extended[-1:]) >= len(NAMES) - 2
    # a CLI started again numbers its events from 0: without trace context a response could
    # then pair with an earlier prompt's request, so such a prompt is rebuilt whole
    restarted = [
        without_trace_context(as_prompt(captured[(name, "claude_code")], i), i, restarted=True)
        for i, name in enumerate(NAMES)
    ]
    extended, whole = replay(restarted)
    assert not any(r.extended for r in extended)
    for index, (got, want) in enumerate(zip(extended, whole, strict=True)):
        assert view(got) == view(want), f"after prompt {index} ({NAMES[index]}), restarted"


def test_rows_that_reach_back_rebuild_the_session_whole(
    captured: dict[tuple[str, str], Rows],
) -> None:
    """A late event of an earlier prompt, a prompt whose logs are not in yet, and another
    source's spans: each rebuilt whole, each the same as a whole rebuild."""
    prompts = [as_prompt(captured[(name, "claude_code")], i) for i, name in enumerate(NAMES[:6])]
    late = prompts[1][1].pop()  # an event of the second prompt arrives with the fourth
    prompts[3] = (prompts[3][0], [*prompts[3][1], late])
    spans_first, events_later = prompts[4]  # the fifth's traces before its logs
    prompts[4:5] = [(spans_first, []), ([], events_later)]
    other = as_prompt(captured[(NAMES[6], "openinference")], 6)
    prompts.append(other)
    extended, whole = replay(prompts)
    for index, (got, want) in enumerate(zip(extended, whole, strict=True)):
        assert view(got) == view(want), f"after delivery {index}"
    assert [r.extended for r in extended] == [
        False,  # the first prompt
        False,  # the second: whole, keeping a basis
        True,
        False,  # with a row of the second prompt
        False,  # spans without their events: whether texts were logged is not known alike
        False,  # the events of traces read before
        True,  # the sixth prompt: extends that whole rebuild
        False,  # another source's spans
    ]
    assert extended[-1].basis is None  # and no basis once several sources are merged


def test_a_session_whose_basis_is_gone_is_rebuilt_whole(
    captured: dict[tuple[str, str], Rows],
) -> None:
    prompts = [as_prompt(captured[(name, "claude_code")], i) for i, name in enumerate(NAMES[:3])]
    kw: dict[str, Any] = {"project_id": "p", "catalogue": None, "session_id": KEY}
    two = (prompts[0][0] + prompts[1][0], prompts[0][1] + prompts[1][1])
    first = rebuild_or_extend(*two, previous=None, new=None, **kw)
    assert first.basis is not None and not first.extended
    three = (two[0] + prompts[2][0], two[1] + prompts[2][1])
    # the rows read since are unknown (a held row changed): whole
    assert not rebuild_or_extend(*three, previous=first, new=None, **kw).extended
    assert rebuild_or_extend(*three, previous=first, new=prompts[2], **kw).extended
    assert not rebuild_or_extend(*three, previous=None, new=prompts[2], **kw).extended
    # a rebuild by another algorithm carries no basis
    plain = rebuild_session(*two, project_id="p", session_id=KEY)
    assert plain.basis is None
    assert not rebuild_or_extend(*three, previous=plain, new=prompts[2], **kw).extended
    # nor does a session of one trace: its next prompt's rebuild is whole
    alone = rebuild_or_extend(*prompts[0], previous=None, new=None, **kw)
    assert alone.basis is None
    assert not rebuild_or_extend(*two, previous=alone, new=prompts[1], **kw).extended


def test_the_finalizers_pass_extends_what_its_row_cache_holds(
    captured: dict[tuple[str, str], Rows], tmp_path: Path
) -> None:
    """Through the store: each prompt inserted, then the pass as the finalizer runs it (the row
    cache, skillsight's own rebuild). Every rebuild after the second extends the one before,
    and each equals a whole rebuild of what the store holds."""
    store = EmbeddedStore(tmp_path / "store")
    store.migrate()
    cache = SessionRowCache(overlap_us=0)
    try:
        through = 0
        for index, name in enumerate(NAMES):
            insert(store, as_prompt(captured[(name, "claude_code")], index))
            for arrival in store.sessions.arrivals(0):
                if arrival.session_key == KEY:
                    through = arrival.last_ingested_us
            outcomes, _ = rebuild_sessions(store, [("p", KEY, through)], cache=cache)
            got = outcomes[0].rebuilt
            # the first rebuild keeps no basis (most sessions are one prompt); the second does
            assert isinstance(got, Rebuilt) and got.extended == (index > 1)
            assert (got.basis is None) == (index == 0)
            stored = store.sessions.rows_of("p", [KEY])[KEY]
            want = rebuild_session(*stored, project_id="p", session_id=KEY)
            assert view(got) == view(want)
            # the document as stored: the earlier steps' text reused from the write before
            assert store.trajectories.get("p", KEY) == want.trajectory.model_dump_json(
                exclude_none=True
            )
        assert cache.stats.extended == len(NAMES) - 2
        assert cache.stats.rebuilt_whole == 2
        # a rebuild by a function of the caller's own is never extended
        outcomes, _ = rebuild_sessions(
            store, [("p", KEY, through)], cache=cache, rebuild=rebuild_session
        )
        assert cache.stats.extended == len(NAMES) - 2
        assert outcomes[0].rebuilt is not None
        assert atif.Trajectory.model_validate(outcomes[0].rebuilt.trajectory.model_dump())
    finally:
        store.close()


def test_the_row_cache_tells_what_was_read_since_the_last_rebuild(
    captured: dict[tuple[str, str], Rows], tmp_path: Path
) -> None:
    """Rows read again unchanged are not new; a row read again with other values leaves the
    rows since unknown, so the next rebuild is whole."""
    store = EmbeddedStore(tmp_path / "store")
    store.migrate()
    cache = SessionRowCache(overlap_us=10**15)  # every read reads everything again
    try:
        first = as_prompt(captured[(NAMES[0], "claude_code")], 0)
        insert(store, first)
        insert(store, as_prompt(captured[(NAMES[1], "claude_code")], 1))
        (arrival,) = [a for a in store.sessions.arrivals(0) if a.session_key == KEY]
        batch = [("p", KEY, arrival.last_ingested_us)]
        rebuild_sessions(store, batch, cache=cache)
        # a first rebuild keeps nothing to extend; the second keeps its basis (two prompts)
        assert cache.rebuilt_before("p", KEY) and cache.since_built("p", KEY) == (None, None)
        rebuild_sessions(store, batch, cache=cache)
        held_before, rows_since = cache.since_built("p", KEY)
        assert held_before is not None and held_before.basis is not None
        assert rows_since == ([], [])  # every row read again, each unchanged
        again, _ = rebuild_sessions(store, batch, cache=cache)
        # nothing new: the rebuild before, extended by nothing
        assert cache.stats.extended == 1 and cache.stats.rebuilt_whole == 2
        assert again[0].rebuilt is not None
        assert again[0].rebuilt.trajectory is held_before.trajectory
        # the same span again with another status: changed, not new
        spans, _ = first
        changed = copy.deepcopy(spans[0])
        changed["status_code"] = "error" if changed["status_code"] != "error" else "ok"
        changed["end_time_unix_nano"] += 1
        store.spans.insert(raw_tables("p", [changed], [])[0])
        (arrival,) = [a for a in store.sessions.arrivals(0) if a.session_key == KEY]
        outcomes, _ = rebuild_sessions(store, [("p", KEY, arrival.last_ingested_us)], cache=cache)
        rebuilt = outcomes[0].rebuilt
        assert isinstance(rebuilt, Rebuilt) and not rebuilt.extended
        assert cache.stats.rebuilt_whole == 3
        assert Span(changed).failed != Span(spans[0]).failed
        stored = store.sessions.rows_of("p", [KEY])[KEY]
        assert view(rebuilt) == view(rebuild_session(*stored, project_id="p", session_id=KEY))
    finally:
        store.close()


def facts_of(rows: Rows) -> ReadFacts:
    """What the Claude Code reader finds in one prompt's rows."""
    facts = ReadFacts()
    spans, events = unique_spans(rows[0]), unique_events(rows[1])
    read_claude_code(spans, events, KEY, facts)
    return facts


RULES = (
    "starts before the end",
    "names an id",
    "a trace of spans read before",
    "a trace of events read before",
    "texts logged on one side only",
    "a masked name looked for later",
    "ids trusted on one side only",
    "unpaired on both sides",
    "a response to a request read before",
    "sequence numbers started again",
    "a call whose context has requests before",
    "a call owned by no request of its own",
    "requests without trace context numbered again",
)


def break_rule(rule: str, old: ReadFacts, new: ReadFacts) -> None:
    context = ("trace", "span", "agent")
    match rule:
        case "starts before the end":
            new.first_ns = old.last_ns
        case "names an id":
            new.names.add(next(iter(old.names)))
        case "a trace of spans read before":
            new.span_traces.append(old.span_traces[0])
        case "a trace of events read before":
            new.event_traces.append(old.span_traces[0])
        case "texts logged on one side only":
            new.logged_text = not old.logged_text
        case "a masked name looked for later":
            old.open_names = True
        case "ids trusted on one side only":
            new.keys.trusted = not old.keys.trusted
        case "unpaired on both sides":
            old.keys.unpaired_spans = new.keys.unpaired_events = True
        case "a response to a request read before":
            old.keys.awaiting.add(context)
            new.keys.started.add(context)
        case "sequence numbers started again":
            new.keys.awaiting.add(context)
            old.keys.started.add(context)
        case "a call whose context has requests before":
            new.fallbacks.append(("", True))
        case "a call owned by no request of its own":
            new.fallbacks.append(("toolu_new_subagent", False))
        case "requests without trace context numbered again":
            old.keys.untraced = ((5, 0, "a"), (9, 0, "b"))
            new.keys.untraced = ((1, 10, "c"), (3, 10, "d"))


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_that_reaches_across_prompts_refuses_the_extension(
    captured: dict[tuple[str, str], Rows], rule: str
) -> None:
    """Two prompts that extend; each rule broken on its own refuses."""
    old = facts_of(as_prompt(captured[(NAMES[0], "claude_code")], 0))
    new = facts_of(as_prompt(captured[(NAMES[1], "claude_code")], 1))
    assert old.extended_by(new)
    break_rule(rule, old, new)
    assert not old.extended_by(new)


def test_a_call_of_a_new_context_may_take_an_earlier_request_of_its_prompt(
    captured: dict[tuple[str, str], Rows],
) -> None:
    old = facts_of(as_prompt(captured[(NAMES[0], "claude_code")], 0))
    new = facts_of(as_prompt(captured[(NAMES[1], "claude_code")], 1))
    new.fallbacks.append(("toolu_new_subagent", True))
    assert old.extended_by(new)


def test_activations_follow_the_catalogue_and_workspace_as_they_are_now(
    captured: dict[tuple[str, str], Rows],
) -> None:
    """The earlier prompts' activations are kept only while they would be joined alike: a
    skill registered between two prompts, or another working directory winning the vote, gives
    them what a whole rebuild gives."""
    prompts = [as_prompt(captured[(name, "claude_code")], i) for i, name in enumerate(NAMES[:4])]
    skill = next(
        a.skill_name
        for a in rebuild_session(*prompts[0], project_id="p", session_id=KEY).activations
    )
    registered = Catalogue(
        {skill: [SkillContract(name=skill, description="registered later", version="2")]}
    )
    spans: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    previous: Rebuilt | None = None
    elsewhere = as_prompt(captured[("two_skills", "claude_code")], 4)  # the most rows
    for row in (*elsewhere[0], *elsewhere[1]):  # most rows of the session report another folder
        for attributes in (row["attributes"], row["resource_attributes"]):
            if "process.working_directory" in attributes:
                attributes["process.working_directory"] = "/srv/elsewhere"
        row["attributes"]["process.working_directory"] = "/srv/elsewhere"
    for index, (new, catalogue) in enumerate(
        [
            (prompts[0], None),
            (prompts[1], None),
            (prompts[2], registered),
            (prompts[3], registered),
            (elsewhere, registered),
        ]
    ):
        spans += new[0]
        events += new[1]
        previous = rebuild_or_extend(
            spans,
            events,
            previous=previous,
            new=new,
            project_id="p",
            catalogue=catalogue,
            session_id=KEY,
        )
        whole = rebuild_session(spans, events, project_id="p", catalogue=catalogue, session_id=KEY)
        assert previous.extended == (index > 1)
        assert view(previous) == view(whole), f"after prompt {index}"
    assert previous is not None
    first = next(a for a in previous.activations if a.skill_name == skill)
    assert first.contract is not None and first.contract.version == "2"
    assert {a.workspace for a in previous.activations} == {"/srv/elsewhere"}


def test_the_stored_text_of_a_trajectory_is_its_compact_json() -> None:
    """What the store writes (each step's text kept on the step) is pydantic's own compact
    form, with non-finite numbers as null, any text, and every optional part left out."""
    document = {
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {
                "step_id": 1,
                "source": "agent",
                "message": 'é \u2028 "quoted" \\ \n',
                "metrics": {"cost_usd": float("inf"), "prompt_tokens": 3},
            },
            {"step_id": 2, "source": "user", "message": ""},
        ],
        "extra": {"k": float("nan"), "list": [1, None]},
        "subagent_trajectories": [
            {"trajectory_id": "s", "agent": {"name": "b", "version": "2"}, "steps": []}
        ],
    }
    trajectory = atif.Trajectory.model_validate(document)
    expected = trajectory.model_dump_json(exclude_none=True)
    assert trajectory.compact_json() == expected
    assert trajectory.compact_json() == expected  # the second time from the kept texts
    bare = atif.Trajectory.model_validate({"agent": {"name": "a", "version": "1"}, "steps": []})
    assert bare.compact_json() == bare.model_dump_json(exclude_none=True)
    # a copy with other steps writes its own, whatever text it was copied with
    fewer = trajectory.model_copy(update={"steps": trajectory.steps[:1]})
    assert fewer.compact_json() == fewer.model_dump_json(exclude_none=True)
    other = atif.Step.model_validate({"step_id": 1, "source": "user", "message": "other"})
    swapped = trajectory.model_copy(update={"steps": [other, trajectory.steps[1]]})
    assert swapped.compact_json() == swapped.model_dump_json(exclude_none=True)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_way_the_rows_arrive_the_rebuild_is_the_whole_one(
    captured: dict[tuple[str, str], Rows], data: st.DataObject
) -> None:
    """Six prompts' rows delivered in any grouping (a prompt split over deliveries, spans
    before or after their events, rows of several prompts together, a row repeated): after
    each delivery the rebuild, extended or whole, is the rebuild of everything delivered."""
    variant = data.draw(st.sampled_from(VARIANTS))
    untraced = data.draw(st.booleans())  # log events alone, without trace context
    names = data.draw(st.permutations(NAMES).map(lambda found: found[:6]))
    prompts = [as_prompt(captured[(name, variant)], i) for i, name in enumerate(names)]
    if untraced:  # one CLI process, or one started again for each prompt
        restarted = data.draw(st.booleans())
        prompts = [
            without_trace_context(prompt, i, restarted=restarted)
            for i, prompt in enumerate(prompts)
        ]
    rows = [("span", row, i) for i, prompt in enumerate(prompts) for row in prompt[0]]
    rows += [("event", row, i) for i, prompt in enumerate(prompts) for row in prompt[1]]
    rows.sort(key=lambda found: _time_of(found[1]))  # roughly as they would arrive
    # between prompts (where an extension can happen) and anywhere else
    boundaries = [i for i in range(1, len(rows)) if rows[i][2] != rows[i - 1][2]]
    at_boundaries = data.draw(st.lists(st.booleans(), min_size=5, max_size=5))
    anywhere = data.draw(st.lists(st.integers(1, 10_000), max_size=8))
    cuts = sorted(
        {b for b, cut in zip(boundaries, at_boundaries, strict=False) if cut}
        | {1 + n % (len(rows) - 1) for n in anywhere}
    )
    late = [n % len(rows) for n in data.draw(st.lists(st.integers(0, 10_000), max_size=3))]
    deliveries: list[Rows] = []
    for start, end in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        chunk = rows[start:end] + [rows[i] for i in late if i < start]  # a few rows again
        deliveries.append(
            (
                [r for kind, r, _ in chunk if kind == "span"],
                [r for kind, r, _ in chunk if kind == "event"],
            )
        )
    extended, whole = replay(deliveries)
    for got, want in zip(extended, whole, strict=True):
        assert view(got) == view(want)
        assert got.trajectory.compact_json() == want.trajectory.model_dump_json(exclude_none=True)
    tally("extended" if any(r.extended for r in extended) else "never extended")


def _time_of(row: dict[str, Any]) -> int:
    return int(row.get("end_time_unix_nano") or row.get("time_unix_nano") or 0)
