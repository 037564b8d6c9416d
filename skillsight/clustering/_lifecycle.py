"""A cluster's lifecycle, as in an issue tracker: new → acknowledged → resolved, and back.

=============  ===============================================================================
``new``        found by a run (or reopened by someone)
``acknowledged`` someone owns it (``assignee``, ``note``)
``resolved``   someone says it is fixed; the moment is kept
``regressed``  it was resolved, and an activation that started after that moment joined it
=============  ===============================================================================

People set ``new``, ``acknowledged`` and ``resolved``; only the clusterer sets ``regressed``
(a resolved cluster that receives a new member, online or in a run). A regressed cluster is
acknowledged or resolved again like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from skillsight.errors import ConfigError

if TYPE_CHECKING:  # a row of the store's status log, read by whoever holds the store
    from skillsight.store import StatusRow

STATUSES: tuple[str, ...] = ("new", "acknowledged", "resolved", "regressed")
SETTABLE: tuple[str, ...] = ("new", "acknowledged", "resolved")
OPEN: tuple[str, ...] = ("new", "acknowledged", "regressed")


@dataclass(frozen=True)
class ClusterState:
    """Who owns a cluster and where it stands; every change is a new row of the status log."""

    status: str = "new"
    assignee: str = ""
    note: str = ""
    changed_at_us: int = 0
    resolved_at_us: int = 0
    """When it was last resolved (0 = never): members that started later are regressions."""
    changed_by: str = ""
    """``user`` or ``clusterer``."""

    @classmethod
    def of(cls, row: StatusRow) -> ClusterState:
        """The state a ``cluster_status`` row records."""
        return cls(
            row["status"],
            row["assignee"],
            row["note"],
            int(row["changed_at"]),
            int(row["resolved_at"]),
            row["changed_by"],
        )

    def row(self, cluster_id: str) -> dict[str, Any]:
        """The ``cluster_status`` row recording this state."""
        return {
            "cluster_id": cluster_id,
            "status": self.status,
            "assignee": self.assignee,
            "note": self.note,
            "resolved_at": self.resolved_at_us,
            "changed_by": self.changed_by,
            "changed_at": self.changed_at_us,
        }


def set_status(
    state: ClusterState,
    status: str,
    now_us: int,
    *,
    assignee: str | None = None,
    note: str | None = None,
) -> ClusterState:
    """A person's change: to ``new``, ``acknowledged`` or ``resolved``. ``assignee`` and
    ``note`` replace the current ones when given."""
    if status not in SETTABLE:
        raise ConfigError(
            f"status {status!r} cannot be set; choose one of {', '.join(SETTABLE)} "
            "(regressed is set by the clusterer)"
        )
    return ClusterState(
        status=status,
        assignee=state.assignee if assignee is None else assignee,
        note=state.note if note is None else note,
        changed_at_us=now_us,
        resolved_at_us=now_us if status == "resolved" else state.resolved_at_us,
        changed_by="user",
    )


def regressed_by(
    state: ClusterState, newest_member_started_us: int, now_us: int
) -> ClusterState | None:
    """The regressed state when a resolved cluster got a member that started after it was
    resolved, else None (nothing changes)."""
    if state.status != "resolved" or newest_member_started_us <= state.resolved_at_us:
        return None
    return replace(state, status="regressed", changed_at_us=now_us, changed_by="clusterer")


__all__ = ["OPEN", "SETTABLE", "STATUSES", "ClusterState", "regressed_by", "set_status"]
