"""The output schemas a judge must answer in (JSON schema from these pydantic models).

Every field is required and no other field is allowed, which is what strict structured output
(OpenAI's ``strict: true``, and the tool-call fallback) expects.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckVerdict(_Strict):
    check: str = Field(description="the id of the check, exactly as listed")
    satisfied: bool
    step_ids: list[int] = Field(
        description="ids of the listed steps that show the answer; required when satisfied"
    )
    reason: str = Field(description="one or two sentences")


class Verdict(_Strict):
    checks: list[CheckVerdict] = Field(description="one entry per listed check, in order")
    summary: str = Field(description="the overall judgement in one or two sentences")


class DispatchVerdict(_Strict):
    checks: list[CheckVerdict] = Field(description="one entry per listed check, in order")
    better_skill: str | None = Field(
        description="the visible skill that fits the request better, 'none' if no skill was "
        "needed, null if the activated skill was the right choice"
    )
    summary: str = Field(description="the overall judgement in one or two sentences")


SCHEMAS: dict[str, type[_Strict]] = {"checks": Verdict, "dispatch": DispatchVerdict}
"""Output schemas by the id a rubric's ``output`` names."""
