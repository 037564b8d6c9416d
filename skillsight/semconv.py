"""Attribute and span names that skillsight emits and reads: the one home for them.

OpenTelemetry GenAI names are used where they exist (including the proposed ``gen_ai.skill.*``);
everything else lives under ``skillsight.*``. Third-party conventions the collector understands
keep their names beside their mappers in :mod:`skillsight.store.normalize`.
"""

from __future__ import annotations

from typing import Final

# --- OpenTelemetry GenAI -------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_SKILL_NAME: Final = "gen_ai.skill.name"
GEN_AI_SKILL_DESCRIPTION: Final = "gen_ai.skill.description"
GEN_AI_SKILL_SOURCE_URI: Final = "gen_ai.skill.source.uri"
GEN_AI_SKILL_VERSION: Final = "gen_ai.skill.version"
# evaluation results (the gen_ai.evaluation.result event)
GEN_AI_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

# gen_ai.operation.name values
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
# skillsight's own operation for a skill activation span (no GenAI value exists yet)
OP_ACTIVATE_SKILL: Final = "activate_skill"

# --- skillsight ------------------------------------------------------------------------------
SKILLSIGHT_SPAN_KIND: Final = "skillsight.span.kind"
SPAN_KIND_SKILL_ACTIVATION: Final = "skill_activation"
SKILLSIGHT_SKILLS_AVAILABLE: Final = "skillsight.skills.available"
SKILLSIGHT_SKILL_ALLOWED_TOOLS: Final = "skillsight.skill.allowed_tools"
SKILLSIGHT_ACTIVATION_TRIGGER: Final = "skillsight.activation.trigger"
SKILLSIGHT_ACTIVATION_INPUT: Final = "skillsight.activation.input"
SKILLSIGHT_COST_USD: Final = "skillsight.cost_usd"
SKILLSIGHT_PROJECT_KEY_HEADER: Final = "x-skillsight-key"

# --- OpenInference (for rendering in Phoenix / Langfuse) --------------------------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"

# --- OpenTelemetry resource ------------------------------------------------------------------
SERVICE_NAME: Final = "service.name"

# --- emitted by skillsight.instrumentation -----------------------------------------------------
ERROR_TYPE: Final = "error.type"
OPENINFERENCE_KIND_AGENT: Final = "AGENT"
OPENINFERENCE_KIND_CHAIN: Final = "CHAIN"
# skillsight.activation.trigger values: what started an activation
TRIGGER_SKILL_TOOL: Final = "skill_tool"
TRIGGER_READ_SKILL_MD: Final = "read_skill_md"
TRIGGER_LOAD_SKILL_TOOL: Final = "load_skill_tool"
TRIGGER_MANUAL: Final = "manual"
# gen_ai.provider.name of the Claude Agent SDK's model calls
PROVIDER_ANTHROPIC: Final = "anthropic"
SKILLSIGHT_MODEL_USAGE: Final = "skillsight.model_usage"
"""JSON object of per-model usage and cost reported at the end of a Claude Agent SDK run."""

# --- emitted by the OpenAI Agents SDK tracing processor ----------------------------------------
# gen_ai.provider.name of the OpenAI Agents SDK's model calls
PROVIDER_OPENAI: Final = "openai"
SKILLSIGHT_AGENT_TOOLS: Final = "skillsight.agent.tools"
"""JSON list of the tool names an agent was given."""
SKILLSIGHT_AGENT_HANDOFFS: Final = "skillsight.agent.handoffs"
"""JSON list of the agents an agent may hand off to."""
SKILLSIGHT_SOURCE_SPAN_TYPE: Final = "skillsight.source.span_type"
"""The instrumented SDK's own type of a span kept as is (``custom``, ``handoff``…)."""
SKILLSIGHT_SOURCE_SPAN_DATA: Final = "skillsight.source.span_data"
"""JSON of the instrumented SDK's data for a span kept as is."""
SKILLSIGHT_ACTIVATION_CALL_ID: Final = "skillsight.activation.call_id"
"""The tool call that started an activation (the ``Skill``/``Read``/``load_skill`` call), if any."""

# --- resource attributes of a paired rerun's agent process (skillsight rerun) -----------------
# Every agent a rerun starts gets these through OTEL_RESOURCE_ATTRIBUTES, so its telemetry flows
# through the collector like live traffic and the rerun finds the sessions it produced.
SKILLSIGHT_RERUN_PREFIX: Final = "skillsight.rerun."
SKILLSIGHT_RERUN_ID: Final = "skillsight.rerun.id"
SKILLSIGHT_RERUN_CASE: Final = "skillsight.rerun.case"
SKILLSIGHT_RERUN_CONDITION: Final = "skillsight.rerun.condition"
"""``with_skill`` or ``baseline``."""
SKILLSIGHT_RERUN_ATTEMPT: Final = "skillsight.rerun.attempt"
SKILLSIGHT_RERUN_KEY: Final = "skillsight.rerun.key"
"""Unique per launch of an attempt: a resumed run's retry of an attempt killed midway does not
pick up the killed launch's sessions."""
