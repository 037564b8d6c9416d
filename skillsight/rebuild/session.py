"""The one entry point that turns a session's stored rows into its trajectory and activations.

Pure and deterministic: the same rows, in any order and however often repeated, give the same
trajectory and the same activations (ids included), so a rebuild after late spans replaces the
previous result instead of adding to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from skillsight.rebuild.activations.extract import extract_activations
from skillsight.rebuild.catalogue import Catalogue
from skillsight.rebuild.trajectories import atif
from skillsight.rebuild.trajectories.build import build_trajectory
from skillsight.store.records import Activation, SkillContract

__all__ = ["Rebuilt", "rebuild_session"]


@dataclass(frozen=True)
class Rebuilt:
    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation]


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
    activations = extract_activations(trajectory, project_id=project_id, catalogue=catalogue)
    rerun = str((trajectory.extra or {}).get("rerun_id") or "")
    if rerun:  # a paired rerun's session: stored and scored, kept out of production read models
        activations = [a.model_copy(update={"rerun_id": rerun}) for a in activations]
    return Rebuilt(trajectory.session_id or "", trajectory, activations)
