"""The one entry point that turns a session's stored rows into its trajectory and activations.

Pure and deterministic: the same rows, in any order and however often repeated, give the same
trajectory and the same activations (ids included), so a rebuild after late spans replaces the
previous result instead of adding to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillsight.rebuild.activations.extract import extract_activations
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
    extended: bool = False
    """This rebuild extended the previous one (its steps are kept, the new ones appended)."""


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
            return _rebuilt(*extended, project_id, catalogue, extended=True)
    return _rebuilt(*build_with_basis(spans, events, session_id=session_id), project_id, catalogue)


def _rebuilt(
    trajectory: atif.Trajectory,
    basis: Basis | None,
    project_id: str,
    catalogue: Catalogue | Mapping[str, SkillContract] | None,
    *,
    extended: bool = False,
) -> Rebuilt:
    activations = extract_activations(trajectory, project_id=project_id, catalogue=catalogue)
    rerun = str((trajectory.extra or {}).get("rerun_id") or "")
    if rerun:  # a paired rerun's session: stored and scored, kept out of production read models
        activations = [a.model_copy(update={"rerun_id": rerun}) for a in activations]
    return Rebuilt(trajectory.session_id or "", trajectory, activations, basis, extended)
