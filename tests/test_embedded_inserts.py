"""The embedded store's inserts: batches spooled to a scratch file that ClickHouse reads.

Every repository writes through ``EmbeddedStore.insert_select``. It hands ClickHouse the batch
as an Arrow stream in a scratch file (``file()`` with the batch's structure), and goes through
chdb's ``Python()`` table function only when no file can be written. Both ways must store the
same rows in every table, a failing insert must leave no file behind, and closing the store
removes its scratch folder.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from skillsight.errors import StoreError
from skillsight.evaluators.scheduler import EvaluationScheduler, score_activations
from skillsight.rebuild.finalizer import rebuild_sessions
from skillsight.store import EmbeddedStore
from tests.support.captures import SCENARIOS, store_capture

# Columns a write stamps with the time of the write (or the time it took), different in any
# two runs; an activation's record carries its rebuild's stamp too.
_STAMPS = {
    "ingested_at",
    "rebuilt_at",
    "marked_at",
    "activation_rebuilt_at",
    "applied_at",
    "ready_at",
    "latency_ms",
}
_EVALUATED_AT_US = 1_767_225_600_000_000  # 2026-01-01, the evaluations' stamp in both runs


def _workload(store: EmbeddedStore) -> None:
    """Captures through the OTLP decoder, their sessions rebuilt, scored and written."""
    for name in ("one_skill", "tool_error", "security", "subagent_skill"):
        store_capture(store, "p", SCENARIOS / name / "claude_code")
    keys = [(a.project_id, a.session_key, 0) for a in store.sessions.arrivals(0)]
    outcomes, _ = rebuild_sessions(store, keys)
    assert outcomes and all(o.rebuilt is not None and not o.error for o in outcomes)
    activations = store.activations.find("p", limit=1000)
    assert activations
    scheduler = EvaluationScheduler(store)
    scored = score_activations(
        activations, scheduler.assembler, registry=scheduler.registry, chosen=scheduler.policies
    )
    assert scored.evaluations
    store.evaluations.write_columns("p", scored.columns(_EVALUATED_AT_US))


def _tables(store: EmbeddedStore) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows, less the write stamps, in one order."""
    found: dict[str, list[dict[str, Any]]] = {}
    tables = store.query(
        "SELECT name FROM system.tables WHERE database = currentDatabase() "
        "AND engine NOT LIKE '%View' ORDER BY name"
    )
    for table in (str(t["name"]) for t in tables):
        columns = store.query(
            "SELECT name FROM system.columns WHERE database = currentDatabase() "
            "AND table = {t:String} ORDER BY position",
            {"t": table},
        )
        kept = [str(c["name"]) for c in columns if c["name"] not in _STAMPS]
        listed = ", ".join(f"`{c}`" for c in kept)
        rows = store.query(f"SELECT {listed} FROM `{table}` ORDER BY {listed}")
        for row in rows:
            if table == "activations":
                record = json.loads(row["record"])
                assert record.pop("rebuilt_at")
                row["record"] = record
        found[table] = rows
    return found


def _stored(
    folder: Path, scratch: Path | None
) -> tuple[dict[str, list[dict[str, Any]]], tuple[int, int]]:
    """The tables after the workload on a store in ``folder`` (chdb opens one folder per
    process at a time), and how many of its inserts spooled to files and how many did not."""
    store = EmbeddedStore(folder, scratch=scratch)
    try:
        store.migrate()
        _workload(store)
        return _tables(store), (store.inserts_spooled, store.inserts_unspooled)
    finally:
        store.close()


def test_every_table_holds_the_same_rows_through_a_file_as_through_python(
    tmp_path: Path,
) -> None:
    through_files, spooled = _stored(tmp_path / "spooled", None)
    # a scratch parent that cannot hold a folder (a file): every insert goes through Python()
    (tmp_path / "a-file").write_text("")
    through_python, unspooled = _stored(tmp_path / "unspooled", tmp_path / "a-file")
    # every insert of the workload went the one way or the other
    assert spooled[0] >= 10 and spooled[1] == 0
    assert unspooled == (0, spooled[0])
    written = {t for t, rows in through_files.items() if rows}
    # the workload reaches the tables of ingest, rebuilds, evaluations and read models
    assert {
        "spans",
        "events",
        "activations",
        "trajectories",
        "evaluations",
        "evaluation_digests",
        "scorecard_rows",
        "scorecard_hour_marks",
    } <= written
    assert sorted(through_files) == sorted(through_python)
    for table in sorted(through_files):
        assert through_files[table] == through_python[table], table


