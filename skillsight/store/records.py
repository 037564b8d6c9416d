"""The skill activation record: the evaluation unit, (decision, internal trajectory, integration).

One shape for every source (skillsight's spans, OpenInference, traceAI, Claude Code's native
telemetry), so evaluators, the API and the store never ask where an activation came from.
DESIGN.md (*Skill activations*) gives the boundary rules this record is cut by.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

Trigger = Literal["skill_tool", "read_skill_md", "load_skill_tool", "span", "event", "subagent"]
Outcome = Literal["completed", "error", "interrupted"]


@functools.lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def iso(ns: int) -> str:
    """ISO 8601 in UTC with microseconds, the one timestamp format of trajectories."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return f"{_second(seconds)}.{rest // 1000:06d}Z"


def activation_id(trace_or_session: str, start_call_id: str) -> str:
    """Deterministic id: the same activation rebuilt twice gets the same id."""
    digest = hashlib.sha256(f"{trace_or_session}\x1f{start_call_id}".encode()).hexdigest()
    return digest[:32]


class Tokens(BaseModel):
    input: int = Field(
        default=0, description="prompt tokens neither read from nor written to cache"
    )
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0


class ToolCall(BaseModel):
    """One tool call the agent made while the skill was active."""

    tool_call_id: str
    name: str
    arguments: Any = Field(default=None, description="parsed JSON when the source had JSON")
    result: str | None = Field(default=None, description="None when the source did not log it")
    is_error: bool = False
    step_id: int = Field(description="ATIF step of the session trajectory that made the call")
    started_at: str = ""
    duration_ms: float | None = None
    span_id: str = ""


class VisibleSkill(BaseModel):
    """A skill the agent could see when it decided (from the catalogue it was shown)."""

    name: str
    description: str = ""


class SkillContract(BaseModel):
    """What the skill declares: its scope, tool surface and version."""

    name: str
    description: str = ""
    allowed_tools: list[str] | None = Field(
        default=None, description="declared patterns; None = undeclared (unconstrained)"
    )
    version: str = Field(default="", description="SHA-256 of the skill folder's content")
    source_uri: str = ""
    catalogued: bool = Field(
        default=True,
        description="from the project's skill catalogue (a scanned SKILL.md); false when only "
        "the telemetry described the skill (a version the catalogue lacks)",
    )
    reported: list[str] = Field(
        default_factory=list,
        description="the fields the telemetry itself reported (description, version, "
        "source_uri, allowed_tools): they describe the agent's machine, the rest the catalogue",
    )

    @property
    def allowed_tools_known(self) -> bool:
        """Whether ``allowed_tools = None`` means "declares none" (a catalogued SKILL.md, or
        telemetry that reported it) rather than "not reported"."""
        return self.catalogued or "allowed_tools" in self.reported


# The fields a record's kept text leaves out (its rebuild's), which a copy may change.
_STAMPS = frozenset({"rebuilt_at", "settled"})


class Activation(BaseModel):
    """One time a skill was used in a session."""

    activation_id: str
    project_id: str = "default"
    session_id: str
    trace_id: str
    skill_name: str
    skill_version: str = ""
    trigger: Trigger
    trigger_call_id: str = Field(
        description="tool call id (or span id / event record id) that started the activation"
    )
    trigger_step_id: int | None = None
    mechanism: str = Field(
        default="",
        description="how the skill was loaded (a Trigger value); differs from trigger only for "
        "'subagent': how the subagent loaded it ('preloaded' when it never did)",
    )
    load_call_id: str = Field(
        default="",
        description="the call that loaded the skill: the trigger call, or for 'subagent' the "
        "Skill/Read/load_skill call inside the subagent ('' when preloaded)",
    )
    trajectory_id: str = Field(
        default="",
        description="the (sub)trajectory that step_ids and tool_calls[].step_id refer to",
    )
    activation_span_id: str = Field(
        default="",
        description="the explicit activation span that bounds it exactly ('' when inferred)",
    )
    decision_trajectory_id: str = Field(
        default="",
        description="the trajectory that trigger_step_id and integration_step_id refer to "
        "(the parent's for 'subagent', else trajectory_id)",
    )
    agent: str = ""
    subagent: str = Field(default="", description="agent type when run inside a subagent")
    parent_activation_id: str = Field(default="", description="set when nested in another")
    source_convention: str = ""
    request: str = Field(default="", description="the user request ('' when not logged)")
    request_logged: bool = True
    request_step_id: int | None = Field(
        default=None,
        description="the user step the request is (in the decision trajectory): where the "
        "activation's turn began; None when no user step precedes it",
    )
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="internal calls in order, the loading call excluded"
    )
    skill_output: str | None = Field(
        default=None, description="what the skill's loading call returned, when logged"
    )
    integration_message: str | None = None
    integration_step_id: int | None = None
    step_ids: list[int] = Field(default_factory=list, description="internal trajectory steps")
    started_at: str
    ended_at: str
    duration_ms: float = 0.0
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float = 0.0
    outcome: Outcome = "completed"
    visible_skills: list[VisibleSkill] = Field(default_factory=list)
    contract: SkillContract | None = None
    workspace: str = Field(
        default="",
        description="the agent's working directory as its telemetry reported it "
        "(process.working_directory); '' when not reported",
    )
    rebuilt_at: str = Field(
        default="",
        description="when this version of the record was rebuilt (ISO 8601, UTC); a session "
        "rebuilt on late rows replaces it, and each evaluation names the rebuild it scored",
    )
    rerun_id: str = Field(
        default="",
        description="the paired rerun (skillsight rerun) whose agent ran the session, from its "
        "skillsight.rerun.id resource attribute; '' for production traffic. Rerun activations "
        "are stored and scored but left out of production read models",
    )
    settled: bool = Field(
        default=True,
        description="false while its session is incomplete (still running, or its root span "
        "late): a provisional rebuild, shown but not scored until the session completes or "
        "settles",
    )

    # What stampless_json and content_digest made, kept: a session rebuilt after each of its
    # prompts keeps its earlier activations (the same objects), and each rebuild writes them
    # and hands them to the scheduler, whose digest reads the same text. A record is a value: a
    # changed one is a copy (model_copy); a copy that changes more than the rebuild's stamps,
    # or a field assigned, starts without them.
    # (Read through the private dict: pydantic's attribute lookup of a private name costs
    # about 2 µs.)
    _stampless: str | None = PrivateAttr(default=None)
    _digest: str | None = PrivateAttr(default=None)

    def stampless_json(self) -> str:
        """The record as JSON less when it was rebuilt (``rebuilt_at``, ``settled``): what
        ``model_dump_json(exclude={"rebuilt_at", "settled"})`` writes, made once."""
        kept: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        text: str | None = kept["_stampless"]
        if text is None:
            text = kept["_stampless"] = self.model_dump_json(exclude=set(_STAMPS))
        return text

    def content_digest(self) -> str:
        """A digest of what the record says, less when it was rebuilt (``rebuilt_at``,
        ``settled``): equal for two rebuilds that found the same activation, so its stored
        verdicts still stand (the scheduler does not score it again, the API does not call
        them stale)."""
        kept: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        digest: str | None = kept["_digest"]
        if digest is None:
            text = self.stampless_json().encode()
            digest = kept["_digest"] = hashlib.blake2b(text, digest_size=16).hexdigest()
        return digest

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> Activation:
        copy = super().model_copy(update=update, deep=deep)
        if update and not _STAMPS.issuperset(update):
            copy._forget()  # a stamped copy (the finalizer's hand-over) says the same
        return copy

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in Activation.model_fields and name not in _STAMPS:
            self._forget()

    def _forget(self) -> None:
        kept: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        kept["_stampless"] = kept["_digest"] = None

    def __eq__(self, other: object) -> bool:
        # the kept text is not part of what a record says (pydantic compares private
        # attributes too)
        if not isinstance(other, Activation):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, as every pydantic model
