"""Claude Code's native telemetry (``claude_code.*`` spans and log events) → an agent draft.

The events carry what the spans lack (prompt and response text, tool inputs, cost), the spans
carry what the events lack (exact timing, span ids, Bash output in ``tool.output``), and either
may be missing: without ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA`` there are no spans, and a
collector may receive only one signal. Everything is keyed by what both share: ``request_id``
for LLM calls, ``tool_use_id`` for tool calls, ``prompt.id`` / the interaction span for prompts.
docs/claude-code-telemetry.md describes the names used here.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from skillsight.rebuild.trajectories._cc_facts import ReadFacts, names_in
from skillsight.rebuild.trajectories._cc_pairing import (
    REQUEST_SPAN,
    RequestKeys,
    pair_requests,
    request_id_of,
)
from skillsight.rebuild.trajectories._cc_skills import claim_skill_events, name_unnamed_skills
from skillsight.rebuild.trajectories._draft import (
    REDACTED,
    AgentDraft,
    CallDraft,
    StepDraft,
    Usage,
)
from skillsight.rebuild.trajectories._rows import Event, Span, json_object

SOURCE = "claude_code"

# LLM calls the CLI makes beside the agent loop; they cost money but are not agent steps.
SIDE_QUERY_SOURCES = frozenset(
    {"generate_session_title", "session_title", "compact", "prompt_suggestion", "away_summary"}
)

_MS = 1_000_000


@dataclass
class _LlmCall:
    key: str
    request_id: str = ""  # the API's request-id ("" behind a gateway that sends none)
    start_ns: int = 0
    end_ns: int = 0
    span_id: str = ""
    trace_id: str = ""
    model: str = ""
    query_source: str = ""
    skill: str = ""
    stop_reason: str = ""
    usage: Usage | None = None
    text: str | None = None
    logged: bool = False  # an event of this request arrived (its text is known if logged)
    prompt_id: str = ""
    parent_call: str = ""  # the Task/Agent call whose subagent made this request
    calls: list[CallDraft] = field(default_factory=list)


def _ns_from_ms(text: str) -> int:
    try:
        return int(float(text) * _MS)
    except ValueError:
        return 0


def read(
    spans: list[Span], events: list[Event], session_id: str, facts: ReadFacts | None = None
) -> AgentDraft:
    """The draft of a session's Claude Code rows; ``facts``, when given, is filled with what a
    later extension by new prompts must check (:class:`ReadFacts`)."""
    draft = AgentDraft(session_id=session_id, trajectory_id=session_id, source=SOURCE)
    draft.name = "claude-code"
    for span in spans:
        draft.version = draft.version or span.resource.get("service.version", "")
        if span.trace_id not in draft.trace_ids:
            draft.trace_ids.append(span.trace_id)
    span_traces = len(draft.trace_ids)
    for event in events:
        if event.trace_id and event.trace_id not in draft.trace_ids:
            draft.trace_ids.append(event.trace_id)

    prompts = _prompts(spans, events)
    calls, execution_span_to_call = _tool_calls(spans, events)
    keys = pair_requests(spans, events)
    llm = _llm_calls(spans, events, execution_span_to_call, keys)
    claim_skill_events(draft, events, calls, execution_span_to_call)

    main_loop = [c for c in llm.values() if c.query_source not in SIDE_QUERY_SOURCES]
    main_loop.sort(key=lambda c: (c.start_ns, c.key))
    # in time order, so that a session's cost sums the same however its prompts were read
    side_calls = sorted(
        (c for c in llm.values() if c.query_source in SIDE_QUERY_SOURCES and c.usage is not None),
        key=lambda c: (c.start_ns, c.key),
    )
    for side in side_calls:
        if side.usage is not None:
            draft.side_usage.add(side.usage)
            draft.side_requests += 1

    by_request = {c.request_id: c for c in main_loop if c.request_id}
    orphans: list[CallDraft] = []
    latest = _Latest(main_loop)
    fallbacks: list[tuple[str, bool]] = []
    for call in sorted(calls.values(), key=lambda c: (c.start_ns, c.call_id)):
        request = call.extra.pop("_request_id", "")
        owner = by_request.get(request) if request else None
        if owner is None:  # no request id (a gateway dropped it): the context's latest call
            context = call.extra.get("_parent_call", "")
            owner, own_context = latest.before(call.start_ns, context)
            if not own_context:
                fallbacks.append((context, owner is not None))
        (owner.calls if owner is not None else orphans).append(call)

    logged_text = any(e.name == "claude_code.assistant_response" for e in events)
    timeline: list[tuple[int, int, StepDraft]] = []
    for prompt in prompts:
        timeline.append((prompt.time_ns, 0, prompt))
    for call_ in main_loop:
        timeline.append((call_.start_ns, 1, _agent_step(call_, logged_text)))
    for orphan in orphans:
        step = StepDraft(source="agent", time_ns=orphan.start_ns, message_logged=False)
        step.calls.append(orphan)
        step.extra["llm_call_missing"] = True
        timeline.append((orphan.start_ns, 1, step))
    timeline.sort(key=lambda item: (item[0], item[1]))
    draft.steps = [step for _, _, step in timeline]
    open_names = name_unnamed_skills(draft)
    draft.model = next((s.model for s in draft.steps if s.model), "")
    unlogged = any(not s.message_logged for s in draft.steps if s.source in ("user", "agent"))
    note(draft, logs_received=bool(events), unlogged=unlogged)
    if facts is not None:
        facts.span_traces = draft.trace_ids[:span_traces]
        facts.event_traces = draft.trace_ids[span_traces:]
        facts.version, facts.model = draft.version, draft.model
        facts.names = names_in(spans, events, keys)
        facts.first_ns, facts.last_ns = _time_range(spans, events, llm, calls, prompts)
        facts.keys = keys.flags()
        facts.contexts = {c.parent_call for c in main_loop}
        facts.fallbacks = fallbacks
        facts.logged_text, facts.open_names = logged_text, open_names
        facts.side = [c.usage for c in side_calls if c.usage is not None]
        facts.has_events, facts.unlogged = bool(events), unlogged
    return draft


def note(draft: AgentDraft, *, logs_received: bool, unlogged: bool) -> None:
    """What the session's telemetry lacked, in the draft's notes."""
    if not logs_received:
        draft.extra["logs_received"] = False
        draft.notes.append(
            "Claude Code log events were not received: message texts, tool inputs and costs are "
            "unknown (export OTEL_LOGS_EXPORTER=otlp)."
        )
    if unlogged:
        draft.notes.append(
            "Claude Code did not log message text (OTEL_LOG_USER_PROMPTS is off, or the events "
            "are missing); those steps have an empty message and extra.message_logged = false."
        )


def _time_range(
    spans: list[Span],
    events: list[Event],
    llm: dict[str, _LlmCall],
    calls: dict[str, CallDraft],
    prompts: list[StepDraft],
) -> tuple[int, int]:
    """The earliest and latest time the rows tell or the reader derives (a request known only
    from its event starts its duration before the event)."""
    starts = [s.start_ns for s in spans] + [e.time_ns for e in events]
    starts += [c.start_ns for c in llm.values()] + [c.start_ns for c in calls.values()]
    starts += [p.time_ns for p in prompts]
    ends = [s.end_ns for s in spans] + [e.time_ns for e in events]
    ends += [c.end_ns for c in llm.values()] + [c.end_ns for c in calls.values()]
    return (min(starts), max(ends + starts)) if starts else (0, 0)


class _Latest:
    """The model requests of a session, sorted by ``(start_ns, key)``, by agent context."""

    def __init__(self, calls: list[_LlmCall]) -> None:
        self._calls = calls
        self._starts = [call.start_ns for call in calls]
        self._contexts: dict[str, tuple[list[int], list[_LlmCall]]] = {}
        for call in calls:
            starts, members = self._contexts.setdefault(call.parent_call, ([], []))
            starts.append(call.start_ns)
            members.append(call)

    def before(self, time_ns: int, context: object) -> tuple[_LlmCall | None, bool]:
        """The last model request of agent context ``context`` (the delegating call, "" for
        the main agent) that started before ``time_ns``; any context's when that one has none
        (then False with it). By bisection: a session's calls without a request id each
        looked at every request before, which grew with the square of a long session."""
        group = self._contexts.get(context) if isinstance(context, str) else None
        if group is not None and (index := bisect_right(group[0], time_ns)):
            return group[1][index - 1], True
        index = bisect_right(self._starts, time_ns)
        return (self._calls[index - 1] if index else None), False


def _text(value: str) -> tuple[str, bool]:
    return ("", False) if value == REDACTED else (value, True)


def _prompts(spans: list[Span], events: list[Event]) -> list[StepDraft]:
    steps: dict[str, StepDraft] = {}
    for event in events:
        if event.name != "claude_code.user_prompt":
            continue
        text, logged = _text(event.attr("prompt") or event.attr("prompt_text"))
        key = event.prompt_id or event.span_id or event.record_id
        step = StepDraft(source="user", time_ns=event.time_ns, message=text, message_logged=logged)
        step.extra["prompt_id"] = event.prompt_id
        step.span_id = event.span_id
        steps.setdefault(key, step)
    claimed = {s.span_id for s in steps.values()}
    for span in spans:
        if span.name != "claude_code.interaction" or span.span_id in claimed:
            continue
        prompt = span.attr("user_prompt")
        if not prompt and not span.attr("user_prompt_length"):
            continue
        text, logged = _text(prompt)
        step = StepDraft(source="user", time_ns=span.start_ns, message=text, message_logged=logged)
        step.span_id = span.span_id
        steps[span.span_id] = step
    # the interaction span starts a moment before its prompt event; the span's time orders it
    starts = {s.span_id: s.start_ns for s in spans if s.name == "claude_code.interaction"}
    for step in steps.values():
        if step.span_id in starts:
            step.time_ns = min(step.time_ns, starts[step.span_id])
    return sorted(steps.values(), key=lambda s: s.time_ns)


def _llm_calls(
    spans: list[Span], events: list[Event], execution_to_call: dict[str, str], keys: RequestKeys
) -> dict[str, _LlmCall]:
    calls: dict[str, _LlmCall] = {}
    for span in spans:
        if span.name != REQUEST_SPAN:
            continue
        key = keys.span_key[span.span_id]
        call = calls.get(key) or calls.setdefault(key, _LlmCall(key))
        call.request_id = call.request_id or request_id_of(span)
        call.start_ns, call.end_ns = span.start_ns, span.end_ns
        call.span_id, call.trace_id = span.span_id, span.trace_id
        call.model = call.model or span.model
        attributes = span.attributes
        call.query_source = call.query_source or attributes.get("query_source_safe", "")
        call.stop_reason = attributes.get("stop_reason", "")
        # a subagent's requests are children of its Agent/Task call's execution span
        call.parent_call = execution_to_call.get(span.parent_span_id, "")
        if call.usage is None:
            call.usage = _usage(span.input_tokens, span.output_tokens, span, None)
    for event in events:
        if event.name == "claude_code.api_request":
            key = keys.event_key.get(event.record_id) or event.record_id
            call = calls.get(key) or calls.setdefault(key, _LlmCall(key))
            call.request_id = call.request_id or request_id_of(event)
            if not call.span_id:
                call.end_ns = event.time_ns
                call.start_ns = event.time_ns - _ns_from_ms(event.attr("duration_ms"))
                # without spans, a subagent's events are logged under its Agent call's span
                call.parent_call = execution_to_call.get(event.span_id, "")
            call.model = event.model or call.model
            call.query_source = event.attr("query_source") or call.query_source
            call.skill = event.skill_name
            call.prompt_id = event.prompt_id
            call.logged = True
            # the event has the cost and the same token counts as the span
            call.usage = _usage(event.input_tokens, event.output_tokens, event, event.cost_usd)
        elif event.name == "claude_code.assistant_response":
            key = keys.event_key.get(event.record_id) or event.record_id
            call = calls.get(key) or calls.setdefault(key, _LlmCall(key))
            call.request_id = call.request_id or request_id_of(event)
            if not call.start_ns:
                call.start_ns = call.end_ns = event.time_ns
            call.model = call.model or event.model
            call.query_source = call.query_source or event.attr("query_source")
            call.text = event.attr("response")
            call.logged = True
    return calls


def _usage(input_tokens: int, output_tokens: int, row: Span | Event, cost: float | None) -> Usage:
    return Usage.of(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read=row.cache_read_tokens,
        cache_creation=row.cache_creation_tokens,
        cost_usd=cost,
        input_includes_cache=False,
    )


def _agent_step(call: _LlmCall, logged_text: bool) -> StepDraft:
    # A request whose events have not arrived (logs export apart from traces) said something
    # unknown, not nothing.
    text, logged = _text(call.text) if call.text is not None else ("", logged_text and call.logged)
    step = StepDraft(
        source="agent",
        time_ns=call.start_ns,
        end_ns=call.end_ns,
        message=text,
        message_logged=logged,
        calls=call.calls,
        model=call.model,
        usage=call.usage,
        llm_calls=1,
        span_id=call.span_id,
    )
    if call.request_id:
        step.extra["request_id"] = call.request_id
    if call.parent_call:
        step.extra["_parent_call"] = call.parent_call
    if call.skill:
        step.extra["active_skill"] = call.skill
    if call.stop_reason:
        step.extra["stop_reason"] = call.stop_reason
    return step


def _tool_calls(
    spans: list[Span], events: list[Event]
) -> tuple[dict[str, CallDraft], dict[str, str]]:
    calls: dict[str, CallDraft] = {}
    execution_to_call = {
        span.span_id: span.tool_call_id
        for span in spans
        if span.tool_call_id and span.name in ("claude_code.tool", "claude_code.tool.execution")
    }
    for span in spans:
        if span.name == "claude_code.tool" and span.tool_call_id:
            tool_name, skill_name = span.tool_name, span.skill_name
            call = calls.get(span.tool_call_id) or calls.setdefault(
                span.tool_call_id, CallDraft(span.tool_call_id, tool_name)
            )
            call.name = call.name or tool_name
            call.start_ns, call.end_ns = span.start_ns, span.end_ns
            call.span_id, call.trace_id = span.span_id, span.trace_id
            if span.parent_span_id in execution_to_call:
                call.extra["_parent_call"] = execution_to_call[span.parent_span_id]
            if skill_name:
                call.extra["skill"] = skill_name
            for span_event in span.events:
                if span_event.name == "tool.output":  # Bash: output; Read: content
                    found = span_event.attributes
                    call.result = found.get("output", found.get("content", call.result))
            if call.arguments is None:
                if tool_name == "Skill" and skill_name:
                    call.arguments = {"skill": skill_name}
                elif command := span.attributes.get("full_command", ""):
                    call.arguments = {"command": command}
            call.is_error = call.is_error or span.failed
        elif (
            span.name == "claude_code.tool.execution"
            and span.tool_call_id
            and (span.attr("success") == "false" or span.failed)
        ):
            calls.setdefault(span.tool_call_id, CallDraft(span.tool_call_id, "")).is_error = True
    for event in events:
        if event.name not in ("claude_code.tool_decision", "claude_code.tool_result"):
            continue
        if not event.tool_call_id:
            continue
        call = calls.get(event.tool_call_id) or calls.setdefault(
            event.tool_call_id, CallDraft(event.tool_call_id, event.tool_name)
        )
        call.name = call.name or event.tool_name
        if not call.span_id:  # without spans the decision and the result bound the call
            call.start_ns = min(call.start_ns or event.time_ns, event.time_ns)
            call.end_ns = max(call.end_ns, event.time_ns)
        attributes = event.attributes
        if attributes.get("request_id"):
            call.extra["_request_id"] = attributes["request_id"]
        tool_input = (
            None if "_exact" in call.extra else json_object(attributes.get("tool_input", ""))
        )
        if tool_input is not None:
            call.arguments = tool_input  # the real input beats what the span could tell
            call.extra["_exact"] = True
        elif call.arguments is None:
            parameters = json_object(attributes.get("tool_parameters", ""))
            if parameters is not None:
                call.arguments = parameters
        if event.name == "claude_code.tool_result" and attributes.get("success") == "false":
            call.is_error = True
        if event.name == "claude_code.tool_decision" and attributes.get("decision") == "reject":
            call.is_error = True
            call.extra["rejected"] = True
        if attributes.get("error"):
            call.extra["error"] = attributes["error"]
    for call in calls.values():
        if call.name:
            call.sources.append(SOURCE)
    return {k: v for k, v in calls.items() if v.name}, execution_to_call
