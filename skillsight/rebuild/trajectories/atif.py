"""ATIF-v1.7 (Harbor's Agent Trajectory Interchange Format, RFC 0001) as pydantic models.

Every model forbids unknown keys, so a document that parses is a document another ATIF reader
accepts; custom data goes in the ``extra`` objects the format provides. :func:`dump` is the one
serialisation: ``None`` is always left out, so export → parse → export is the identity.

Rules checked beyond field types (DESIGN.md, *ATIF*):

- step ids run 1, 2, 3 … in order;
- tool-call ids are unique within a step, and every ``observation.results[].source_call_id``
  names a tool call of the same step;
- agent-only fields (``model_name``, ``reasoning_effort``, ``reasoning_content``, ``tool_calls``,
  ``metrics``, ``llm_call_count``) appear only on ``source="agent"`` steps;
- embedded subagent trajectories carry unique ``trajectory_id`` values, and every
  ``subagent_trajectory_ref`` of the document resolves to one of them.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from skillsight.errors import SkillsightError

SCHEMA_VERSION: Literal["ATIF-v1.7"] = "ATIF-v1.7"

StepSource = Literal["system", "user", "agent"]

_AGENT_ONLY = (
    "model_name",
    "reasoning_effort",
    "reasoning_content",
    "tool_calls",
    "metrics",
    "llm_call_count",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    tool_call_id: str = Field(min_length=1)
    function_name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] | None = None


class SubagentTrajectoryRef(_Strict):
    trajectory_id: str | None = None
    trajectory_path: str | None = None
    session_id: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> Self:
        if not self.trajectory_id and not self.trajectory_path:
            raise ValueError("a subagent_trajectory_ref needs trajectory_id or trajectory_path")
        return self


class ObservationResult(_Strict):
    source_call_id: str | None = None
    content: str | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Strict):
    results: list[ObservationResult]


class Metrics(_Strict):
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = Field(default=None, ge=0)
    total_completion_tokens: int | None = Field(default=None, ge=0)
    total_cached_tokens: int | None = Field(default=None, ge=0)
    total_cost_usd: float | None = Field(default=None, ge=0)
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Agent(_Strict):
    name: str = Field(min_length=1)
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: StepSource
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Self:
        kept = _kept(info)
        if (
            kept is not None
            and 0 < self.step_id <= len(kept.steps)
            and kept.steps[self.step_id - 1] is self
        ):
            return self  # checked when the trajectory it was validated in was
        if self.source != "agent":
            present = [name for name in _AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise ValueError(
                    f"step {self.step_id}: {', '.join(present)} only allowed on agent steps "
                    f"(source is {self.source!r})"
                )
        ids = [call.tool_call_id for call in self.tool_calls or ()]
        if len(set(ids)) != len(ids):
            raise ValueError(f"step {self.step_id}: duplicate tool_call_id in {ids}")
        if self.observation is not None:
            known = set(ids)
            for result in self.observation.results:
                if result.source_call_id is not None and result.source_call_id not in known:
                    raise ValueError(
                        f"step {self.step_id}: observation source_call_id "
                        f"{result.source_call_id!r} is not a tool call of this step"
                    )
        return self


class Trajectory(_Strict):
    schema_version: Literal["ATIF-v1.7"] = SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step]
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None
    _steps_text: tuple[tuple[Step, ...], str] = PrivateAttr(default=((), ""))
    """The first steps :meth:`compact_json` has written, and their text (reused only while
    those very steps come first: a copy with other steps writes its own)."""

    def compact_json(self) -> str:
        """``model_dump_json(exclude_none=True)``, the steps' text kept: a trajectory that
        :meth:`continues` another one writes only the steps it added (the store writes the
        document this way)."""
        return _compact_json(self)

    def continues(self, previous: Trajectory) -> None:
        """``previous``'s steps are this trajectory's first ones (the same validated steps,
        as an extension by new prompts keeps them): their text, once written, is reused."""
        self._steps_text = previous._steps_text

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Self:
        # the first steps may be those of a trajectory validated before, whose ids ran from 1
        # and whose references resolved among fewer embedded runs (:func:`extended`)
        kept = _kept(info)
        count = len(kept.steps) if kept is not None else 0
        if not (
            kept is not None
            and count <= len(self.steps)
            and all(map(operator.is_, kept.steps, self.steps[:count]))
            and kept.embedded <= {s.trajectory_id for s in self.subagent_trajectories or ()}
        ):
            count = 0
        for index in range(count, len(self.steps)):
            step = self.steps[index]
            if step.step_id != index + 1:
                raise ValueError(
                    f"steps[{index}].step_id is {step.step_id}; step ids run from 1 in order"
                )
        embedded: set[str] = set()
        for index, sub in enumerate(self.subagent_trajectories or ()):
            if not sub.trajectory_id:
                raise ValueError(f"subagent_trajectories[{index}] needs a trajectory_id")
            if sub.trajectory_id in embedded:
                raise ValueError(f"subagent trajectory_id {sub.trajectory_id!r} is not unique")
            embedded.add(sub.trajectory_id)
        for step in self.steps[count:]:
            for result in step.observation.results if step.observation else ():
                for ref in result.subagent_trajectory_ref or ():
                    if ref.trajectory_path is None and ref.trajectory_id not in embedded:
                        raise ValueError(
                            f"step {step.step_id}: subagent_trajectory_ref "
                            f"{ref.trajectory_id!r} matches no embedded subagent trajectory"
                        )
        return self


@dataclass(frozen=True)
class _Kept:
    """What :func:`extended` tells the validators: the steps of the trajectory checked before,
    and the subagent runs it embedded."""

    steps: list[Step]
    embedded: frozenset[str | None]


_KEPT = "atif.kept"


def extended(document: dict[str, Any], previous: Trajectory) -> Trajectory:
    """``Trajectory.model_validate(document)`` for a document whose first steps are
    ``previous``'s, the very step objects (a session extended by new prompts): those are taken
    as checked, with the references they make, when ``document`` embeds every subagent run
    ``previous`` did; only the steps after them are checked (each extension then costs what it
    adds, not the whole session again)."""
    embedded = frozenset(s.trajectory_id for s in previous.subagent_trajectories or ())
    return Trajectory.model_validate(document, context={_KEPT: _Kept(previous.steps, embedded)})


def _kept(info: ValidationInfo) -> _Kept | None:
    context = info.context  # looked at for every step of a long session: kept cheap
    return context.get(_KEPT) if type(context) is dict else None


_HEAD = frozenset({"schema_version", "session_id", "trajectory_id", "agent"})
"""The fields before ``steps``, in the models' order (pydantic writes fields in that order)."""
_TAIL = frozenset(Trajectory.model_fields) - _HEAD - {"steps"}


