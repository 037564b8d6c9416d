"""Claude Code's native telemetry: ``claude_code.*`` spans and log events.

Claude Code uses bare attribute keys (``tool_name``, ``model``, ``input_tokens``), so this
convention is gated on its own span names, scope or event names. docs/claude-code-telemetry.md
lists what the CLI emits.
"""

from __future__ import annotations

from skillsight.store.normalize._convention import Convention
from skillsight.store.normalize._sql import attr, first, lookup, res, when

_SPAN_OPERATIONS = {
    "claude_code.interaction": "invoke_agent",
    "claude_code.llm_request": "chat",
    "claude_code.tool": "execute_tool",
    "claude_code.tool.execution": "tool_execution",
    "claude_code.tool.blocked_on_user": "tool_permission",
    "claude_code.subagent": "invoke_agent",
    "claude_code.hook": "hook",
}

# With OTEL_LOG_TOOL_CONTENT=1 a tool span carries its output in a `tool.output` span event,
# its only event. (Indexing the JSON directly keeps arrays out of the lazily evaluated branch.)
_TOOL_OUTPUT_EVENT = (
    "if(JSONExtractString(span_events, 1, 'name') = 'tool.output', "
    "JSONExtractString(span_events, 1, 'attributes', 'output'), '')"
)

_TOKENS = {
    "input_tokens": attr("input_tokens"),
    "output_tokens": attr("output_tokens"),
    "cache_read_tokens": first(attr("cache_read_tokens"), attr("cache_read_input_tokens")),
    "cache_creation_tokens": first(
        attr("cache_creation_tokens"), attr("cache_creation_input_tokens")
    ),
    "cost_usd": first(attr("cost_usd"), attr("cost")),
}

# scopes com.anthropic.claude_code.tracing (spans) and com.anthropic.claude_code.events (logs)
_SCOPE = "startsWith(scope_name, 'com.anthropic.claude_code')"

_DETECT = f"(startsWith(name, 'claude_code.') OR {_SCOPE})"

CLAUDE_CODE = Convention(
    name="claude_code",
    detect=_DETECT,
    span_fields={
        "operation": lookup("name", _SPAN_OPERATIONS),
        "session_id": attr("session.id"),
        "agent": first(res("service.name"), "'claude-code'"),
        "model": attr("model"),
        "tool_name": attr("tool_name"),
        "tool_call_id": first(attr("tool_use_id"), attr("tool_use.id")),
        "skill_name": first(attr("skill_name"), attr("skill.name")),
        # a Bash call's command, a Skill call's skill, an interaction's prompt (when logged)
        "input": first(
            attr("full_command"),
            attr("tool_input"),
            attr("user_prompt"),
            when(f"{attr('tool_name')} = 'Skill'", attr("skill_name")),
        ),
        "output": first(attr("tool_result"), _TOOL_OUTPUT_EVENT, attr("response")),
        **_TOKENS,
    },
    event_detect=f"(startsWith(event_name, 'claude_code.') OR {_SCOPE})",
    event_fields={
        "session_id": attr("session.id"),
        "prompt_id": attr("prompt.id"),
        "skill_name": first(attr("skill.name"), attr("skill_name")),
        "tool_name": attr("tool_name"),
        "tool_call_id": first(attr("tool_use_id"), attr("tool_use.id")),
        "model": attr("model"),
        **_TOKENS,
    },
    gated=True,
)
