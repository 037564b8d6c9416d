"""Keeping the scorecard read models of migration 0012 exact.

Every evaluation row written through :meth:`Evaluations.write` is copied, narrow and with its
activation's start, into ``scorecard_rows``, and the (skill, start day, hour) it belongs to is
marked in ``scorecard_hour_marks`` afterwards; so is the start hour of every production
activation a rebuild writes (:meth:`Rebuilds.write`). Marks naming a whole day (an explicit
:meth:`ScorecardRollups.mark`, days never refreshed, older writers) go to ``scorecard_marks``.
A refresh recomputes whole days of ``scorecard_days`` from ``scorecard_rows`` (the current row
of each (activation, evaluator): the newest, whatever evaluator version wrote it) and from
``activations`` (each day's activations, scored or not) and stamps them with the time it began.
A day is *clean* when its newest refresh began after its newest mark (by more than
:data:`CLOCK_MARGIN_US`, for clocks of cluster nodes); readers take clean days from
``scorecard_days`` and the rest from ``scorecard_rows``, so a read is exact whether or not the
refresher has caught up. Each refresh writes the day's rows per hour into ``scorecard_hours``
first, under the same stamp; readers take from there the hours of a day not marked since its
newest refresh (when no mark since names the whole day), and the whole hours of a window's
first (partial) day (``_window_plan``).

Rows written before the migration are copied by :meth:`ScorecardRollups.backfill` (the
refresher's first pass does it); until then ``read_models`` has no ``scorecards`` row and readers
use the raw tables. Days of activations written before rebuilds marked them, never refreshed, are
marked once by :meth:`ScorecardRollups.mark_activation_days` (by the backfill or the refresher's
first pass); until then ``read_models`` has no ``activation_days`` row and the skills list counts
activations in their table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from skillsight.store._day_aggregates import REFRESH_HOURS, STAMPED_HOURS
from skillsight.store._day_states import DayState, epoch_hour, read_day_states
from skillsight.store._read_models import (
    ANY_EVALUATION,
    EVALUATED_SKILLS,
    read_model_ready,
    set_read_model_ready,
)
from skillsight.store._rollup_marks import (
    ACTIVATION_MARK_SELECT,
    ACTIVATION_MARK_STRUCTURE,
    COPIED,
    COPY,
    COPY_COLUMNS,
    COPY_SELECT,
    COPY_STRUCTURE,
    MARK_COLUMNS,
    MARK_DAYS,
    MARK_SELECT,
    MARK_UNREFRESHED_ACTIVATION_DAYS,
    STARTS,
)
from skillsight.store._rollup_rows import write_refresh

if TYPE_CHECKING:
    from skillsight.store._store import Store

T = TypeVar("T")

READ_MODEL = "scorecards"
CLOCK_MARGIN_US = 2_000_000
"""A mark this close to a refresh's stamp (clocks of two cluster nodes may differ by that much)
counts as after it: the day is refreshed again."""
SWEEP_US = 600_000_000
"""How often a refresher pass reads the state of every day (the others read the days marked
since the pass before): what it finds then and not before (a mark later than the clock margin
allows, a day refreshed before the hour rollups) waits at most this long. Reading every state
costs ~27 CPU-ms at 4,550 (skill, day) cells and ~550 at 73,000 (200 skills for a year), at
every pass."""
HOLD_US = 60_000_000
"""What the service's refresher passes as ``refresh_dirty``'s ``hold_us``
(``SKILLSIGHT_SCORECARD_REFRESH_HOLD_S``): a day refreshed less than this long ago whose marks
since all name their hour waits. Live traffic marks today's newest hour again within a second
of each refresh, so readers read that hour from the rows whatever the refresher does;
refreshing it at every pass (5 s) cost ~0.3 CPU-s a pass at 50 skills written to
(docs/performance.md) and grows with them."""
_REFRESH_CELLS_PER_STATEMENT = 128
"""(skill, day) cells refreshed by one statement: a pass over today's writes refreshes the day of
every skill written to in a few statements, not four a skill (at 10M activations over 90 days,
the newest day of 50 skills in 3.2-3.6 CPU-s that way)."""

_NOW = "SELECT toUnixTimestamp64Micro(now64(6)) AS now_us"

ACTIVATIONS_READ_MODEL = "activation_days"
"""Every (project, skill, start day) of the ``activations`` table is marked or refreshed (in
``read_models`` once the days written before the rebuild write path marked them are marked):
readers may then count activations from the kind 4 rows of clean days."""

_ANY_ACTIVATION = "SELECT count() AS n FROM (SELECT 1 FROM activations LIMIT 1)"

# Every current evaluation row of a skill with its activation's start (the scorecard's join).
_BACKFILL = f"""
INSERT INTO scorecard_rows ({", ".join(COPY_COLUMNS)})
SELECT e.project_id, e.skill_name, a.started_at, e.activation_id, e.evaluator,
       e.evaluator_version, e.skill_version, e.score, e.passed, e.label, e.evaluated_at
