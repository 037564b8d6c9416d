"""How a judge calls its model: which model, where, how often, how hard, at what price."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from skillsight.errors import ConfigError

StructuredOutput = Literal["auto", "json_schema", "tool"]
STRUCTURED_OUTPUTS: tuple[StructuredOutput, ...] = ("auto", "json_schema", "tool")


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """One judge model's call policy. :func:`judge_registry` builds it from the service settings.

    ``structured_output``: ``json_schema`` asks for ``response_format`` JSON-schema output;
    ``tool`` asks the model to call a ``record_verdict`` function whose parameters are the schema
    (for providers without JSON-schema output); ``auto`` starts with ``json_schema`` and switches
    to ``tool`` for good when the provider rejects ``response_format`` with a 400.
    """

    model: str
    """A litellm model string: ``openai/gpt-4o-mini``, ``anthropic/claude-…``, ``ollama/…``."""
    api_base: str = ""
    """OpenAI-compatible gateways and local servers; empty = the provider's own endpoint."""
    api_key: str | None = None
    """``None``: litellm reads the provider's usual variable (``OPENAI_API_KEY``, …)."""
    structured_output: StructuredOutput = "auto"
    concurrency: int = 4
    """Judge calls in flight at once, per evaluator."""
    daily_spend_usd: float = 5.0
    """Judging stops for the rest of the UTC day once this much was spent (``inf``: no cap)."""
    max_attempts: int = 3
    """Calls per judgement: the first and its retries (429, 5xx, malformed output)."""
    backoff_s: float = 1.0
    """Wait before the first retry; doubles each time, capped by ``max_backoff_s``."""
    max_backoff_s: float = 30.0
    timeout_s: float = 60.0
    input_usd_per_mtok: float = 0.0
    """Price per million prompt tokens for models litellm has no price for (local models)."""
    output_usd_per_mtok: float = 0.0
    temperature: float = 0.0
    max_prompt_chars: int = 24_000
    """Budget of trajectory text in one prompt; see the truncation policy in ``docs/judges.md``."""
    cache_size: int = 2048
    """Verdicts kept in memory, keyed by (rubric, version, model, inputs hash); 0 = no cache."""

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ConfigError("a judge needs a model (SKILLSIGHT_JUDGE_MODEL, a litellm string)")
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise ConfigError(
                f"judge structured output {self.structured_output!r} is not one of "
                f"{', '.join(STRUCTURED_OUTPUTS)} (SKILLSIGHT_JUDGE_STRUCTURED_OUTPUT)"
            )
        if self.concurrency < 1:
            raise ConfigError("judge concurrency must be at least 1 (SKILLSIGHT_JUDGE_CONCURRENCY)")
        if self.max_attempts < 1:
            raise ConfigError("a judge needs at least one attempt")
        if self.daily_spend_usd < 0:
            raise ConfigError(
                "the judge spend cap must not be negative (SKILLSIGHT_JUDGE_DAILY_SPEND_USD)"
            )
        for name in ("backoff_s", "max_backoff_s", "timeout_s", "input_usd_per_mtok"):
            if getattr(self, name) < 0:
                raise ConfigError(f"judge setting {name} must not be negative")
        if self.output_usd_per_mtok < 0 or self.cache_size < 0 or self.max_prompt_chars < 1000:
            raise ConfigError(
                "judge prices and cache size must not be negative; the prompt budget is at "
                "least 1000 characters"
            )
