"""ATIF-v1.7 trajectories rebuilt from a session's normalized spans and events."""

from skillsight.collector.trajectories import atif
from skillsight.collector.trajectories._rows import RowError
from skillsight.collector.trajectories.atif import Trajectory, TrajectoryError
from skillsight.collector.trajectories.build import build_trajectory

__all__ = ["RowError", "Trajectory", "TrajectoryError", "atif", "build_trajectory"]
