"""The state of each (project, skill, start day) of the scorecard read models: its newest marks
(per hour, and naming the whole day) and its newest refresh, which say where a reader takes the
day from (``_window_plan``) and which days the refresher recomputes (``_rollups``)."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, NamedTuple

from skillsight.store._day_aggregates import CLEAN_FORMAT, HOURLY_FORMAT

if TYPE_CHECKING:
    from skillsight.store._store import Store

_EPOCH = date(1970, 1, 1).toordinal()

# Per (project, skill, day): the newest mark, the newest mark naming the whole day (hour 24:
# scorecard_marks'), the newest mark of each hour, the newest refresh and its format. __CELLS__
# narrows each table to some (project, skill, day) cells (``_MARKED_SINCE``) or to none.
_STATES = """
SELECT project_id, skill_name, toString(day) AS day,
       toUnixTimestamp64Micro(max(marked_at)) AS marked_us,
       toUnixTimestamp64Micro(maxIf(marked_at, hour = 24)) AS day_marked_us,
       groupArrayIf((hour, toUnixTimestamp64Micro(marked_at)), hour < 24) AS hour_marks,
       toUnixTimestamp64Micro(max(refreshed_at)) AS refreshed_us,
       argMax(format, refreshed_at) AS format
FROM (
    SELECT project_id, skill_name, day, toUInt8(24) AS hour, marked_at,
           toDateTime64(0, 6, 'UTC') AS refreshed_at, toUInt64(0) AS format
    FROM scorecard_marks
    WHERE ({project:String} = '' OR project_id = {project:String})
      AND ({skill:String} = '' OR skill_name = {skill:String}) AND day >= {from:Date} __CELLS__
    UNION ALL
    SELECT project_id, skill_name, day, hour, max(marked_at), toDateTime64(0, 6, 'UTC'),
           toUInt64(0)
    FROM scorecard_hour_marks
    WHERE ({project:String} = '' OR project_id = {project:String})
      AND ({skill:String} = '' OR skill_name = {skill:String}) AND day >= {from:Date} __CELLS__
    GROUP BY project_id, skill_name, day, hour
    UNION ALL
    SELECT project_id, skill_name, day, toUInt8(24), toDateTime64(0, 6, 'UTC'), refreshed_at,
           activations
    FROM scorecard_days
    WHERE kind = 0
      AND ({project:String} = '' OR project_id = {project:String})
      AND ({skill:String} = '' OR skill_name = {skill:String}) AND day >= {from:Date} __CELLS__
)
GROUP BY project_id, skill_name, day
ORDER BY project_id, skill_name, day"""

# The cells marked at or after a moment (µs on the store's clock), in either marks table.
_MARKED_SINCE = """AND (project_id, skill_name, day) IN (
        SELECT project_id, skill_name, day FROM scorecard_hour_marks
        WHERE marked_at >= fromUnixTimestamp64Micro({marked_since:Int64}, 'UTC')
        UNION ALL
        SELECT project_id, skill_name, day FROM scorecard_marks
        WHERE marked_at >= fromUnixTimestamp64Micro({marked_since:Int64}, 'UTC'))"""
_DAY_STATES = _STATES.replace("__CELLS__", "")
_MARKED_DAY_STATES = _STATES.replace("__CELLS__", _MARKED_SINCE)
# The same, but a day on which every skill's state is clean (read_day_states' test, inside
# ClickHouse) is given by one of its states, unless it is {first} (a window's partial first
# day, read by the hour): what a reader of every skill at once needs (``window_plan`` reads
# such a day whole from the day rollups for all of them). A year of 200 skills is ~400 rows
# instead of 73,000, which cost Python more than ClickHouse.
_CLEAN_DAYS_ONCE = f"""
SELECT * EXCEPT (clean, whole, keep)
FROM (
    SELECT *,
           refreshed_us > 0 AND refreshed_us >= marked_us + {{margin:Int64}}
               AND format >= {CLEAN_FORMAT} AS clean,
           min(clean) OVER (PARTITION BY project_id, day) AS whole,
           NOT whole OR day = {{first:String}} AS keep
    FROM ({_DAY_STATES})
)
ORDER BY project_id, day, skill_name
LIMIT 1 BY project_id, day, if(keep, skill_name, '')"""


class DayState(NamedTuple):
    """The newest mark and refresh of a (project, skill, start day) (µs; 0 = none), whether it
    is clean (its newest refresh began after its newest mark and wrote at least
    :data:`CLEAN_FORMAT`, so ``scorecard_days`` holds it), and whether its hours are readable
    from ``scorecard_hours`` under that refresh's stamp (``hourly``: the refresh wrote
    :data:`HOURLY_FORMAT`, and every mark since names its hour) but for ``dirty_hours``, the
    hours marked since (none when clean)."""

    project_id: str
    skill_name: str
    day: str
    marked_us: int
    refreshed_us: int
    clean: bool
    hourly: bool = False
    dirty_hours: frozenset[int] = frozenset()


def read_day_states(
    store: Store,
    project_id: str = "",
    skill: str = "",
    *,
    since_us: int = 0,
    margin_us: int,
    marked_since_us: int | None = None,
    clean_days_once: bool = False,
) -> list[DayState]:
    """Every marked or refreshed (project, skill, day) ('' = every project, skill), from the
    day of ``since_us`` on; a mark up to ``margin_us`` before a refresh's stamp counts as after
    it (clocks of cluster nodes). With ``marked_since_us``, only the days with a mark at or
    after that moment (store clock, µs); with ``clean_days_once``, one state for each day on
    which all are clean, but the day of ``since_us``."""
    states = []
    params: dict[str, object] = {
        "project": project_id,
        "skill": skill,
        "from": day_of(max(since_us, 0)),
    }
    sql = _DAY_STATES
    if marked_since_us is not None:
        sql, params["marked_since"] = _MARKED_DAY_STATES, max(marked_since_us, 0)
    elif clean_days_once:
        sql = _CLEAN_DAYS_ONCE
        params["margin"] = margin_us
        params["first"] = day_of(since_us) if since_us > 0 else ""
    for r in store.query(sql, params):
        marked, refreshed = int(r["marked_us"]), int(r["refreshed_us"])
        written = int(r["format"])
        clean = refreshed > 0 and refreshed >= marked + margin_us and written >= CLEAN_FORMAT
        hourly = (
            refreshed > 0
            and written >= HOURLY_FORMAT
            and refreshed >= int(r["day_marked_us"]) + margin_us
        )
        dirty = (
            frozenset(int(h) for h, us in r["hour_marks"] if int(us) + margin_us > refreshed)
            if hourly
            else frozenset()
        )
        states.append(
            DayState(
                str(r["project_id"]),
                str(r["skill_name"]),
                str(r["day"]),
                marked,
                refreshed,
                clean,
                hourly,
                dirty,
            )
        )
    return states


def day_of(micros: int) -> str:
    """The UTC day of a moment in µs since the epoch, as ISO 8601."""
    return date.fromordinal(date(1970, 1, 1).toordinal() + micros // 86_400_000_000).isoformat()


def epoch_hour(day: str, hour: int) -> int:
    """An hour of a UTC day (ISO 8601) counted from the epoch, as ClickHouse's
    ``intDiv(toUnixTimestamp64Micro(t), 3600000000)`` counts the hour of ``t``."""
    return (date.fromisoformat(day).toordinal() - _EPOCH) * 24 + hour
