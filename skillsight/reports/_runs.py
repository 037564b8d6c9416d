"""Paired reruns as the API and the CLI show them: the run list and one run's report.

A finished run's report is the one stored with it (built once from its rows); a run still
going, or one killed before it finished, is reported from the rows stored so far (its
inventory says how many attempts have not run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from skillsight.reruns import RerunReport, report_of

if TYPE_CHECKING:  # the store is loaded by whoever hands one in
    from skillsight.store import Store


class RunSummaryOut(BaseModel):
    run_id: str
    skill_name: str
    skill_version: str
    set_id: str
    set_version: int
    status: str
    planned: int
    finished: int
    started_at: str
    updated_at: str


class RunNotFound(LookupError):
    """No such run in the project."""


def runs(
    store: Store, project_id: str, *, skill: str = "", limit: int = 100
) -> list[RunSummaryOut]:
    """The project's reruns, newest first."""
    return [
        RunSummaryOut.model_validate(dict(row))
        for row in store.runs.find(project_id, skill=skill, limit=limit)
    ]


def run_report(store: Store, project_id: str, run_id: str) -> RerunReport:
    """The run's report: stored when finished, else built from the rows so far."""
    row = store.runs.get(project_id, run_id)
    if row is None:
        raise RunNotFound(f"no run {run_id!r} in this project")
    if row["status"] == "finished" and row["report"]:
        return RerunReport.model_validate_json(row["report"])
    return report_of(store, project_id, run_id)
