"""Golden sets in the store: reading a version, writing the next one, promoting activations,
importing files of cases."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from skillsight.errors import GoldenSetError
from skillsight.evaluators.judges import JudgeClient
from skillsight.goldens._draft import draft_case
from skillsight.goldens._draft_judge import judge_behavior
from skillsight.goldens._files import ImportedCases
from skillsight.goldens._model import GoldenCase, GoldenSet, first_error, new_set_id
from skillsight.rebuild.trajectories import Trajectory, TrajectoryError, atif
from skillsight.store import GoldenSetRow, Store, stamp_iso


def _golden(row: GoldenSetRow, cases: list[GoldenCase]) -> GoldenSet:
    return GoldenSet(
        set_id=row["set_id"],
        skill_name=row["skill_name"],
        version=row["version"],
        name=row["name"],
        description=row["description"],
        defaults=json.loads(row["defaults"] or "{}"),
        note=row["note"],
        created_at=row["created_at"],
        cases=cases,
    )


def load_set(store: Store, project_id: str, set_id: str, version: int = 0) -> GoldenSet:
    """A version of a set (0: the newest) with its cases, in order."""
    row = store.goldens.version(project_id, set_id, version)
    if row is None:
        which = f"version {version} of " if version else ""
        raise GoldenSetError(f"no {which}golden set {set_id!r} in project {project_id!r}")
    cases = []
    for stored in store.goldens.cases(project_id, set_id, row["version"]):
        try:
            cases.append(GoldenCase.model_validate_json(stored["record"]))
        except ValidationError as exc:
            raise GoldenSetError(
                f"stored case {stored['case_id']} of {set_id} is malformed: {first_error(exc)}"
            ) from exc
    return _golden(row, cases)


def save_version(store: Store, project_id: str, golden: GoldenSet) -> GoldenSet:
    """Write ``golden`` as stored version ``golden.version``; returns it stamped."""
    micros = int(time.time() * 1_000_000)
    stamped = golden.model_copy(update={"created_at": stamp_iso(micros)})
    store.goldens.write_version(
        project_id,
        {
            "set_id": golden.set_id,
            "version": golden.version,
            "skill_name": golden.skill_name,
            "name": golden.name,
            "description": golden.description,
            "defaults": json.dumps(golden.defaults, sort_keys=True),
            "note": golden.note,
            "created_at": micros,
        },
        [
            {
                "position": index,
                "case_id": case.case_id,
                "status": case.status,
                "record": case.model_dump_json(),
                "activation_id": case.provenance.activation_id,
                "cluster_id": case.provenance.cluster_id,
            }
            for index, case in enumerate(golden.cases)
        ],
    )
    return stamped


def create_set(
    store: Store,
    project_id: str,
    skill_name: str,
    cases: list[GoldenCase],
    *,
    name: str = "",
    description: str = "",
    defaults: dict[str, object] | None = None,
    note: str = "created",
) -> GoldenSet:
    """A new set (version 1) of ``skill_name``."""
    golden = GoldenSet(
        set_id=new_set_id(skill_name, f"{project_id}\x1f{time.time_ns()}"),
        skill_name=skill_name,
        name=name or skill_name,
        description=description,
        defaults=dict(defaults or {}),
        note=note,
        cases=[],
    )
    golden = golden.with_cases(cases, note).model_copy(update={"version": 1})
    return save_version(store, project_id, golden)


def newest_set_of(store: Store, project_id: str, skill_name: str) -> GoldenSet | None:
    """The skill's most recently changed set, if it has one."""
    found = store.goldens.latest(project_id, skill=skill_name)
    return load_set(store, project_id, found[0]["set_id"]) if found else None


def final_answer(trajectory: Trajectory) -> str | None:
    """The main agent's last message that calls no tool (the session's answer), if any."""
    for step in reversed(trajectory.steps):
        if step.source == "agent" and not step.tool_calls and step.message.strip():
            return step.message
    return None


def _stored_answer(store: Store, project_id: str, session_id: str) -> str | None:
    document = store.trajectories.get(project_id, session_id)
    if document is None:
        return None
    try:
        return final_answer(atif.parse(document))
    except TrajectoryError:
        return None


