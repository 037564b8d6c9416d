"""ClickHouse storage behind one interface: embedded (chdb) or served (clickhouse-connect)."""

from __future__ import annotations

from skillsight.config import Settings
from skillsight.store._base import Store
from skillsight.store._embedded import EmbeddedStore
from skillsight.store._rebuilds import RebuildResult, SessionRebuild, stamp_iso


def open_store(settings: Settings, *, migrate: bool = True) -> Store:
    """Open the store the settings name and bring its schema up to date."""
    store: Store
    if settings.clickhouse_url:
        from skillsight.store._server import ServerStore

        store = ServerStore(settings.clickhouse_url)
    else:
        store = EmbeddedStore(settings.data_dir)
    if migrate:
        store.migrate()
        store.set_retention(settings.retention_days)
    return store


__all__ = [
    "EmbeddedStore",
    "RebuildResult",
    "SessionRebuild",
    "Store",
    "open_store",
    "stamp_iso",
]
