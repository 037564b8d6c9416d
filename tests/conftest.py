"""Shared fixtures. Each block is owned by the work that added it; keep blocks self-contained."""

from __future__ import annotations

# ---- store fixtures: embedded (chdb in this process) and server (HTTP to chdb in a child) ------
#
# chdb holds one data folder per process at a time: the embedded store here opens a fresh
# folder per test and closes it after, and the server transport talks to a ClickHouse HTTP
# endpoint that runs chdb in a child process (tests/support/chdb_http.py), started once per
# session. Each server_store gets its own database, so tests sharing the endpoint never meet.
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillsight.store import EmbeddedStore, ServerStore, Store
from tests.support.chdb_http import ChdbHttpServer

# Users the endpoint accepts; the second has a password that needs URL-encoding.
CHDB_HTTP_USERS = {"default": "", "skill sight": "p@ss:w/rd%?#"}


@pytest.fixture(scope="session")
def chdb_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChdbHttpServer]:
    """A ClickHouse HTTP endpoint backed by chdb, for the whole session."""
    with ChdbHttpServer(tmp_path_factory.mktemp("chdb-http"), users=CHDB_HTTP_USERS) as server:
        yield server


@pytest.fixture
def embedded_store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    """A migrated embedded store in a fresh folder."""
    store = EmbeddedStore(tmp_path / "store")
    store.migrate()
    yield store
    store.close()


@pytest.fixture
def server_store(chdb_http: ChdbHttpServer) -> Iterator[ServerStore]:
    """A migrated server store in a database of its own on the chdb endpoint."""
    store = ServerStore(chdb_http.url(f"test_{uuid.uuid4().hex[:12]}"))
    store.migrate()
    yield store
    database = store.address.database
    store.execute(f"DROP DATABASE IF EXISTS `{database}`")
    store.close()


@pytest.fixture(params=["embedded", "server"])
def store(request: pytest.FixtureRequest) -> Store:
    """Each test that takes ``store`` runs on both transports."""
    value: Store = request.getfixturevalue(f"{request.param}_store")
    return value


# ---- end of store fixtures ----------------------------------------------------------------------


# ---- instrumentation: bugs in hooks and wrappers fail tests instead of being logged ------------
import os  # noqa: E402

os.environ.setdefault("SKILLSIGHT_INSTRUMENTATION_STRICT", "1")
# ---- end of instrumentation ----------------------------------------------------------------
