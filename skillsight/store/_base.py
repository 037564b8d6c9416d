"""The store: one ClickHouse dialect behind two transports (embedded chdb, clickhouse-connect).

Transports implement four primitives (:meth:`Store._command`, :meth:`Store._rows`,
:meth:`Store._insert_select`, :meth:`Store.close`); everything else, and every SQL statement the
service runs, lives here or in ``queries.py`` and is shared by both.
"""

from __future__ import annotations

import logging
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pyarrow as pa

from skillsight.errors import MigrationError
from skillsight.skills import SkillManifest
from skillsight.store import _evaluation_rows, _rebuilds, queries, rows
from skillsight.store._skill_rows import (
    SKILL_COLUMNS,
    SKILL_SELECT,
    SKILL_STRUCTURE,
    catalogue_entry,
    skill_table,
)
from skillsight.store.normalize import event_projection, span_projection
from skillsight.store.records import Activation

log = logging.getLogger(__name__)

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

# Settings that keep reads bounded and JSON numbers numeric.
READ_SETTINGS: Mapping[str, Any] = {
    "output_format_json_quote_64bit_integers": 0,
    "output_format_json_quote_64bit_floats": 0,
    "max_memory_usage": 4 * 1024**3,
}


class Store(ABC):
    """A ClickHouse database holding skillsight's tables. Thread-safe."""

    kind: str = "abstract"

    def __init__(self) -> None:
        self._span_columns, self._span_select = span_projection()
        self._event_columns, self._event_select = event_projection()

    # -- transport primitives ---------------------------------------------------------------

    @abstractmethod
    def _command(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a statement that returns nothing."""

    @abstractmethod
    def _rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a query and return its rows as dicts (JSON types)."""

    @abstractmethod
    def _insert_select(
        self, table: str, columns: Sequence[str], select: str, data: pa.Table, structure: str
    ) -> None:
        """``INSERT INTO table (columns) SELECT <select> FROM <data>`` in one statement.

        ``structure`` is the ClickHouse structure of ``data`` for transports that stream it.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the connection; the store is unusable afterwards."""

    # -- schema ------------------------------------------------------------------------------

    def migrate(self) -> list[str]:
        """Apply numbered migrations not yet recorded; return the names applied now."""
        self._command(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, "
            "applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) "
            "ENGINE = ReplacingMergeTree ORDER BY version"
        )
        done = {int(r["version"]) for r in self._rows("SELECT version FROM schema_migrations")}
        applied: list[str] = []
        for version, name, sql in _migrations():
            if version in done:
                continue
            try:
                for statement in _statements(sql):
                    self._command(statement)
            except Exception as exc:
                raise MigrationError(f"migration {name} failed: {exc}") from exc
            self._command(
                "INSERT INTO schema_migrations (version, name) VALUES ({v:UInt32}, {n:String})",
                {"v": version, "n": name},
            )
            log.info("applied migration %s", name)
            applied.append(name)
        return applied

    def set_retention(self, days: int) -> None:
        """Keep spans and events ``days`` days (0 = forever)."""
        for table, column in (("spans", "start_time"), ("events", "timestamp")):
            if days > 0:
                ttl = f"toDateTime({column}) + INTERVAL {int(days)} DAY"
                self._command(f"ALTER TABLE {table} MODIFY TTL {ttl}")
            else:
                try:
                    self._command(f"ALTER TABLE {table} REMOVE TTL")
                except Exception:  # REMOVE TTL on a table that has none is an error in ClickHouse
                    log.debug("no TTL to remove on %s", table)

    # -- writes ------------------------------------------------------------------------------

    def insert_spans(self, data: pa.Table) -> int:
        """Normalize and insert raw span rows (schema :data:`rows.SPAN_SCHEMA`)."""
        if data.num_rows:
            self._insert_select(
                "spans",
                self._span_columns,
                self._span_select,
                data,
                rows.clickhouse_structure(rows.SPAN_COLUMNS),
            )
        return int(data.num_rows)

    def insert_events(self, data: pa.Table) -> int:
        """Normalize and insert raw log records (schema :data:`rows.EVENT_SCHEMA`)."""
        if data.num_rows:
            self._insert_select(
                "events",
                self._event_columns,
                self._event_select,
                data,
                rows.clickhouse_structure(rows.EVENT_COLUMNS),
            )
        return int(data.num_rows)

    # -- reads -------------------------------------------------------------------------------

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of a read-only query; used by the queries module and tests."""
        return self._rows(sql, params)

    def ping(self) -> bool:
        return bool(self._rows("SELECT 1 AS ok"))

    def list_spans(
        self, project_id: str, *, trace_id: str = "", session_id: str = "", limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Normalized spans of a project, one row per span however often it was exported."""
        return self._rows(
            queries.LIST_SPANS,
            {
                "project": project_id,
                "trace": trace_id,
                "session": session_id,
                "limit": limit,
            },
        )

    def list_events(
        self,
        project_id: str,
        *,
        session_id: str = "",
        trace_id: str = "",
        event_name: str = "",
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """Normalized log events of a project, deduplicated."""
        return self._rows(
            queries.LIST_EVENTS,
            {
                "project": project_id,
                "session": session_id,
                "trace": trace_id,
                "event": event_name,
                "limit": limit,
            },
        )

    def count_spans(self, project_id: str) -> dict[str, int]:
        """``{"rows": physical rows, "spans": distinct spans}`` of a project."""
        row = self._rows(queries.COUNT_SPANS, {"project": project_id})[0]
        return {"rows": int(row["rows"]), "spans": int(row["spans"])}

    def count_events(self, project_id: str) -> dict[str, int]:
        row = self._rows(queries.COUNT_EVENTS, {"project": project_id})[0]
        return {"rows": int(row["rows"]), "events": int(row["events"])}

    # -- the skill catalogue (migration 0003) --------------------------------------------------

    def insert_skills(
        self,
        project_id: str,
        manifests: Sequence[SkillManifest],
        *,
        scanned_at: datetime | None = None,
    ) -> int:
        """Record scanned skills in one insert; a re-scan of a version replaces its row."""
        if not manifests:
            return 0
        self._insert_select(
            "skills",
            SKILL_COLUMNS,
            SKILL_SELECT,
            skill_table(project_id, manifests, scanned_at),
            SKILL_STRUCTURE,
        )
        return len(manifests)

    def list_skills(
        self, project_id: str, name: str = "", *, limit: int = 10_000
    ) -> list[dict[str, Any]]:
        """Catalogue entries (every scanned version), by name, newest scan first."""
        rows = self._rows(
            queries.LIST_SKILLS, {"project": project_id, "name": name, "limit": limit}
        )
        return [catalogue_entry(row) for row in rows]

    def skill_contracts(self, project_id: str) -> dict[str, dict[str, Any]]:
        """Per skill name, its most recently scanned version with body and frontmatter."""
        rows = self._rows(queries.SKILL_CONTRACTS, {"project": project_id})
        return {str(row["name"]): catalogue_entry(row) for row in rows}

    def skill_versions(self, project_id: str) -> dict[str, list[dict[str, Any]]]:
        """Per skill name, every recorded version (no body), the latest first."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row in self._rows(queries.SKILL_VERSIONS, {"project": project_id}):
            out.setdefault(str(row["name"]), []).append(catalogue_entry(row))
        return out

    # -- rebuilt activations and trajectories (see migration 0004) ---------------------------

    def write_rebuild(
        self, project_id: str, rebuilt: _rebuilds.RebuildResult, *, ingested_through_us: int = 0
    ) -> int:
        """Store one session's rebuild; return its stamp (µs). Hides what it supersedes."""
        return self.write_rebuilds(
            [_rebuilds.SessionRebuild(project_id, rebuilt, ingested_through_us)]
        )[0]

    def write_rebuilds(self, items: Sequence[_rebuilds.SessionRebuild]) -> list[int]:
        """Store several sessions' rebuilds in one insert per table; return their stamps.

        Activation rows go first and the trajectory rows (each session's commit marker) last,
        so readers see either the previous rebuild of a session or this one, never a mix.
        """
        stamped = [(item, _rebuilds.STAMPS.next()) for item in items]
        if not stamped:
            return []
        activations = _rebuilds.activation_table(stamped)
        if activations.num_rows:
            self._insert_select(
                "activations",
                _rebuilds.columns(_rebuilds.ACTIVATION_ROW),
                _rebuilds.select(_rebuilds.ACTIVATION_ROW),
                activations,
                _rebuilds.structure(_rebuilds.ACTIVATION_ROW),
            )
        self._insert_select(
            "trajectories",
            _rebuilds.columns(_rebuilds.TRAJECTORY_ROW),
            _rebuilds.select(_rebuilds.TRAJECTORY_ROW),
            _rebuilds.trajectory_table(stamped),
            _rebuilds.structure(_rebuilds.TRAJECTORY_ROW),
        )
        return [stamp for _, stamp in stamped]

    def list_activations(
        self,
        project_id: str,
        *,
        skill: str = "",
        session_id: str = "",
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[Activation]:
        """Current activations of a project, newest first; ``since`` bounds their start."""
        rows = self._rows(
            queries.LIST_ACTIVATIONS,
            {
                "project": project_id,
                "skill": skill,
                "session": session_id,
                "since": _micros(since),
                "limit": limit,
            },
        )
        return [Activation.model_validate_json(row["record"]) for row in rows]

    def get_activation(self, project_id: str, activation_id: str) -> Activation | None:
        rows = self._rows(queries.GET_ACTIVATION, {"project": project_id, "id": activation_id})
        return Activation.model_validate_json(rows[0]["record"]) if rows else None

    def get_trajectory(self, project_id: str, session_id: str) -> str | None:
        """The session's current ATIF document, as JSON text (None when never rebuilt)."""
        rows = self._rows(queries.GET_TRAJECTORY, {"project": project_id, "session": session_id})
        return str(rows[0]["atif"]) if rows else None

    def session_rows(
        self, project_id: str, session_key: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Spans and events of a session (a session id, or the trace id of a sessionless
        trace), every trace that touches it included, in the shape ``list_spans`` returns."""
        return self.sessions_rows(project_id, [session_key])[session_key]

    def sessions_rows(
        self, project_id: str, session_keys: Sequence[str], *, limit: int = 10_000_000
    ) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """:meth:`session_rows` of several sessions in three queries."""
        keys = list(dict.fromkeys(session_keys))
        out: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
            key: ([], []) for key in keys
        }
        if not keys:
            return out
        owner: dict[str, str] = {}  # trace id -> the session key it belongs to
        for row in self._rows(queries.SESSION_TRACES, {"project": project_id, "sessions": keys}):
            owner.setdefault(str(row["trace_id"]), str(row["session_id"]))
        params = {"project": project_id, "sessions": keys, "traces": list(owner), "limit": limit}
        for index, query in enumerate((queries.SESSION_SPANS, queries.SESSION_EVENTS)):
            for row in self._rows(query, params):
                key = row["session_id"] if row["session_id"] in out else ""
                key = key or owner.get(row["trace_id"], "")
                key = key or (row["trace_id"] if row["trace_id"] in out else "")
                if key:
                    out[key][index].append(row)
        return out

    def touched_sessions(self, since_us: int) -> list[tuple[str, str, int]]:
        """``(project_id, session_key, last_ingested_us)`` of every session with rows ingested
        after ``since_us`` (store clock). The trace finalizer's discovery query, the one read
        that spans projects: it finds work, it serves no caller."""
        rows = self._rows(queries.TOUCHED_SESSIONS, {"since": int(since_us)})
        return [
            (str(r["project"]), str(r["session_key"]), int(r["last_ingested_us"])) for r in rows
        ]

    def rebuilt_through(self, project_id: str, session_keys: Sequence[str]) -> dict[str, int]:
        """Per session, the newest ``ingested_at`` (µs) its latest rebuild had read."""
        if not session_keys:
            return {}
        rows = self._rows(
            queries.REBUILT_THROUGH, {"project": project_id, "sessions": list(session_keys)}
        )
        return {str(r["session_id"]): int(r["through_us"]) for r in rows}

    def list_session_keys(self, project_id: str, *, limit: int = 1_000_000) -> list[str]:
        """Every session key (session id, else trace id) of a project."""
        rows = self._rows(queries.LIST_SESSION_KEYS, {"project": project_id, "limit": limit})
        return [str(r["session_key"]) for r in rows]

    # -- evaluations (migration 0005) --------------------------------------------------------

    def write_evaluations(self, project_id: str, evaluations: Sequence[Mapping[str, Any]]) -> int:
        """Insert evaluation rows (``Evaluation.to_row`` dicts) in one batch; a row with the key
        of an earlier one (activation, evaluator, version) replaces it."""
        if not evaluations:
            return 0
        table = _evaluation_rows.evaluation_table(project_id, evaluations)
        self._insert_select(
            "evaluations",
            _evaluation_rows.COLUMNS,
            _evaluation_rows.SELECT,
            table,
            _evaluation_rows.STRUCTURE,
        )
        return int(table.num_rows)

    def list_evaluations(self, project_id: str, activation_id: str) -> list[dict[str, Any]]:
        """The latest row of each (evaluator, version) of one activation, by evaluator."""
        return self._rows(
            queries.LIST_EVALUATIONS, {"project": project_id, "activation": activation_id}
        )

    def evaluations_of(
        self, project_id: str, activation_ids: Sequence[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """:meth:`list_evaluations` of several activations in one query, by activation id."""
        out: dict[str, list[dict[str, Any]]] = {a: [] for a in activation_ids}
        if out:
            params = {"project": project_id, "activations": list(out)}
            for row in self._rows(queries.LIST_EVALUATIONS_OF, params):
                out[str(row["activation_id"])].append(row)
        return out

    def judge_spend_since(self, since: datetime) -> float:
        """Dollars LLM judges spent since ``since`` (their evaluation rows, every project)."""
        rows = self._rows(queries.JUDGE_SPEND_SINCE, {"since": _micros(since)})
        return float(rows[0]["spent"] or 0.0) if rows else 0.0

    def rebuilt_sessions(self, since_us: int) -> list[tuple[str, str, int]]:
        """``(project_id, session_id, rebuilt_us)`` of every session whose latest rebuild was
        stored after ``since_us`` (the rebuild stamps' clock); for evaluation workers."""
        rows = self._rows(queries.REBUILT_SESSIONS, {"since": int(since_us)})
        return [(str(r["project"]), str(r["session_id"]), int(r["rebuilt_us"])) for r in rows]

    def scorecard_rows(
        self, project_id: str, skill: str, *, version: str = "", since: datetime | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """A skill's scores aggregated in ClickHouse: ``versions`` (activations per skill
        version), ``by_version`` (per version and evaluator) and ``trend`` (per UTC day and
        evaluator), over activations started since ``since``; each count/pass/mean/min."""
        params = {
            "project": project_id,
            "skill": skill,
            "version": version,
            "since": _micros(since),
        }
        out: dict[str, list[dict[str, Any]]] = {"versions": [], "by_version": [], "trend": []}
        for row in self._rows(queries.SCORECARD, params):
            kind = _SCORECARD_SETS[int(row["grouping_set"])]
            out[kind].append({column: row[column] for column in _SCORECARD_COLUMNS[kind]})
        return out

    def evaluations_below(
        self,
        project_id: str,
        skill: str,
        below: float,
        *,
        evaluator: str = "",
        version: str = "",
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """A skill's current evaluations scoring under ``below``, newest activation first."""
        rows = self._rows(
            queries.SKILL_EVALUATIONS_BELOW,
            {
                "project": project_id,
                "skill": skill,
                "version": version,
                "since": _micros(since),
                "evaluator": evaluator,
                "below": float(below),
                "limit": limit,
            },
        )
        if not rows:
            return []
        texts = {
            _evaluation_key(t): t
            for t in self._rows(
                queries.EVALUATION_TEXTS,
                {
                    "project": project_id,
                    "skill": skill,
                    "activations": sorted({str(r["activation_id"]) for r in rows}),
                },
            )
        }
        out = []
        for row in rows:
            text = texts[_evaluation_key(row)]
            out.append(
                {
                    **{k: row[k] for k in _BELOW_HEAD},
                    **{k: text[k] for k in _BELOW_TEXTS},
                    "started_at_us": row["started_at_us"],
                    "evaluated_at_us": row["evaluated_at_us"],
                }
            )
        return out


# Which part of a scorecard each grouping set of queries.SCORECARD is, and its columns.
_SCORECARD_SETS = {
    queries.SCORECARD_VERSIONS: "versions",
    queries.SCORECARD_BY_VERSION: "by_version",
    queries.SCORECARD_TREND: "trend",
}
_AGGREGATES = ("evaluations", "scored", "not_evaluated", "passed", "mean_score", "min_score")
_SCORECARD_COLUMNS: dict[str, tuple[str, ...]] = {
    "versions": ("skill_version", "activations", "first_started_us", "last_started_us"),
    "by_version": (
        "skill_version",
        "evaluator",
        "activations",
        "first_started_us",
        "last_started_us",
        *_AGGREGATES,
    ),
    "trend": ("day", "evaluator", "activations", *_AGGREGATES),
}
# Columns of an evaluations_below row, before and after its texts.
_BELOW_HEAD: tuple[str, ...] = (
    *("activation_id", "session_id", "evaluator", "evaluator_version", "skill_version"),
    *("score", "passed", "label"),
)
_BELOW_TEXTS = ("reason", "evidence_step_ids", "evidence_tool_call_ids", "findings")


def _evaluation_key(row: Mapping[str, Any]) -> tuple[str, str, str, int]:
    return (
        str(row["activation_id"]),
        str(row["evaluator"]),
        str(row["evaluator_version"]),
        int(row["evaluated_at_us"]),
    )


def _micros(moment: datetime | None) -> int:
    """A moment as µs since the epoch; naive datetimes are UTC; None is the epoch."""
    if moment is None:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000)


def _migrations() -> list[tuple[int, str, str]]:
    found = []
    folder = resources.files("skillsight.store") / "migrations"
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a number: {sorted(versions)}")
    return sorted(found)


def _statements(sql: str) -> list[str]:
    """Split a migration file on ';' at line ends, dropping comment-only pieces."""
    pieces = re.split(r";\s*$", sql, flags=re.MULTILINE)
    out = []
    for piece in pieces:
        body = "\n".join(
            line for line in piece.splitlines() if not line.strip().startswith("--")
        ).strip()
        if body:
            out.append(body)
    return out


class LockedStore(Store, ABC):
    """A store whose connection serves one statement at a time (chdb)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
