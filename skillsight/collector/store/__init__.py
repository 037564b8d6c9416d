"""ClickHouse storage behind one interface: embedded (chdb) or served (clickhouse-connect)."""

from __future__ import annotations

from skillsight.collector.store._base import Store
from skillsight.collector.store._embedded import EmbeddedStore
from skillsight.config import Settings


def open_store(settings: Settings, *, migrate: bool = True) -> Store:
    """Open the store the settings name and bring its schema up to date."""
    store: Store
    if settings.clickhouse_url:
        from skillsight.collector.store._server import ServerStore

        store = ServerStore(settings.clickhouse_url)
    else:
        store = EmbeddedStore(settings.data_dir)
    if migrate:
        store.migrate()
        store.set_retention(settings.retention_days)
    return store


__all__ = ["EmbeddedStore", "Store", "open_store"]
