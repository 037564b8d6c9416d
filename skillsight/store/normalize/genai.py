"""OpenTelemetry GenAI semantic conventions (``gen_ai.*``), including the proposed skill names."""

from __future__ import annotations

from skillsight import semconv as sc
from skillsight.store.normalize._convention import Convention
from skillsight.store.normalize._sql import attr, first, has_attr_prefix

GENAI = Convention(
    name="gen_ai",
    detect=has_attr_prefix("gen_ai."),
    span_fields={
        "operation": attr(sc.GEN_AI_OPERATION_NAME),
        "session_id": first(attr(sc.GEN_AI_CONVERSATION_ID), attr("session.id")),
        "agent": attr(sc.GEN_AI_AGENT_NAME),
        "model": first(attr(sc.GEN_AI_RESPONSE_MODEL), attr(sc.GEN_AI_REQUEST_MODEL)),
        "tool_name": attr(sc.GEN_AI_TOOL_NAME),
        "tool_call_id": attr(sc.GEN_AI_TOOL_CALL_ID),
        "skill_name": attr(sc.GEN_AI_SKILL_NAME),
        "input": first(attr(sc.GEN_AI_TOOL_CALL_ARGUMENTS), attr(sc.GEN_AI_INPUT_MESSAGES)),
        "output": first(attr(sc.GEN_AI_TOOL_CALL_RESULT), attr(sc.GEN_AI_OUTPUT_MESSAGES)),
        "input_tokens": attr(sc.GEN_AI_USAGE_INPUT_TOKENS),
        "output_tokens": attr(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
        "cache_read_tokens": attr(sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS),
        "cache_creation_tokens": attr(sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS),
    },
    event_detect="startsWith(event_name, 'gen_ai.')",
    event_fields={
        "session_id": attr(sc.GEN_AI_CONVERSATION_ID),
        "model": first(attr(sc.GEN_AI_RESPONSE_MODEL), attr(sc.GEN_AI_REQUEST_MODEL)),
        "tool_call_id": attr(sc.GEN_AI_TOOL_CALL_ID),
        "input_tokens": attr(sc.GEN_AI_USAGE_INPUT_TOKENS),
        "output_tokens": attr(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    },
)