@dataclass
class Promotion:
    """What a promotion did."""

    golden: GoldenSet
    added: list[GoldenCase] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Activations already promoted into the set (by provenance)."""


def promote(
    store: Store,
    project_id: str,
    activation_ids: Sequence[str],
    *,
    set_id: str = "",
    skill: str = "",
    cluster_id: str = "",
    judge: JudgeClient | None = None,
) -> Promotion:
    """Draft a case from each activation (with its evaluations and its session's answer) and
    write them into a new version of the set ``set_id`` (default: the newest set of the
    activations' skill, created when it has none). With a ``judge``, the model drafts each
    case's expected behaviour (the rule's draft stays when it cannot); the ``drafted_by`` tag
    says which did."""
    if not activation_ids:
        raise GoldenSetError("nothing to promote: no activation given")
    drafts: list[GoldenCase] = []
    skills: set[str] = set()
    for activation_id in dict.fromkeys(activation_ids):
        activation = store.activations.get(project_id, activation_id)
        if activation is None:
            raise GoldenSetError(f"no activation {activation_id!r} in project {project_id!r}")
        # as the UI showed them: those recorded under its current skill
        rows = store.evaluations.for_activation(
            project_id, activation_id, skill=activation.skill_name
        )
        answer = _stored_answer(store, project_id, activation.session_id)
        case = draft_case(activation, rows, final_answer=answer, cluster_id=cluster_id)
        behavior, drafted_by = case.expected_behavior, "rule"
        if judge is not None:
            behavior, drafted_by = judge_behavior(judge, activation, rows, behavior)
        tags = {**case.tags, "drafted_by": drafted_by}
        drafts.append(case.model_copy(update={"expected_behavior": behavior, "tags": tags}))
        skills.add(activation.skill_name)
    target = skill or (next(iter(skills)) if len(skills) == 1 else "")
    if set_id:
        golden: GoldenSet | None = load_set(store, project_id, set_id)
    elif not target:
        raise GoldenSetError(
            f"the activations are of several skills ({', '.join(sorted(skills))}): name the set"
        )
    else:
        golden = newest_set_of(store, project_id, target)
    if golden is None:
        created = create_set(store, project_id, target, drafts, note=_note(drafts, cluster_id))
        return Promotion(created, added=drafts)
    known = {c.provenance.activation_id for c in golden.cases if c.provenance.activation_id}
    fresh = [d for d in drafts if d.provenance.activation_id not in known]
    skipped = [d.provenance.activation_id for d in drafts if d.provenance.activation_id in known]
    if not fresh:
        return Promotion(golden, skipped=skipped)
    ids = {c.case_id for c in golden.cases}
    fresh = [d for d in fresh if d.case_id not in ids]
    updated = golden.with_cases([*golden.cases, *fresh], _note(fresh, cluster_id))
    return Promotion(save_version(store, project_id, updated), added=fresh, skipped=skipped)


def _note(drafts: Sequence[GoldenCase], cluster_id: str) -> str:
    source = f"cluster {cluster_id}" if cluster_id else "activations"
    return f"promoted {len(drafts)} case(s) from {source}"


def import_cases(
    store: Store, project_id: str, imported: ImportedCases, *, set_id: str = "", note: str = ""
) -> GoldenSet:
    """The imported cases as a new set, or as the next version of ``set_id`` (replacing its
    cases: an edited export read back)."""
    text = note or f"imported {len(imported.cases)} case(s) ({imported.format})"
    if not set_id:
        return create_set(
            store,
            project_id,
            imported.skill_name,
            imported.cases,
            defaults=imported.defaults,
            note=text,
        )
    golden = load_set(store, project_id, set_id)
    if golden.skill_name != imported.skill_name:
        raise GoldenSetError(
            f"set {set_id} is of skill {golden.skill_name!r}, the file of {imported.skill_name!r}"
        )
    updated = golden.with_cases(list(imported.cases), text)
    if imported.defaults:
        updated = updated.model_copy(update={"defaults": imported.defaults})
    return save_version(store, project_id, updated)
