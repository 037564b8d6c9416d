"""The one entry point that turns a session's stored rows into its trajectory and activations.

Pure and deterministic: the same rows, in any order and however often repeated, give the same
trajectory and the same activations (ids included), so a rebuild after late spans replaces the
previous result instead of adding to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillsight.rebuild.activations.extract import Timeline, extract
from skillsight.rebuild.catalogue import Catalogue
from skillsight.rebuild.trajectories import Basis, atif, build_with_basis, extend
from skillsight.rebuild.trajectories.build import build_trajectory
from skillsight.store.records import Activation, SkillContract

__all__ = ["Rebuilt", "rebuild_or_extend", "rebuild_session"]

Rows = tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]


@dataclass(frozen=True)
class Rebuilt:
    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation]
    basis: Basis | None = None
    """What a later rebuild can extend (:func:`rebuild_or_extend`); None: it starts over."""
    catalogue: Catalogue | None = None
    """The catalogue the activations were joined to (kept with a basis)."""
    extended: bool = False
    """This rebuild extended the previous one (its steps are kept, the new ones appended)."""
    timeline: Timeline | None = field(default=None, compare=False, repr=False)
    """The main agent context's items and starts (kept with a basis): the next extension's
    extraction reads only its new steps'. A cache: not part of what the rebuild is."""


def rebuild_session(
    spans: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]] = (),
    *,
    project_id: str = "default",
    catalogue: Catalogue | Mapping[str, SkillContract] | None = None,
    session_id: str = "",
) -> Rebuilt:
    """Rows of one session (``Store.spans.find`` / ``list_events`` dicts) → what it was.

    ``catalogue`` holds the skills' declared contracts (from ``skillsight skills scan``): a
    :class:`~skillsight.rebuild.catalogue.Catalogue` of every recorded version, or a plain
    ``{name: contract}`` mapping (one version per skill). An activation whose telemetry names
    the version it ran gets that version's contract, or, when the catalogue does not hold that
    version, only what its telemetry reported; one that names no version gets the latest.
    ``session_id`` may be left empty: the rows' own session id is used.
    """
    trajectory = build_trajectory(spans, events, session_id=session_id)
    return _rebuilt(trajectory, None, project_id, catalogue)


def rebuild_or_extend(
    spans: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    *,
    previous: Rebuilt | None,
    new: Rows | None,
    project_id: str,
    catalogue: Catalogue | Mapping[str, SkillContract] | None,
    session_id: str,
) -> Rebuilt:
    """What :func:`rebuild_session` returns for all of the session's rows (``spans``,
    ``events``), with a basis for the next rebuild. ``previous`` is the session's last
    rebuild and ``new`` the rows that came since (None when some row changed or was dropped):
    when the new rows are new prompts, the trajectory is extended instead of rebuilt
    (:func:`skillsight.rebuild.trajectories.extend`); the activations are always extracted
    from the whole trajectory, with the catalogue as it is now."""
    if previous is not None and previous.basis is not None and new is not None:
        extended = extend(
            previous.trajectory, previous.basis, new[0], new[1], session_id=session_id
        )
        if extended is not None:
            trajectory, basis = extended
            kept = _kept(previous, trajectory, project_id, catalogue)
            return _rebuilt(
                trajectory,
                basis,
                project_id,
                catalogue,
                kept=kept,
                timeline=previous.timeline,
                extended=True,
            )
    return _rebuilt(*build_with_basis(spans, events, session_id=session_id), project_id, catalogue)


def _rebuilt(
    trajectory: atif.Trajectory,
    basis: Basis | None,
    project_id: str,
    catalogue: Catalogue | Mapping[str, SkillContract] | None,
    *,
    kept: tuple[list[Activation], int] | None = None,
    timeline: Timeline | None = None,
    extended: bool = False,
) -> Rebuilt:
    activations, made = extract(
        trajectory, project_id=project_id, catalogue=catalogue, kept=kept, timeline=timeline
    )
    rerun = str((trajectory.extra or {}).get("rerun_id") or "")
    if rerun:  # a paired rerun's session: stored and scored, kept out of production read models
        activations = [a.model_copy(update={"rerun_id": rerun}) for a in activations]
    joined = Catalogue.of(catalogue) if basis is not None else None
    return Rebuilt(
        trajectory.session_id or "",
        trajectory,
        activations,
        basis,
        joined,
        extended,
        made if basis is not None else None,
    )


def _kept(
    previous: Rebuilt,
    trajectory: atif.Trajectory,
    project_id: str,
    catalogue: Catalogue | Mapping[str, SkillContract] | None,
) -> tuple[list[Activation], int] | None:
    """The previous rebuild's main-agent activations that start before its last user step,
    when the extended trajectory's activations are joined as theirs were (same project,
    catalogue, workspace and visible skills; no paired rerun): a new prompt starts with a
    user step, which closes them."""
    before, after = previous.trajectory.extra or {}, trajectory.extra or {}
    same = all(before.get(k) == after.get(k) for k in ("workspace", "visible_skills", "rerun_id"))
    if not same or after.get("rerun_id") or previous.catalogue != Catalogue.of(catalogue):
        return None
    if previous.activations and previous.activations[0].project_id != project_id:
        return None
    user_step = next(
        (s.step_id for s in reversed(previous.trajectory.steps) if s.source == "user"), None
    )
    if user_step is None:
        return None
    main = [a for a in previous.activations if a.trajectory_id == trajectory.trajectory_id]
    if any(a.trigger_step_id is None for a in main):
        return None
    held = [a for a in main if (a.trigger_step_id or 0) < user_step]
    return held, user_step
