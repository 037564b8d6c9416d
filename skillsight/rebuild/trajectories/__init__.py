"""ATIF-v1.7 trajectories rebuilt from a session's normalized spans and events."""

from skillsight.rebuild.trajectories import atif
from skillsight.rebuild.trajectories._cc_pairing import (
    REQUEST_EVENTS,
    REQUEST_SPAN,
    requests_logged,
)
from skillsight.rebuild.trajectories._extend import Basis, build_with_basis, extend
from skillsight.rebuild.trajectories._rows import Event, RowError, Span
from skillsight.rebuild.trajectories.atif import Trajectory, TrajectoryError
from skillsight.rebuild.trajectories.build import build_trajectory

__all__ = [
    "REQUEST_EVENTS",
    "REQUEST_SPAN",
    "Basis",
    "Event",
    "RowError",
    "Span",
    "Trajectory",
    "TrajectoryError",
    "atif",
    "build_trajectory",
    "build_with_basis",
    "extend",
    "requests_logged",
]
