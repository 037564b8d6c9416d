"""ATIF-v1.7 trajectories rebuilt from a session's normalized spans and events."""

from skillsight.rebuild.trajectories import atif
from skillsight.rebuild.trajectories._rows import RowError
from skillsight.rebuild.trajectories.atif import Trajectory, TrajectoryError
from skillsight.rebuild.trajectories.build import build_trajectory

__all__ = ["RowError", "Trajectory", "TrajectoryError", "atif", "build_trajectory"]
