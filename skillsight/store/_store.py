"""The store: ClickHouse behind one small transport interface, with a repository per table.

A transport implements four primitives — :meth:`Store.execute`, :meth:`Store.query`,
:meth:`Store.insert_select` and :meth:`Store.close` — for the embedded engine (chdb) or a
server (clickhouse-connect). Every SQL statement the service runs lives in the repository of the
table it reads or writes, shared by both transports:

=================  ==========================================================================
``spans``          normalizing inserts and reads of spans (:mod:`._telemetry`)
``events``         the same for OTLP log records
``skills``         the skill catalogue, every scanned version (:mod:`._skills`)
``sessions``       a session's rows, and which sessions got rows (:mod:`._sessions`)
``rebuilds``       writing rebuilds, and which sessions were rebuilt (:mod:`._rebuilds`)
``activations``    current activations
``trajectories``   current ATIF documents
``evaluations``    evaluation rows (:mod:`._evaluations`)
``scorecards``     per-skill aggregates and the gate's rows (:mod:`._scorecards`)
``dead_letters``   rows no INSERT could take, with the reason (:mod:`._dead_letters`)
``failures``       which activations fail, their failure texts and vectors (:mod:`._failures`)
``clusters``       failure clusters, members, status log and runs (:mod:`._clusters`)
``goldens``        golden sets, a version at a time, and their cases (:mod:`._goldens`)
``runs``           paired reruns, their per-attempt results and tagged sessions (:mod:`._runs`)
=================  ==========================================================================
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from skillsight.store import _migrations
from skillsight.store._clusters import Clusters
from skillsight.store._dead_letters import DeadLetters
from skillsight.store._evaluations import Evaluations
from skillsight.store._failures import Failures
from skillsight.store._goldens import GoldenSets
from skillsight.store._rebuilds import Activations, Rebuilds, Trajectories
from skillsight.store._runs import Runs
from skillsight.store._scorecards import Scorecards
from skillsight.store._sessions import Sessions
from skillsight.store._skills import Skills
from skillsight.store._telemetry import Events, Spans


class Store(ABC):
    """A ClickHouse database holding skillsight's tables. Thread-safe."""

    kind: str = "abstract"

    def __init__(self) -> None:
        self.spans = Spans(self)
        self.events = Events(self)
        self.skills = Skills(self)
        self.sessions = Sessions(self)
        self.rebuilds = Rebuilds(self)
        self.activations = Activations(self)
        self.trajectories = Trajectories(self)
        self.evaluations = Evaluations(self)
        self.scorecards = Scorecards(self)
        self.dead_letters = DeadLetters(self)
        self.failures = Failures(self)
        self.clusters = Clusters(self)
        self.goldens = GoldenSets(self)
        self.runs = Runs(self)

    # -- the transport ---------------------------------------------------------------------

    @abstractmethod
    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a statement that returns nothing."""

    @abstractmethod
    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read-only query and return its rows as dicts (JSON types)."""

    @abstractmethod
    def insert_select(
        self, table: str, columns: Sequence[str], select: str, data: pa.Table, structure: str
    ) -> None:
        """``INSERT INTO table (columns) SELECT <select> FROM <data>`` in one statement.

        ``structure`` is the ClickHouse structure of ``data`` for transports that stream it.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the connection; the store is unusable afterwards."""

    # -- the schema ------------------------------------------------------------------------

    def migrate(self) -> list[str]:
        """Apply numbered migrations not yet recorded; return the names applied now."""
        return _migrations.migrate(self)

    def set_retention(self, days: int) -> None:
        """Keep spans and events ``days`` days (0 = forever)."""
        _migrations.set_retention(self, days)

    def ping(self) -> bool:
        return bool(self.query("SELECT 1 AS ok"))


class LockedStore(Store, ABC):
    """A store whose connection serves one statement at a time (chdb)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