def test_inserts_leave_no_file_and_closing_removes_the_scratch_folder(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store", scratch=tmp_path / "scratch")
    store.migrate()
    batch = pa.table({"id": ["a", "b"], "n": [1, 2]})
    layout = ("id", "n")
    store.execute("CREATE TABLE t (id String, n UInt8) ENGINE = MergeTree ORDER BY id")
    store.insert_select("t", layout, "id, toUInt8(n)", batch, "id String, n Int64")
    assert (store.inserts_spooled, store.inserts_unspooled) == (1, 0)
    folder = store.scratch_folder
    assert folder is not None and folder.parent == tmp_path / "scratch"
    assert folder.name.startswith(f"skillsight-insert-{os.getpid()}-")
    assert list(folder.iterdir()) == []
    # a batch ClickHouse refuses (300 does not fit the column) fails whole and leaves no file
    refused = pa.table({"id": ["c", "d"], "n": [3, 300]})
    with pytest.raises(StoreError, match="insert into t failed"):
        store.insert_select("t", layout, "id, toUInt8OrThrow(n)", refused, "id String, n Int64")
    assert list(folder.iterdir()) == []
    assert store.query("SELECT id, n FROM t ORDER BY id") == [
        {"id": "a", "n": 1},
        {"id": "b", "n": 2},
    ]
    store.close()
    assert not folder.exists()


def test_a_dead_process_scratch_folder_is_swept(tmp_path: Path) -> None:
    """A process killed mid-insert leaves its folder; the next store of the same kind there
    removes it, and leaves a live process's folder alone."""
    parent = tmp_path / "scratch"
    parent.mkdir()
    dead = parent / "skillsight-insert-999999999-abc"  # no process has this id
    dead.mkdir()
    (dead / "batch-0.arrows").write_bytes(b"half")
    alive = parent / f"skillsight-insert-{os.getppid()}-abc"
    alive.mkdir()
    store = EmbeddedStore(tmp_path / "store", scratch=parent)
    store.migrate()
    store.execute("CREATE TABLE t (id String) ENGINE = MergeTree ORDER BY id")
    store.insert_select("t", ("id",), "id", pa.table({"id": ["a"]}), "id String")
    assert not dead.exists()
    assert alive.exists()
    store.close()


def test_a_scratch_folder_removed_under_the_store_loses_no_insert(tmp_path: Path) -> None:
    """A temporary-files cleaner removing the folder: the insert goes through Python() and
    stores its rows; the folder is made anew when spooling is next tried."""
    store = EmbeddedStore(tmp_path / "store", scratch=tmp_path / "scratch")
    store.migrate()
    store.execute("CREATE TABLE t (id String) ENGINE = MergeTree ORDER BY id")
    folder = store.scratch_folder
    assert folder is not None
    shutil.rmtree(folder)
    store.insert_select("t", ("id",), "id", pa.table({"id": ["a", "b"]}), "id String")
    assert store.scratch_folder is None
    assert (store.inserts_spooled, store.inserts_unspooled) == (0, 1)
    store.insert_select("t", ("id",), "id", pa.table({"id": ["c"]}), "id String")
    assert store.query("SELECT id FROM t ORDER BY id") == [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    store.close()


def test_a_store_told_not_to_spool_makes_no_folder(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store", scratch=tmp_path / "scratch", spool=False)
    store.migrate()
    store.execute("CREATE TABLE t (id String) ENGINE = MergeTree ORDER BY id")
    store.insert_select("t", ("id",), "id", pa.table({"id": ["a"]}), "id String")
    assert store.scratch_folder is None and not (tmp_path / "scratch").exists()
    assert (store.inserts_spooled, store.inserts_unspooled) == (0, 1)
    assert store.query("SELECT id FROM t") == [{"id": "a"}]
    store.close()
