"""Synthetic sessions of normalized rows, shaped like Claude Code's native telemetry.

``synthetic_session(n)`` returns what ``Store.spans.find`` / ``list_events`` would return for a
session of one prompt and ``n`` agent steps that each make one tool call, then a final answer:
every ``skill_every``-th step (the first included) calls the ``Skill`` tool, the others run
``Bash``. The rows carry what the real CLI sends (request ids, ``tool_use_id``, tool input
JSON, ``tool.output`` span events, cost and ``skill.name`` on API requests), so rebuilding them
exercises the same code as a real session. Deterministic for a given ``seed``.
"""

from __future__ import annotations

import json
import random
from typing import Any

_SKILLS = ("csv-summary", "pdf-report", "git-release", "db-migrate", "k8s-debug")
_MS = 1_000_000
_BASE_NS = 1_795_000_000_000_000_000
_COMMON = {"session.id": "", "terminal.type": "xterm", "anthropic.provider": "firstParty"}


def _span(**fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "parent_span_id": "",
        "kind": "internal",
        "status_code": "unset",
        "status_message": "",
        "service_name": "claude-code",
        "scope_name": "com.anthropic.claude_code.tracing",
        "source_convention": "claude_code",
        "operation": "",
        "agent": "claude-code",
        "model": "",
        "tool_name": "",
        "tool_call_id": "",
        "skill_name": "",
        "input": "",
        "output": "",
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_creation_tokens": 0,
        "cost_usd": 0.0,
        "resource_attributes": {"service.name": "claude-code", "service.version": "2.1.330"},
        "span_events": "[]",
        "links": "[]",
    }
    row.update(fields)
    return row


def _event(**fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "severity_number": 0,
        "severity_text": "",
        "service_name": "claude-code",
        "scope_name": "com.anthropic.claude_code.events",
        "source_convention": "claude_code",
        "skill_name": "",
        "tool_name": "",
        "tool_call_id": "",
        "model": "",
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_creation_tokens": 0,
        "cost_usd": 0.0,
        "resource_attributes": {"service.name": "claude-code"},
    }
    row.update(fields)
    row["body"] = row["event_name"]
    return row


