"""Why a write failed: the store's condition (wait and retry) or the rows themselves (isolate).

An INSERT fails for one of two kinds of reason. Either the store cannot write now — the server
is unreachable, the disk is full, merges are behind, a replica is read-only, a memory bound of
the whole server is hit — and every batch would fail alike, so the writer keeps its rows, says
503 to clients and retries. Or something in the batch is refused — a value that cannot be
converted, too many partitions in one block, a constraint, a row too large for the query's
memory — and the same rows fail again however long one waits: the writer then bisects the
batch and files only the failing rows as dead letters.

Anything not recognised as the store's condition is taken as the rows' fault: a batch that
fails deterministically must never stop ingest for everyone. A store that is really down is
still never mistaken for bad rows, because dead letters are written to the same store: when that
write fails too, the rows stay held and the writer waits like for any outage.
"""

from __future__ import annotations

import re

# ClickHouse error codes of conditions of the store (or of the statement, the same for every
# row), not of the rows inserted.
_STORE_CODES = frozenset(
    {
        16,  # NO_SUCH_COLUMN_IN_TABLE (schema behind the code)
        46,  # UNKNOWN_FUNCTION
        47,  # UNKNOWN_IDENTIFIER
        60,  # UNKNOWN_TABLE
        62,  # SYNTAX_ERROR
        74,  # CANNOT_READ_FROM_FILE_DESCRIPTOR
        75,  # CANNOT_WRITE_TO_FILE_DESCRIPTOR
        76,  # CANNOT_OPEN_FILE
        81,  # UNKNOWN_DATABASE
        159,  # TIMEOUT_EXCEEDED
        164,  # READONLY
        173,  # CANNOT_ALLOCATE_MEMORY
        192,  # UNKNOWN_USER
        194,  # REQUIRED_PASSWORD
        198,  # DNS_ERROR
        202,  # TOO_MANY_SIMULTANEOUS_QUERIES
        209,  # SOCKET_TIMEOUT
        210,  # NETWORK_ERROR
        218,  # TABLE_IS_DROPPED
        225,  # NO_ZOOKEEPER
        236,  # ABORTED
        242,  # TABLE_IS_READ_ONLY
        243,  # NOT_ENOUGH_SPACE
        252,  # TOO_MANY_PARTS (merges behind), unless it is partitions in one block
        279,  # ALL_CONNECTION_TRIES_FAILED
        319,  # UNKNOWN_STATUS_OF_INSERT
        394,  # QUERY_WAS_CANCELLED
        439,  # CANNOT_SCHEDULE_TASK
        497,  # ACCESS_DENIED
        516,  # AUTHENTICATION_FAILED
        999,  # KEEPER_EXCEPTION
    }
)
_CODE = re.compile(r"Code: (\d+)\.")
_STORE_TEXT = re.compile(
    r"connection refused|connection reset|broken pipe|timed out|max retries exceeded"
    r"|no space left on device|memory limit \(total\) exceeded|temporarily unavailable"
    r"|service unavailable|bad gateway|gateway timeout|cannot reach|is closed",
    re.IGNORECASE,
)
_ROWS_TEXT = re.compile(r"too many partitions for single insert block", re.IGNORECASE)


def store_condition(message: str) -> bool:
    """Whether a failed write's error text is the store's condition (retry later) rather than
    something about the rows written (isolate them)."""
    if _ROWS_TEXT.search(message):
        return False
    match = _CODE.search(message)
    if match and int(match.group(1)) in _STORE_CODES:
        return True
    return bool(_STORE_TEXT.search(message))
