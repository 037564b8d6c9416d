"""The ``read_models`` registry (migration 0012): which read models hold every row of their
source, so that readers may use them. A read model is ready from the start in a store whose
source had no row when first asked (its writers write both from then on), and otherwise once
the rows written before it existed have been copied (the read model refresher's first pass)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from skillsight.errors import StoreError

if TYPE_CHECKING:
    from skillsight.store._store import Store

log = logging.getLogger(__name__)

_READY = "SELECT count() AS n FROM read_models WHERE project_id = '' AND name = {name:String}"
_SET_READY = (
    "INSERT INTO read_models (project_id, name, ready_at) SELECT '', {name:String}, now64(6)"
)
ANY_EVALUATION = "SELECT count() AS n FROM (SELECT 1 FROM evaluations LIMIT 1)"
EVALUATED_SKILLS = """
SELECT DISTINCT project_id, skill_name FROM evaluations
WHERE ({project:String} = '' OR project_id = {project:String})
ORDER BY project_id, skill_name"""
"""The (project, skill) pairs with evaluations (of one project, or of all with ''): what a copy
of the rows written before a read model existed goes through, a skill at a time."""


def read_model_ready(store: Store, name: str, any_source_row: str) -> bool:
    """Whether the read model ``name`` is recorded as holding every row of its source; recorded
    now, when the source has no row (``any_source_row`` counts 0 or 1). False for a read-only
    user of an empty store, whose readers then read the source."""
    if int(store.query(_READY, {"name": name})[0]["n"]):
        return True
    if int(store.query(any_source_row)[0]["n"]):
        return False
    try:
        store.execute(_SET_READY, {"name": name})
    except StoreError as exc:
        log.debug("cannot record the read model %s as ready: %s", name, exc)
        return False
    return True


def set_read_model_ready(store: Store, name: str) -> None:
    """Record that the read model ``name`` holds every row of its source."""
    store.execute(_SET_READY, {"name": name})
