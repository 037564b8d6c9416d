"""A golden case and a golden set: what a paired rerun replays, and where each case came from.

A case is one request the skill is tested on, with what a correct run shows: the answer
(``ground_truth``), the behaviours an author expects (``expected_behavior``), the skill that
should be used (``expected_skill``; ``None`` when the right answer is to use none), a script the
skill should run, the fixture files the workspace starts with, whether the skill should trigger
at all, tags, a status and its provenance (the production trace, session, activation and cluster
it was promoted from). A set is the versioned list of cases of one skill: every change writes a
new version, and a run names the version it replayed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from skillsight.errors import GoldenSetError

CaseStatus = Literal["active", "advisory", "archived"]
STATUSES: tuple[str, ...] = ("active", "advisory", "archived")
"""``active`` cases are replayed and counted; ``advisory`` ones are replayed and reported apart
(they do not move the lift); ``archived`` ones are kept for history and not replayed."""

_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


class Provenance(BaseModel):
    """Where a case came from: the production evidence it was promoted from, if any."""

    trace_id: str = ""
    session_id: str = ""
    activation_id: str = ""
    cluster_id: str = ""
    skill_version: str = Field(default="", description="the skill version that ran it")
    passed_in_production: bool | None = Field(
        default=None,
        description="every evaluation of the activation passed (None: not promoted from an "
        "evaluated activation)",
    )


class GoldenCase(BaseModel):
    """One test case of a skill."""

    case_id: str
    question: str = Field(min_length=1, description="the request the agent gets")
    ground_truth: str | None = Field(default=None, description="a correct final answer")
    expected_behavior: list[str] = Field(default_factory=list)
    expected_skill: str | None = Field(
        default=None, description="the skill a correct run uses; None = the right answer is none"
    )
    expected_script: str | None = None
    environment: Any = Field(default=None, description="free-form environment (JSON)")
    files: list[str] = Field(
        default_factory=list,
        description="fixture files, relative paths copied into each fresh workspace",
    )
    should_trigger: bool | None = Field(
        default=None, description="None: the skill should trigger exactly when it is expected"
    )
    tags: dict[str, str] = Field(default_factory=dict)
    status: CaseStatus = "active"
    provenance: Provenance = Field(default_factory=Provenance)

    @field_validator("case_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not _CASE_ID.match(value):
            raise ValueError(
                f"case id {value!r} must be 1-128 letters, digits, '.', '_', ':' or '-', "
                "starting with a letter or digit"
            )
        return value

    @field_validator("files")
    @classmethod
    def _relative_files(cls, value: list[str]) -> list[str]:
        for path in value:
            parts = path.replace("\\", "/").split("/")
            if not path or path.startswith(("/", "~")) or ".." in parts:
                raise ValueError(f"fixture file {path!r} must be a relative path inside the set")
        return value

    def triggers_for(self, skill: str) -> bool:
        """Whether the target ``skill`` should trigger on this case."""
        if self.should_trigger is not None:
            return self.should_trigger
        return self.expected_skill == skill


def case_id_for(question: str, salt: str = "") -> str:
    """A stable id for a drafted case: ``c-`` and 12 hex digits of its request (and salt)."""
    digest = hashlib.sha256(f"{salt}\x1f{question}".encode()).hexdigest()
    return "c-" + digest[:12]


class GoldenSet(BaseModel):
    """A version of a skill's golden set."""

    set_id: str
    skill_name: str = Field(min_length=1)
    version: int = Field(default=1, ge=1)
    name: str = ""
    description: str = ""
    defaults: dict[str, Any] = Field(
        default_factory=dict, description="run defaults, e.g. timeout_sec (BenchFlow's defaults)"
    )
    note: str = Field(default="", description="what changed in this version")
    created_at: str = ""
    cases: list[GoldenCase] = Field(default_factory=list)

    def case(self, case_id: str) -> GoldenCase:
        for case in self.cases:
            if case.case_id == case_id:
                return case
        raise GoldenSetError(f"golden set {self.set_id} v{self.version} has no case {case_id!r}")

    def replayed(self) -> list[GoldenCase]:
        """The cases a rerun plays: every case not archived."""
        return [c for c in self.cases if c.status != "archived"]

    def with_cases(self, cases: list[GoldenCase], note: str) -> GoldenSet:
        """The next version of this set holding ``cases``."""
        ids = [c.case_id for c in cases]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise GoldenSetError(f"case ids appear more than once: {', '.join(duplicates)}")
        return self.model_copy(
            update={"version": self.version + 1, "cases": cases, "note": note, "created_at": ""}
        )


def new_set_id(skill_name: str, salt: str) -> str:
    """``gs-`` and 12 hex digits of the skill and a salt (the creation time)."""
    return "gs-" + hashlib.sha256(f"{skill_name}\x1f{salt}".encode()).hexdigest()[:12]


def check_unique(cases: list[GoldenCase]) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.case_id in seen:
            raise GoldenSetError(f"case id {case.case_id!r} appears more than once")
        seen.add(case.case_id)


def first_error(exc: ValidationError) -> str:
    """The first problem pydantic found, as ``field: message``."""
    error = exc.errors()[0]
    place = ".".join(str(p) for p in error.get("loc", ()))
    return f"{place}: {error.get('msg', 'invalid')}" if place else str(error.get("msg"))


def string_list(value: Any, where: str) -> list[str]:
    """A file's list of strings (absent: empty); a clear error naming ``where`` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GoldenSetError(f"{where} must be a list of strings")
    return list(value)


def case_object(item: Any, where: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A case of an evals file as an object, and its ``skillsight`` extension (absent: empty)."""
    if not isinstance(item, Mapping):
        raise GoldenSetError(f"{where} is not an object")
    extra = item.get("skillsight") or {}
    if not isinstance(extra, Mapping):
        raise GoldenSetError(f"{where}.skillsight is not an object")
    return item, extra