def _compact_json(trajectory: Trajectory) -> str:
    head = trajectory.model_dump_json(include=set(_HEAD), exclude_none=True)
    tail = trajectory.model_dump_json(include=set(_TAIL), exclude_none=True)[1:-1]
    written, text = trajectory._steps_text
    count = len(written)
    kept = count <= len(trajectory.steps) and all(map(operator.is_, written, trajectory.steps))
    texts = [text] if kept and count else []
    texts += [
        step.model_dump_json(exclude_none=True) for step in trajectory.steps[count if kept else 0 :]
    ]
    steps = ",".join(texts)
    trajectory._steps_text = (tuple(trajectory.steps), steps)
    return f'{head[:-1]},"steps":[{steps}]{"," if tail else ""}{tail}}}'


def dump(trajectory: Trajectory) -> dict[str, Any]:
    """The document as JSON-ready data (``None`` left out, everywhere, always)."""
    return trajectory.model_dump(mode="json", exclude_none=True)


def dumps(trajectory: Trajectory, *, indent: int | None = None) -> str:
    return json.dumps(dump(trajectory), ensure_ascii=False, indent=indent)


class TrajectoryError(SkillsightError, ValueError):
    """A document is not valid ATIF-v1.7; the message names the rule and where it broke."""


def parse(document: str | bytes | dict[str, Any]) -> Trajectory:
    """Validate an ATIF document (JSON text or parsed data)."""
    try:
        if isinstance(document, dict):
            return Trajectory.model_validate(document)
        return Trajectory.model_validate_json(document)
    except ValidationError as exc:
        raise TrajectoryError(f"not a valid ATIF-v1.7 trajectory: {exc}") from exc


__all__ = [
    "SCHEMA_VERSION",
    "Agent",
    "FinalMetrics",
    "Metrics",
    "Observation",
    "ObservationResult",
    "Step",
    "StepSource",
    "SubagentTrajectoryRef",
    "ToolCall",
    "Trajectory",
    "TrajectoryError",
    "dump",
    "dumps",
    "parse",
]
