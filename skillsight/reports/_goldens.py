"""Golden sets as the API and the CLI show them: each set's newest version with its
composition, and one version with its cases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from skillsight.goldens import GoldenCase, composition, load_set

if TYPE_CHECKING:  # the store is loaded by whoever hands one in
    from skillsight.store import GoldenSetRow, Store


class CompositionOut(BaseModel):
    cases: int
    replayed: int = Field(description="active and advisory cases (what a rerun plays)")
    by_status: dict[str, int]
    passed_in_production: int
    failed_in_production: int
    unknown: int
    green_share: float | None = Field(
        description="passed / (passed + failed) in production; the seed advises 0.6-0.7"
    )
    by_tag: dict[str, dict[str, int]]
    expecting_skill: int
    expecting_none: int
    advice: str


class GoldenSetSummaryOut(BaseModel):
    set_id: str
    skill_name: str
    version: int
    name: str
    description: str
    note: str
    created_at: str
    composition: CompositionOut


class GoldenSetOut(BaseModel):
    summary: GoldenSetSummaryOut
    defaults: dict[str, object]
    versions: list[int] = Field(description="every stored version, newest first")
    cases: list[GoldenCase]


def _summary(store: Store, project_id: str, row: GoldenSetRow) -> GoldenSetSummaryOut:
    golden = load_set(store, project_id, row["set_id"], row["version"])
    return GoldenSetSummaryOut(
        set_id=golden.set_id,
        skill_name=golden.skill_name,
        version=golden.version,
        name=golden.name,
        description=golden.description,
        note=golden.note,
        created_at=golden.created_at,
        composition=CompositionOut.model_validate(composition(golden), from_attributes=True),
    )


def golden_sets(store: Store, project_id: str, *, skill: str = "") -> list[GoldenSetSummaryOut]:
    """The newest version of each set of the project (of ``skill``), newest first."""
    return [
        _summary(store, project_id, row) for row in store.goldens.latest(project_id, skill=skill)
    ]


def golden_set(store: Store, project_id: str, set_id: str, version: int = 0) -> GoldenSetOut:
    """One version of a set (0: the newest) with its cases and the list of its versions."""
    golden = load_set(store, project_id, set_id, version)
    versions = [r["version"] for r in store.goldens.versions(project_id, set_id=set_id)]
    return GoldenSetOut(
        summary=GoldenSetSummaryOut(
            set_id=golden.set_id,
            skill_name=golden.skill_name,
            version=golden.version,
            name=golden.name,
            description=golden.description,
            note=golden.note,
            created_at=golden.created_at,
            composition=CompositionOut.model_validate(composition(golden), from_attributes=True),
        ),
        defaults=dict(golden.defaults),
        versions=versions,
        cases=golden.cases,
    )
