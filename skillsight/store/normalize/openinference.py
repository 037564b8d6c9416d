"""OpenInference (Arize Phoenix's instrumentors) and traceAI, which grew from it.

Both put the span's role in a kind attribute (``openinference.span.kind``; traceAI's
``fi.span.kind`` or ``gen_ai.span.kind``) and share ``input.value``, ``output.value``,
``tool.name``, ``session.id`` and ``llm.token_count.*``.
"""

from __future__ import annotations

from collections.abc import Mapping

from skillsight.store.normalize._convention import Convention
from skillsight.store.normalize._sql import attr, first, has_attr, has_attr_prefix, lookup

_KIND_TO_OPERATION = {
    "LLM": "chat",
    "TOOL": "execute_tool",
    "AGENT": "invoke_agent",
    "CHAIN": "chain",
    "EMBEDDING": "embeddings",
    "RETRIEVER": "retrieval",
    "RERANKER": "rerank",
    "GUARDRAIL": "guardrail",
    "EVALUATOR": "evaluate",
}


def _fields(kind_expr: str) -> Mapping[str, str]:
    return {
        "operation": lookup(f"upper({kind_expr})", _KIND_TO_OPERATION),
        "session_id": attr("session.id"),
        "agent": attr("agent.name"),
        "model": first(attr("llm.model_name"), attr("llm.response.model")),
        "tool_name": attr("tool.name"),
        "tool_call_id": first(attr("tool.id"), attr("tool_call.id")),
        "input": first(attr("input.value"), attr("tool.parameters")),
        "output": attr("output.value"),
        "input_tokens": attr("llm.token_count.prompt"),
        "output_tokens": attr("llm.token_count.completion"),
        "cache_read_tokens": attr("llm.token_count.prompt_details.cache_read"),
        "cache_creation_tokens": attr("llm.token_count.prompt_details.cache_write"),
        "cost_usd": attr("llm.cost.total"),
    }


OPENINFERENCE = Convention(
    name="openinference",
    detect=has_attr("openinference.span.kind"),
    span_fields=_fields(attr("openinference.span.kind")),
    gated=True,
)

_CLAUDE_AGENT_KINDS = {
    "conversation": "invoke_agent",
    "subagent": "invoke_agent",
    "assistant_turn": "chat",
    "tool_execution": "execute_tool",
}

# traceAI's Claude Agent SDK instrumentor writes claude_agent.* keys; its other instrumentors
# follow OpenInference's keys under fi.span.kind.
_traceai_common = _fields(first(attr("fi.span.kind"), attr("gen_ai.span.kind")))
TRACEAI = Convention(
    name="traceai",
    detect=f"({has_attr('fi.span.kind')} OR {has_attr_prefix('claude_agent.')})",
    span_fields={
        **_traceai_common,
        "operation": first(
            lookup(attr("claude_agent.span_kind"), _CLAUDE_AGENT_KINDS),
            _traceai_common["operation"],
        ),
        "session_id": first(attr("claude_agent.session_id"), attr("session.id")),
        "model": first(attr("claude_agent.model"), _traceai_common["model"]),
        "tool_name": first(attr("claude_agent.tool.name"), attr("tool.name")),
        "tool_call_id": first(attr("claude_agent.tool.use_id"), _traceai_common["tool_call_id"]),
        "input": first(
            attr("claude_agent.tool.input"), attr("claude_agent.prompt"), attr("input.value")
        ),
        "output": first(
            attr("claude_agent.tool.output"),
            attr("claude_agent.message.content"),
            attr("output.value"),
            attr("output"),
        ),
        "cache_read_tokens": first(
            attr("gen_ai.usage.cache_read_tokens"), _traceai_common["cache_read_tokens"]
        ),
        "cache_creation_tokens": first(
            attr("gen_ai.usage.cache_creation_tokens"), _traceai_common["cache_creation_tokens"]
        ),
        "cost_usd": first(attr("claude_agent.cost.total_usd"), _traceai_common["cost_usd"]),
    },
    gated=True,
)