def synthetic_session(
    steps: int,
    *,
    skill_every: int = 10,
    seed: int = 0,
    session_id: str = "00000000-0000-4000-8000-000000000001",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(spans, events) of one session; ``steps`` tool-calling LLM turns plus a final answer."""
    if steps < 1 or skill_every < 1:
        raise ValueError("steps and skill_every must be at least 1")
    rng = random.Random(seed)
    trace_id = f"{rng.getrandbits(128):032x}"
    common = {**_COMMON, "session.id": session_id}
    ids = iter(range(1, 10 * steps + 100))

    def span_id() -> str:  # unique across seeds, as the CLI's random span ids are
        return f"{seed & 0xFFFF:04x}{next(ids):012x}"

    root = span_id()
    spans: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    prompt = "Summarise the data files and report the totals."
    clock = _BASE_NS
    events.append(
        _event(
            record_id=f"{rng.getrandbits(128):032x}",
            time_unix_nano=clock + 5 * _MS,
            trace_id=trace_id,
            span_id=root,
            event_name="claude_code.user_prompt",
            session_id=session_id,
            prompt_id="p1",
            attributes={**common, "prompt": prompt, "prompt.id": "p1"},
        )
    )
    skill = ""
    for step in range(steps + 1):
        request = f"req_{step:06d}"
        start = clock + 10 * _MS
        llm = span_id()
        final = step == steps
        tokens = {"input_tokens": 8, "output_tokens": 40 + step % 17, "cache_read_tokens": 13000}
        spans.append(
            _span(
                trace_id=trace_id,
                span_id=llm,
                parent_span_id=root,
                name="claude_code.llm_request",
                start_time_unix_nano=start,
                end_time_unix_nano=start + 50 * _MS,
                operation="chat",
                session_id=session_id,
                model="claude-opus-5-5",
                **tokens,
                attributes={
                    **common,
                    "request_id": request,
                    "query_source_safe": "sdk",
                    "stop_reason": "end_turn" if final else "tool_use",
                },
            )
        )
        events.append(
            _event(
                record_id=f"{rng.getrandbits(128):032x}",
                time_unix_nano=start + 50 * _MS,
                trace_id=trace_id,
                span_id=root,
                event_name="claude_code.api_request",
                session_id=session_id,
                prompt_id="p1",
                skill_name=skill,
                model="claude-opus-5-5",
                cost_usd=0.004 + (step % 5) / 1000,
                **tokens,
                attributes={
                    **common,
                    "request_id": request,
                    "query_source": "sdk",
                    "duration_ms": "50",
                    **({"skill.name": skill} if skill else {}),
                },
            )
        )
        if final or step % 3 == 0:
            text = "All done: totals reported." if final else f"Step {step}: continuing."
            events.append(
                _event(
                    record_id=f"{rng.getrandbits(128):032x}",
                    time_unix_nano=start + 51 * _MS,
                    trace_id=trace_id,
                    span_id=root,
                    event_name="claude_code.assistant_response",
                    session_id=session_id,
                    prompt_id="p1",
                    attributes={**common, "request_id": request, "response": text},
                )
            )
        if final:
            break
        call_id = f"toolu_{rng.getrandbits(96):024x}"
        tool_start = start + 40 * _MS
        if step % skill_every == 0:
            skill = _SKILLS[(step // skill_every) % len(_SKILLS)]
            name, arguments, output = "Skill", {"skill": skill}, ""
            extra = {"skill_name": skill}
        else:
            command = f"python3 scripts/step_{step}.py"
            name, arguments = "Bash", {"command": command, "description": f"step {step}"}
            output = f"step {step} ok\n" * (1 + step % 4)
            extra = {"full_command": command}
        tool = span_id()
        span_events = (
            json.dumps(
                [
                    {
                        "time_unix_nano": tool_start + 30 * _MS,
                        "name": "tool.output",
                        "attributes": {"output": output},
                    }
                ]
            )
            if output
            else "[]"
        )
        spans.append(
            _span(
                trace_id=trace_id,
                span_id=tool,
                parent_span_id=root,
                name="claude_code.tool",
                start_time_unix_nano=tool_start,
                end_time_unix_nano=tool_start + 40 * _MS,
                operation="execute_tool",
                session_id=session_id,
                tool_name=name,
                tool_call_id=call_id,
                skill_name=extra.get("skill_name", ""),
                input=extra.get("full_command", extra.get("skill_name", "")),
                output=output,
                span_events=span_events,
                attributes={**common, "tool_name": name, "tool_use_id": call_id, **extra},
            )
        )
        for offset, event_name in (
            (1, "claude_code.tool_decision"),
            (39, "claude_code.tool_result"),
        ):
            events.append(
                _event(
                    record_id=f"{rng.getrandbits(128):032x}",
                    time_unix_nano=tool_start + offset * _MS,
                    trace_id=trace_id,
                    span_id=root,
                    event_name=event_name,
                    session_id=session_id,
                    prompt_id="p1",
                    tool_name=name,
                    tool_call_id=call_id,
                    attributes={
                        **common,
                        "request_id": request,
                        "tool_use_id": call_id,
                        "tool_input": json.dumps(arguments),
                        "success": "true",
                    },
                )
            )
        clock = tool_start + 40 * _MS
    spans.append(
        _span(
            trace_id=trace_id,
            span_id=root,
            name="claude_code.interaction",
            start_time_unix_nano=_BASE_NS,
            end_time_unix_nano=clock + 100 * _MS,
            operation="invoke_agent",
            session_id=session_id,
            input=prompt,
            attributes={**common, "user_prompt": prompt},
        )
    )
    return spans, events
