"""The spans skillsight's instrumentors emit, and every attribute they carry: one place.

The Claude Agent SDK instrumentor, the OpenAI Agents SDK processor and the manual API all build
their spans through :class:`SpanEmitter`, so the three sources agree on names, attributes and
content capture (size cap, opt-out, redaction) by construction. Parents are passed explicitly as
OpenTelemetry contexts: instrumentors that see events out of call order (hooks, message streams)
never depend on what happens to be current.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from skillsight import semconv as sc
from skillsight.instrumentation._config import content_policy, resolve_tracer_provider
from skillsight.instrumentation._content import ContentPolicy

__all__ = [
    "INSTRUMENTATION_SCOPE",
    "SkillInfo",
    "SpanEmitter",
    "Usage",
]

INSTRUMENTATION_SCOPE = "skillsight.instrumentation"


@dataclass(frozen=True)
class SkillInfo:
    """What an activation span says about its skill (from SKILL.md when found on disk)."""

    name: str
    description: str | None = None
    version: str | None = None
    """SHA-256 of the skill folder's content."""
    source_uri: str | None = None
    allowed_tools: Sequence[str] | None = None
    """``allowed-tools`` as declared; ``None`` when the skill declares none."""


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call or of a whole run."""

    input_tokens: int | None = None
    """All prompt tokens, cached ones included (the GenAI convention)."""
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None

    @classmethod
    def from_anthropic(cls, usage: Mapping[str, Any] | None) -> Usage:
        """From an Anthropic ``usage`` object (``input_tokens``, ``cache_read_input_tokens``…).

        Anthropic counts cached prompt tokens apart from ``input_tokens``; GenAI's
        ``gen_ai.usage.input_tokens`` includes them, so they are added back in.
        """
        if not usage:
            return cls()

        def count(key: str) -> int | None:
            value = usage.get(key)
            return int(value) if isinstance(value, int | float) else None

        parts = [
            count(k)
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        ]
        known = [p for p in parts if p is not None]
        return cls(
            input_tokens=sum(known) if known else None,
            output_tokens=count("output_tokens"),
            cache_read_input_tokens=count("cache_read_input_tokens"),
            cache_creation_input_tokens=count("cache_creation_input_tokens"),
        )

    def attributes(self) -> dict[str, int]:
        """The GenAI usage attributes of the counts that are known."""
        pairs = (
            (sc.GEN_AI_USAGE_INPUT_TOKENS, self.input_tokens),
            (sc.GEN_AI_USAGE_OUTPUT_TOKENS, self.output_tokens),
            (sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, self.cache_read_input_tokens),
            (sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, self.cache_creation_input_tokens),
        )
        return {key: value for key, value in pairs if value is not None}


@functools.cache
def _package_version() -> str | None:
    try:
        return importlib.metadata.version("skillsight")
    except importlib.metadata.PackageNotFoundError:
        return None


def skills_available_json(skills: Iterable[tuple[str, str | None]]) -> str:
    """``skillsight.skills.available``: a JSON list of ``{name, description}``."""
    return json.dumps(
        [{"name": name, "description": description or ""} for name, description in skills],
        ensure_ascii=False,
    )


def skill_attributes(skill: SkillInfo) -> dict[str, AttributeValue]:
    """``gen_ai.skill.*`` and ``skillsight.skill.allowed_tools`` of what is known."""
    attributes: dict[str, AttributeValue] = {sc.GEN_AI_SKILL_NAME: skill.name}
    if skill.description is not None:
        attributes[sc.GEN_AI_SKILL_DESCRIPTION] = skill.description
    if skill.version is not None:
        attributes[sc.GEN_AI_SKILL_VERSION] = skill.version
    if skill.source_uri is not None:
        attributes[sc.GEN_AI_SKILL_SOURCE_URI] = skill.source_uri
    if skill.allowed_tools is not None:
        attributes[sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS] = json.dumps(list(skill.allowed_tools))
    return attributes


class SpanEmitter:
    """Starts and finishes skillsight's spans on one tracer with one content policy."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        content: ContentPolicy | None = None,
    ) -> None:
        self.tracer = resolve_tracer_provider(tracer_provider).get_tracer(
            INSTRUMENTATION_SCOPE, _package_version()
        )
        self.policy = content_policy(content)

    # --- content -------------------------------------------------------------------------

    def _start(
        self,
        name: str,
        kind: SpanKind,
        parent: Context | None,
        start_time: int | None,
        attributes: Mapping[str, AttributeValue | None],
    ) -> Span:
        # Attributes given at start are cleaned once, in one batch, and samplers see them.
        return self.tracer.start_span(
            name,
            context=parent,
            kind=kind,
            start_time=start_time,
            attributes={k: v for k, v in attributes.items() if v is not None and v != ""},
        )

    def set_content(self, span: Span, key: str, value: Any) -> None:
        """Set a content attribute through the policy (capped, redacted, or left out)."""
        text = self.policy.apply(value)
        if text is not None:
            span.set_attribute(key, text)

    # --- agent ------------------------------------------------------------------------------

    def start_agent(
        self,
        name: str,
        *,
        parent: Context | None = None,
        conversation_id: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        agent_id: str | None = None,
        input: Any = None,
        start_time: int | None = None,
    ) -> Span:
        """An ``invoke_agent {name}`` span (a session, or a subagent inside one)."""
        return self._start(
            f"{sc.OP_INVOKE_AGENT} {name}",
            SpanKind.INTERNAL,
            parent,
            start_time,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: name,
                sc.GEN_AI_AGENT_ID: agent_id,
                sc.GEN_AI_PROVIDER_NAME: provider,
                sc.GEN_AI_REQUEST_MODEL: model,
                sc.GEN_AI_CONVERSATION_ID: conversation_id,
                sc.GEN_AI_INPUT_MESSAGES: self.policy.apply(input),
            },
        )

    def set_skills_available(self, span: Span, skills: Iterable[tuple[str, str | None]]) -> None:
        """Record the skills the agent could see, as ``[{name, description}]``."""
        span.set_attribute(sc.SKILLSIGHT_SKILLS_AVAILABLE, skills_available_json(skills))

    def set_run_result(
        self,
        span: Span,
        *,
        usage: Usage | None = None,
        cost_usd: float | None = None,
        output: Any = None,
        error: str | None = None,
    ) -> None:
        """Totals of a finished run on its agent span: usage, cost, final answer, error."""
        if usage is not None:
            span.set_attributes(usage.attributes())
        if cost_usd is not None:
            span.set_attribute(sc.SKILLSIGHT_COST_USD, float(cost_usd))
        self.set_content(span, sc.GEN_AI_OUTPUT_MESSAGES, output)
        if error:
            span.set_status(Status(StatusCode.ERROR, error))

    # --- model calls ---------------------------------------------------------------------

    def start_chat(
        self,
        model: str | None,
        *,
        parent: Context | None = None,
        provider: str | None = None,
        start_time: int | None = None,
    ) -> Span:
        """A ``chat {model}`` span for one model call (an assistant turn)."""
        return self._start(
            f"{sc.OP_CHAT} {model}" if model else sc.OP_CHAT,
            SpanKind.CLIENT,
            parent,
            start_time,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_PROVIDER_NAME: provider,
                sc.GEN_AI_REQUEST_MODEL: model,
                sc.GEN_AI_RESPONSE_MODEL: model,
            },
        )

    def set_chat_result(
        self,
        span: Span,
        *,
        usage: Usage | None = None,
        finish_reason: str | None = None,
        output: Any = None,
        input: Any = None,
    ) -> None:
        """What a model call answered: usage, finish reason, captured messages."""
        attributes: dict[str, AttributeValue] = dict(usage.attributes()) if usage else {}
        if finish_reason:
            attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = [finish_reason]
        for key, value in ((sc.GEN_AI_INPUT_MESSAGES, input), (sc.GEN_AI_OUTPUT_MESSAGES, output)):
            text = self.policy.apply(value)
            if text is not None:
                attributes[key] = text
        span.set_attributes(attributes)

    # --- tools ----------------------------------------------------------------------------

    def start_tool(
        self,
        name: str,
        *,
        call_id: str | None = None,
        arguments: Any = None,
        parent: Context | None = None,
        start_time: int | None = None,
    ) -> Span:
        """An ``execute_tool {name}`` span."""
        return self._start(
            f"{sc.OP_EXECUTE_TOOL} {name}",
            SpanKind.INTERNAL,
            parent,
            start_time,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                sc.GEN_AI_TOOL_NAME: name,
                sc.GEN_AI_TOOL_CALL_ID: call_id,
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: self.policy.apply(arguments),
            },
        )

    def finish_tool(
        self,
        span: Span,
        *,
        result: Any = None,
        error: str | None = None,
        end_time: int | None = None,
    ) -> None:
        """Record a tool's result (or error) and end its span."""
        self.set_content(span, sc.GEN_AI_TOOL_CALL_RESULT, result)
        if error is not None:
            span.set_attribute(sc.ERROR_TYPE, "tool_error")
            span.set_status(Status(StatusCode.ERROR, self.policy.apply(error) or "tool error"))
        span.end(end_time=end_time)

    # --- skill activations -------------------------------------------------------------------

    def start_activation(
        self,
        skill: SkillInfo,
        *,
        trigger: str,
        input: Any = None,
        call_id: str | None = None,
        parent: Context | None = None,
        composes: bool = False,
        start_time: int | None = None,
    ) -> Span:
        """An ``activate_skill {name}`` span; the tool spans of the skill's work go under it.

        ``call_id`` names the tool call that started it (a ``Skill`` call, a ``Read`` of the
        SKILL.md, a ``load_skill`` call), so every source of one run names the same start.
        """
        return self._start(
            f"{sc.OP_ACTIVATE_SKILL} {skill.name}",
            SpanKind.INTERNAL,
            parent,
            start_time,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_ACTIVATE_SKILL,
                sc.SKILLSIGHT_SPAN_KIND: sc.SPAN_KIND_SKILL_ACTIVATION,
                sc.SKILLSIGHT_ACTIVATION_TRIGGER: trigger,
                sc.SKILLSIGHT_ACTIVATION_CALL_ID: call_id,
                sc.OPENINFERENCE_SPAN_KIND: (
                    sc.OPENINFERENCE_KIND_CHAIN if composes else sc.OPENINFERENCE_KIND_AGENT
                ),
                **skill_attributes(skill),
                sc.SKILLSIGHT_ACTIVATION_INPUT: self.policy.apply(input),
            },
        )

    @staticmethod
    def set_skill(span: Span, skill: SkillInfo) -> None:
        """The ``gen_ai.skill.*`` attributes (set again when more is learnt about the skill)."""
        span.set_attributes(skill_attributes(skill))