FROM (
    SELECT project_id, skill_name, activation_id, evaluator, evaluator_version, skill_version,
           score, passed, label, evaluated_at
    FROM evaluations
    WHERE project_id = {{project:String}} AND skill_name = {{skill:String}}
    ORDER BY activation_id, evaluator, evaluated_at DESC
    LIMIT 1 BY activation_id, evaluator
) AS e
INNER JOIN (
    SELECT activation_id, min(started_at) AS started_at FROM activations
    WHERE project_id = {{project:String}} AND skill_name = {{skill:String}}
    GROUP BY activation_id
) AS a ON e.activation_id = a.activation_id"""

_ROW_DAYS = """
SELECT DISTINCT toString(toDate(started_at)) AS day FROM scorecard_rows
WHERE project_id = {project:String} AND skill_name = {skill:String}
ORDER BY day"""


class ScorecardRollups:
    """The write side of the scorecard read models: copies, marks, refreshes, backfill."""

    def __init__(self, store: Store, *, clock_margin_us: int = CLOCK_MARGIN_US) -> None:
        self._store = store
        self._ready = False
        self._activations_ready = False
        self.clock_margin_us = clock_margin_us
        self.sweep_every_us = SWEEP_US
        # per shard: where its next pass reads marks from (its last pass's stamp, or the refresh
        # of a day that pass held, if earlier) and the stamp of its last pass over every day
        self._passed: dict[tuple[int, int], tuple[int, int]] = {}
        self.held = 0
        """Days the last :meth:`refresh_dirty` left waiting (its ``hold_us``)."""

    # -- readiness -------------------------------------------------------------------------

    def ready(self) -> bool:
        """Whether ``scorecard_rows`` holds every evaluation row (readers may use the read
        models). A store without evaluations is ready as soon as this is asked."""
        self._ready = self._ready or read_model_ready(self._store, READ_MODEL, ANY_EVALUATION)
        return self._ready

    def activations_ready(self) -> bool:
        """Whether every day of the ``activations`` table is marked or refreshed, so a clean
        day's kind 4 rows count all of its activations. A store without activations is ready
        as soon as this is asked."""
        self._activations_ready = self._activations_ready or read_model_ready(
            self._store, ACTIVATIONS_READ_MODEL, _ANY_ACTIVATION
        )
        return self._activations_ready

    def mark_activation_days(self) -> None:
        """Mark every (skill, start day) of the ``activations`` table never refreshed (written
        before rebuilds marked their days, and nobody scored them), then record the activation
        read model as ready: the refresher counts them."""
        self._store.execute(MARK_UNREFRESHED_ACTIVATION_DAYS)
        set_read_model_ready(self._store, ACTIVATIONS_READ_MODEL)
        self._activations_ready = True

    # -- the write path ----------------------------------------------------------------------

    def mark_activations(self, activations: pa.Table) -> None:
        """Mark the start day of every production activation row of a rebuild's batch (the
        ``activations`` insert's, columns ``project_id``, ``skill_name``, ``started_at`` as
        text and ``rerun_id``), written after the rows."""
        production = activations.filter(pc.equal(activations.column("rerun_id"), ""))
        if production.num_rows == 0:
            return
        narrow = production.select(["project_id", "skill_name", "started_at"])
        self._store.insert_select(
            "scorecard_hour_marks",
            MARK_COLUMNS,
            ACTIVATION_MARK_SELECT,
            narrow,
            ACTIVATION_MARK_STRUCTURE,
        )

    def record(self, project_id: str, evaluations: pa.Table, started: Sequence[str] = ()) -> int:
        """Copy stored evaluation rows (the Arrow batch ``Evaluations.write`` inserted) into
        ``scorecard_rows``, then mark their start days. ``started``: per row, the start of the
        activation it scored as the activation record carries it (ISO 8601, parsed as the
        ``activations`` table parses it); rows without one have it looked up, and are left
        out when their activation is not stored, as the scorecard's join leaves them out.
        Returns the rows copied."""
        count = evaluations.num_rows
        if count == 0:
            return 0
        texts = [str(t or "") for t in started] if len(started) == count else [""] * count
        ids = evaluations.column("activation_id").to_pylist()
        unknown = sorted({ids[i] for i in range(count) if not texts[i]})
        starts: dict[str, int] = {}
        if unknown:
            skills = sorted(set(evaluations.column("skill_name").to_pylist()))
            params = {"project": project_id, "skills": skills, "ids": unknown}
            starts = {
                str(r["activation_id"]): int(r["started_us"])
                for r in self._store.query(STARTS, params)
            }
        keep = [i for i in range(count) if texts[i] or ids[i] in starts]
        if not keep:
            return 0
        picked = evaluations.take(pa.array(keep, pa.int64()))
        columns = {name: picked.column(name) for name in COPY.names if name in COPIED}
        columns["project_id"] = pa.array([project_id] * len(keep), pa.string())
        columns["started_us"] = pa.array([starts.get(ids[i], 0) for i in keep], pa.int64())
        columns["started_text"] = pa.array([texts[i] for i in keep], pa.string())
        copy = pa.table([columns[name] for name in COPY.names], schema=COPY)
        self._store.insert_select("scorecard_rows", COPY_COLUMNS, COPY_SELECT, copy, COPY_STRUCTURE)
        # after the rows, from the same batch: a mark per row (the table keeps one per hour)
        self._store.insert_select(
            "scorecard_hour_marks", MARK_COLUMNS, MARK_SELECT, copy, COPY_STRUCTURE
        )
        return len(keep)

    def mark(self, project_id: str, skill: str, days: Sequence[str]) -> None:
        """Record that these start days of a skill changed, every hour of them (written after
        their rows)."""
        if days:
            self._store.execute(
                MARK_DAYS, {"project": project_id, "skill": skill, "days": list(days)}
            )

    # -- refreshing --------------------------------------------------------------------------

    def day_states(
        self,
        project_id: str = "",
        skill: str = "",
        *,
        since_us: int = 0,
        marked_since_us: int | None = None,
        clean_days_once: bool = False,
    ) -> list[DayState]:
        """Every marked or refreshed (project, skill, day); with ``since_us``, from the day of
        that moment on (a window's days); with ``marked_since_us``, only the days marked at or
        after that moment; with ``clean_days_once``, one state for each day on which every
        state is clean, but the window's first (:func:`read_day_states`)."""
        return read_day_states(
            self._store,
            project_id,
            skill,
            since_us=since_us,
            margin_us=self.clock_margin_us,
            marked_since_us=marked_since_us,
            clean_days_once=clean_days_once,
        )

    def refresh(self, project_id: str, skill: str, days: Sequence[str]) -> None:
        """Recompute these start days of a skill (:meth:`refresh_cells`)."""
        self.refresh_cells(project_id, [(skill, day) for day in days])

    def refresh_cells(self, project_id: str, cells: Sequence[tuple[str, str]]) -> None:
        """Recompute these (skill, start day) cells of a project from ``scorecard_rows`` and
        ``activations``, their hours first, then the days, all stamped with a moment taken
        before reading (the store's clock); a statement per
        :data:`_REFRESH_CELLS_PER_STATEMENT` cells, whatever the number of skills."""
        for chunk in _chunks(sorted(set(cells))):
            self._refresh_days(project_id, self._now(), chunk)

    def refresh_dirty(
        self, shard: tuple[int, int] = (0, 1), *, sweep: bool = False, hold_us: int = 0
    ) -> int:
        """Refresh every day marked since its last refresh, and every clean day refreshed
        before the hour rollups (its day rows stay readable meanwhile), of the skills in this
        shard (by a hash of project and skill), a project's cells together; a day whose marks
        since its refresh all name their hour has only those hours recomputed. Returns the
        days refreshed.

        Only the first pass of a shard, one every ``sweep_every_us`` (:data:`SWEEP_US`) and
        one asked to ``sweep`` read the state of every day; the others read the days marked
        since the pass before began, less the clock margin: after a pass every day it saw
        marked is refreshed under its stamp, so a day marked since its refresh has a mark at
        or after that stamp less the margin (the protocol that keeps a refresh exact). A pass
        that fails leaves the next one reading from the same moment.

        With ``hold_us``, a day whose marks since its refresh all name their hour waits while
        that refresh is younger than ``hold_us`` (:data:`HOLD_US`; readers read its marked
        hours from the rows meanwhile); the next pass reads from that refresh's stamp at the
        latest, so it sees the day again. A day marked whole or never refreshed does not wait.
        :attr:`held` counts the days that waited in the last pass."""
        index, count = shard
        stamp = self._now()  # before the states are read: a mark they miss is after it
        last, swept = self._passed.get(shard, (0, 0))
        sweep = sweep or not last or stamp - swept >= self.sweep_every_us
        marked_since = None if sweep else last - self.clock_margin_us
        whole: dict[str, list[tuple[str, str]]] = {}
        by_hour: dict[str, list[DayState]] = {}
        cursor, held = stamp, 0
        for state in self.day_states(marked_since_us=marked_since):
            if state.clean and state.hourly:
                continue
            if _shard_of(state.project_id, state.skill_name, count) != index:
                continue
            if state.hourly and stamp - state.refreshed_us < hold_us:
                # its marks are after its refresh less the margin: the next pass reads them
                cursor, held = min(cursor, state.refreshed_us), held + 1
                continue
            if state.hourly:
                by_hour.setdefault(state.project_id, []).append(state)
            else:
                whole.setdefault(state.project_id, []).append((state.skill_name, state.day))
        for project_id in sorted({*whole, *by_hour}):
            cells = list(whole.get(project_id, []))
            for states in _chunks(by_hour.get(project_id, [])):
                cells += self._refresh_hours(project_id, stamp, states)
            for chunk in _chunks(sorted(set(cells))):
                self._refresh_days(project_id, stamp, chunk)
        self._passed[shard] = (cursor, stamp if sweep else swept)
        self.held = held
        return sum(map(len, whole.values())) + sum(map(len, by_hour.values()))

    def _now(self) -> int:
        return int(self._store.query(_NOW)[0]["now_us"])

    def _refresh_days(self, project_id: str, stamp: int, cells: Sequence[tuple[str, str]]) -> None:
        """Recompute some (skill, day) cells whole, stamped ``stamp``."""
        params = {
            "project": project_id,
            "skills": sorted({skill for skill, _ in cells}),
            "days": sorted({day for _, day in cells}),
            "raw_hours": [],
            "cells": [skill + day for skill, day in cells],
            "hour_cells": [],
        }
        hours = self._store.query(REFRESH_HOURS, params)
        write_refresh(self._store, project_id, stamp, cells, hours)

    def _refresh_hours(
        self, project_id: str, stamp: int, states: Sequence[DayState]
    ) -> list[tuple[str, str]]:
        """Refresh days whose marks since their newest refresh all name their hour: those hours
        recomputed from the rows, the others' rows taken as that refresh wrote them, the day
        rows summed from both, all stamped ``stamp``. Returns the days whose newest refresh's
        hours are not all here (its marker row missing: a lagging replica), to recompute whole."""
        params = {
            "project": project_id,
            "skills": sorted({state.skill_name for state in states}),
            "days": sorted({state.day for state in states}),
        }
        stamped = [f"{state.skill_name}{state.day}{state.refreshed_us}" for state in states]
        before = self._store.query(STAMPED_HOURS, {**params, "stamped": stamped})
        found = {(str(r["skill_name"]), str(r["day"])) for r in before if not int(r["row_kind"])}
        ready = [state for state in states if (state.skill_name, state.day) in found]
        missing = [cell for cell in ((s.skill_name, s.day) for s in states) if cell not in found]
        if not ready:
            return missing
        dirty = {(state.skill_name, state.day): state.dirty_hours for state in ready}
        kept = [
            row
            for row in before
            if int(row["row_kind"])
            and int(row["hour"]) not in dirty[(str(row["skill_name"]), str(row["day"]))]
        ]
        marked = [(state, hour) for state in ready for hour in sorted(state.dirty_hours)]
        hour_cells = [f"{state.skill_name}{state.day}{hour:02d}" for state, hour in marked]
        hours = sorted({epoch_hour(state.day, hour) for state, hour in marked})
        fresh = self._store.query(
            REFRESH_HOURS,
            {**params, "days": [], "raw_hours": hours, "cells": [], "hour_cells": hour_cells},
        )
        write_refresh(self._store, project_id, stamp, sorted(dirty), kept + fresh)
        return missing

    # -- rows written before the read models existed -----------------------------------------

    def backfill(self, project_id: str = "") -> int:
        """Copy every current evaluation row into ``scorecard_rows`` (a skill at a time),
        refresh every day, and record the read model as ready. Rows written meanwhile are
        copied by their writers. Returns the skills copied."""
        skills = self._store.query(EVALUATED_SKILLS, {"project": project_id})
        for row in skills:
            params = {"project": str(row["project_id"]), "skill": str(row["skill_name"])}
            self._store.execute(_BACKFILL, params)
            days = [str(r["day"]) for r in self._store.query(_ROW_DAYS, params)]
            # no marks: the refresh reads every row copied; rows written since are marked
            # by their writers
            self.refresh(params["project"], params["skill"], days)
        if not project_id:
            set_read_model_ready(self._store, READ_MODEL)
            self._ready = True
            if not self.activations_ready():  # days with activations and no evaluation
                self.mark_activation_days()
        return len(skills)


def _chunks(items: Sequence[T]) -> Iterator[list[T]]:
    """``items`` a statement's worth at a time (:data:`_REFRESH_CELLS_PER_STATEMENT`)."""
    for start in range(0, len(items), _REFRESH_CELLS_PER_STATEMENT):
        yield list(items[start : start + _REFRESH_CELLS_PER_STATEMENT])


def _shard_of(project_id: str, skill: str, count: int) -> int:
    if count <= 1:
        return 0
    digest = hashlib.blake2b(f"{project_id}\0{skill}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count
