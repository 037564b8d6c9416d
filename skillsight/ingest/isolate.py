"""Writing a batch no row of which can stop the others: bisect a refused INSERT, dead-letter
only the rows that fail on their own.

When ClickHouse refuses a batch because of what it holds (:func:`store_condition` is False),
the batch is cut in halves and each half inserted; a half that fails is cut again, until the
failing rows are single rows — those go to the ``ingest_dead_letters`` table with ClickHouse's
reason, everything else is written. Finding k bad rows among n costs about 2·k·log2(n)
statements; past ``budget`` failing statements the chunks still failing are dead-lettered whole,
so a batch of many bad rows cannot occupy the writer for long.

A failure that is the store's condition is raised to the writer, which keeps the batch and
retries it; so is a failure to write the dead letters themselves (then the store cannot take
those either). Should the store refuse the dead letters for what they hold, they are written to
a JSON-lines file in ``fallback_dir`` instead: a row is never dropped.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from skillsight.errors import StoreError
from skillsight.store import Store, store_condition

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    written: int = 0
    dead: int = 0
    statements: int = 0


class Isolator:
    """Inserts raw span or event tables into ``store``, isolating rows it refuses."""

    def __init__(self, store: Store, *, budget: int = 64, fallback_dir: Path | None = None) -> None:
        self.store = store
        self.budget = budget
        self.fallback_dir = fallback_dir

    def _inserter(self, signal: str) -> Callable[[pa.Table], int]:
        return self.store.spans.insert if signal == "traces" else self.store.events.insert

    def insert(self, signal: str, table: pa.Table) -> Outcome:
        """Write ``table``; rows the store refuses are dead-lettered. Raises StoreError only for
        the store's condition (nothing more can be written now; retry the whole table)."""
        insert = self._inserter(signal)
        outcome = Outcome(statements=1)
        try:
            insert(table)
        except StoreError as exc:
            if store_condition(str(exc)):
                raise
            log.warning(
                "the store refused a batch of %d %s rows; isolating the rows it refuses: %s",
                table.num_rows,
                signal,
                str(exc)[:300],
            )
            self._bisect(signal, table, str(exc), insert, outcome)
        else:
            outcome.written = table.num_rows
        return outcome

    def _bisect(
        self,
        signal: str,
        table: pa.Table,
        reason: str,
        insert: Callable[[pa.Table], int],
        outcome: Outcome,
    ) -> None:
        failing = [(table, reason)]
        failures = 1
        while failing:
            chunk, why = failing.pop()
            if chunk.num_rows == 1 or failures >= self.budget:
                if chunk.num_rows > 1:
                    why += f" (not isolated further: over {self.budget} failing statements)"
                self._dead_letter(signal, chunk, why)
                outcome.dead += chunk.num_rows
                continue
            half = chunk.num_rows // 2
            for part in (chunk.slice(0, half), chunk.slice(half)):
                outcome.statements += 1
                try:
                    insert(part)
                except StoreError as exc:
                    if store_condition(str(exc)):
                        raise
                    failures += 1
                    failing.append((part, str(exc)))
                else:
                    outcome.written += part.num_rows

    def _dead_letter(self, signal: str, rows: pa.Table, reason: str) -> None:
        try:
            self.store.dead_letters.insert(signal, rows, reason)
            log.error("dead-lettered %d %s rows: %s", rows.num_rows, signal, reason[:300])
            return
        except StoreError as exc:
            if store_condition(str(exc)) or self.fallback_dir is None:
                raise
            failure = str(exc)
        self.fallback_dir.mkdir(parents=True, exist_ok=True)
        path = self.fallback_dir / f"dead-letters-{time.strftime('%Y%m%d')}.jsonl"
        with path.open("a", encoding="utf-8") as out:
            for row in rows.to_pylist():
                out.write(
                    json.dumps({"signal": signal, "reason": reason, "row": row}, default=str) + "\n"
                )
        log.error(
            "dead-lettered %d %s rows to %s (the dead-letter table refused them: %s)",
            rows.num_rows,
            signal,
            path,
            failure[:300],
        )
