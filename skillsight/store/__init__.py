"""ClickHouse storage: one interface over two transports (embedded chdb, or a server), with a
repository per table returning typed records. Every SQL statement of the service lives here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsight._faces import lazy_face

if TYPE_CHECKING:
    from skillsight.config import Settings
    from skillsight.store._clusters import (
        AdviceRow,
        ClusterRow,
        MemberRow,
        OnlineCounts,
        RunRow,
        StatusRow,
    )
    from skillsight.store._dead_letters import DeadLetter
    from skillsight.store._embedded import EmbeddedStore
    from skillsight.store._evaluations import EvaluationRow, ScoredBefore
    from skillsight.store._failures import FailedSince, FailingEvaluation, StoredFailure
    from skillsight.store._goldens import GoldenCaseRow, GoldenSetRow
    from skillsight.store._partitions import MAX_PARTITIONS_PER_INSERT, month_of
    from skillsight.store._rebuild_rows import RebuildResult, SessionRebuild, stamp_iso
    from skillsight.store._rebuilds import RebuiltSession
    from skillsight.store._refresher import ReadModelRefresher
    from skillsight.store._runs import METRIC_COLUMNS, RerunRow, RunResultRow, TaggedSession
    from skillsight.store._server import ServerAddress, ServerStore
    from skillsight.store._sessions import (
        Arrival,
        SessionRows,
        SessionsSince,
        SpanParents,
        TouchedSession,
    )
    from skillsight.store._skills import SkillEntry
    from skillsight.store._store import Store
    from skillsight.store._telemetry import EventRow, SessionEventRow, SessionSpanRow, SpanRow
    from skillsight.store._write_failures import store_condition


def schema_sql(cluster: str = "", database: str = "default") -> list[tuple[str, str]]:
    """``(migration file, statement)`` of the whole schema as a fresh store gets it: for one
    server, or, given ``cluster``, its cluster form (Replicated + Distributed, ON CLUSTER)."""
    from skillsight.store._cluster_ddl import ClusterSchema
    from skillsight.store._migrations import planned

    return planned(ClusterSchema(cluster, database) if cluster else None)


def open_store(settings: Settings, *, migrate: bool = True) -> Store:
    """Open the store the settings name and bring its schema up to date."""
    from skillsight.store._embedded import EmbeddedStore
    from skillsight.store._server import ServerStore

    store: Store
    if settings.clickhouse_url:
        store = ServerStore(settings.clickhouse_url, cluster=settings.clickhouse_cluster)
    else:
        store = EmbeddedStore(settings.data_dir)
    if migrate:
        store.migrate()
        store.set_retention(settings.retention_days)
    return store


__all__ = [
    "MAX_PARTITIONS_PER_INSERT",
    "METRIC_COLUMNS",
    "AdviceRow",
    "Arrival",
    "ClusterRow",
    "DeadLetter",
    "EmbeddedStore",
    "EvaluationRow",
    "EventRow",
    "FailedSince",
    "FailingEvaluation",
    "GoldenCaseRow",
    "GoldenSetRow",
    "MemberRow",
    "OnlineCounts",
    "ReadModelRefresher",
    "RebuildResult",
    "RebuiltSession",
    "RerunRow",
    "RunResultRow",
    "RunRow",
    "ScoredBefore",
    "ServerAddress",
    "ServerStore",
    "SessionEventRow",
    "SessionRebuild",
    "SessionRows",
    "SessionSpanRow",
    "SessionsSince",
    "SkillEntry",
    "SpanParents",
    "SpanRow",
    "StatusRow",
    "Store",
    "StoredFailure",
    "TaggedSession",
    "TouchedSession",
    "month_of",
    "open_store",
    "schema_sql",
    "stamp_iso",
    "store_condition",
]

__getattr__, __dir__ = lazy_face(globals())
