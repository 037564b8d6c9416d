"""``skillsight bench scorecard``: skill scorecard and gate queries over millions of activations.

DESIGN.md's target: a skill's scorecard in under 200 ms over 10 million activations. The bench
writes a synthetic store on the embedded engine (generated inside ClickHouse, see
:mod:`benchmarks.synthetic_store`): activations spread over 50 skills with Zipf-like
shares (the most popular skill holds about a fifth of them), three versions per skill, 90 days of
starts, the seven deterministic evaluators' rows per activation, a few rescored. It then times
the scorecard of the popular skill and of a typical one (the median share) at three windows,
through :func:`skillsight.reports._scorecard.scorecard` (what the API route runs), the skill
page's usage charts (``Scorecards.usage``, from the day rollups, and from the activations as the
reference: not held to the target), and the gate's below-threshold read. Each query's first run
is reported apart (cold: marks and the page cache not yet warm for it); the median and p95 are
over the warm runs after it.

Generating 10 million activations takes minutes, so ``--keep`` keeps the store (and a manifest of
what it holds) and the next run with the same ``--activations`` reuses it.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.eval import _machine
from benchmarks.scorecard_live import sustain_live, time_live
from benchmarks.scorecard_verify import verify as verify_read_models
from benchmarks.synthetic_store import (
    SyntheticPlan,
    fill_synthetic_scorecards,
    synthetic_counts,
    synthetic_rows,
)
from skillsight.errors import SkillsightError
from skillsight.reports import scorecard, window_start
from skillsight.store import EmbeddedStore, Store

PROJECT = "bench"
TARGET_MS = 200.0
UI_TARGET_MS = 1000.0
WINDOWS = ("7d", "30d", "all")
MANIFEST = "scorecard-bench.json"
DEFAULT_KEPT = Path(tempfile.gettempdir()) / "skillsight-bench-scorecard"


def zipf_counts(activations: int, skills: int, exponent: float = 1.0) -> list[int]:
    """Activations per skill, rank k holding a share proportional to 1 / k**exponent; the
    rounding remainder goes to the most popular skill so the counts add up exactly."""
    if activations < skills or skills < 2:
        raise SkillsightError(
            f"need at least 2 skills and one activation per skill "
            f"({activations} activations over {skills} skills)"
        )
    weights = [1 / (rank**exponent) for rank in range(1, skills + 1)]
    total = sum(weights)
    counts = [max(1, int(activations * w / total)) for w in weights]
    counts[0] += activations - sum(counts)
    return counts


def skill_names(skills: int) -> tuple[str, ...]:
    return tuple(f"skill-{rank:02d}" for rank in range(skills))


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value at or above a share q of the runs."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _timed(run: Callable[[], Any], repeat: int) -> tuple[Any, dict[str, float]]:
    started = time.perf_counter()
    result = run()
    cold = time.perf_counter() - started
    warm = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        warm.append(time.perf_counter() - started)
    return result, {
        "cold_ms": round(cold * 1000, 1),
        "median_ms": round(statistics.median(warm) * 1000, 1),
        "p95_ms": round(_percentile(warm, 0.95) * 1000, 1),
    }


def _dataset(store: Store, folder: Path, plan: SyntheticPlan, console: Console) -> dict[str, Any]:
    """The store's dataset: reused when its manifest matches the plan, else generated now."""
    manifest = folder / MANIFEST
    if manifest.is_file():
        kept = json.loads(manifest.read_text(encoding="utf-8"))
        if kept["activations"] == plan.activations and kept["skills"] == len(plan.skills):
            console.print(
                f"reusing {plan.activations:,} activations generated {kept['generated_at']} "
                f"in {folder}"
            )
            return {**kept, "reused": True}
        raise SkillsightError(
            f"{folder} holds a scorecard dataset of {kept['activations']:,} activations over "
            f"{kept['skills']} skills, not {plan.activations:,} over {len(plan.skills)}: "
            "pass another --data folder or delete that one"
        )
    if synthetic_rows(store, plan.project_id):
        raise SkillsightError(
            f"{folder} already holds activations of project {plan.project_id!r} but no "
            f"{MANIFEST}: pass an empty --data folder"
        )
    console.print(
        f"generating {plan.activations:,} activations over {len(plan.skills)} skills in {folder} …"
    )
    started = time.perf_counter()
    fill_synthetic_scorecards(store, plan)
    generated_s = time.perf_counter() - started
    counts, per_skill = synthetic_counts(store, plan.project_id)
    description = {
        "activations": plan.activations,
        "skills": len(plan.skills),
        "end_us": plan.end_us,
        "days": plan.days,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "generated_s": round(generated_s, 1),
        **counts,
        "per_skill": per_skill,
    }
    manifest.write_text(json.dumps(description, indent=2), encoding="utf-8")
    console.print(
        f"generated in {generated_s:,.1f} s: {counts['activation_rows']:,} activation rows, "
        f"{counts['evaluation_rows']:,} evaluation rows "
        f"({counts['evaluation_keys']:,} (activation, evaluator) keys)"
    )
    return {**description, "reused": False}


def run_scorecard_bench(
    *,
    activations: int,
    skills: int = 50,
    data: Path | None = None,
    keep: bool = False,
    repeat: int = 7,
    verify: bool = False,
    sustain_s: float = 0.0,
    console: Console,
) -> dict[str, Any]:
    """Generate (or reuse) the dataset, bring its read models up to date, time the queries,
    (``verify``) compare the read models' answers with the raw rows', print the report and
    return it."""
    if repeat < 1:
        raise SkillsightError("--repeat must be at least 1")
    counts = zipf_counts(activations, skills)
    names = skill_names(skills)
    if keep:
        folder = data or DEFAULT_KEPT
    else:  # a folder of its own, removed afterwards, whatever else --data holds
        if data is not None:
            data.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="scorecard-bench-", dir=data))
    machine = _machine()
    console.print(
        f"machine: {machine['cpus']} CPUs ({machine['processor']}), load average "
        f"{machine['load_average_1m']} at the start"
    )
    store = EmbeddedStore(folder)
    try:
        store.migrate()
        plan = SyntheticPlan(
            PROJECT, names, tuple(counts), end_us=int(datetime.now(UTC).timestamp() * 1e6)
        )
        dataset = _dataset(store, folder, plan, console)
        end = datetime.fromtimestamp(dataset["end_us"] / 1e6, UTC)
        per_skill: dict[str, int] = dataset["per_skill"]
        popular, typical = names[0], names[len(names) // 2]
        read_models = _read_models(store, console)
        queries = _time_queries(store, {"popular": popular, "typical": typical}, end, repeat)
        verified = None
        if verify:
            console.print("comparing the read models with the raw rows …")
            compared = [popular, typical, names[1], names[-1]]
            verified = verify_read_models(store, PROJECT, compared, popular, end)
        live = time_live(store, PROJECT, names, popular, end, _timed, repeat)
        if sustain_s > 0:
            console.print(f"steady traffic, {sustain_s:.0f} s with and without the hold …")
            live["sustained"] = sustain_live(store, PROJECT, names, end, sustain_s)
    finally:
        store.close()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    report = {
        "machine": machine,
        "target_ms": TARGET_MS,
        "repeat": repeat,
        "dataset": {**dataset, "data_dir": str(folder)},
        "skills": {
            role: {
                "name": name,
                "activations": per_skill[name],
                "share": round(per_skill[name] / activations, 4),
            }
            for role, name in (("popular", popular), ("typical", typical))
        },
        "read_models": read_models,
        "queries": queries,
        "live": live,
        "verified": verified,
    }
    _print(report, console)
    return report


def _read_models(store: Store, console: Console) -> dict[str, Any]:
    """Backfill the read models of a store generated by SQL (timed), and refresh what is
    marked; what the service's refresher does on its first pass."""
    rollups = store.scorecards.rollups
    out: dict[str, Any] = {"backfill_s": None}
    if not rollups.ready():
        console.print("copying the evaluation rows into the read models (backfill) …")
        started = time.perf_counter()
        rollups.backfill()
        out["backfill_s"] = round(time.perf_counter() - started, 1)
        console.print(f"backfilled in {out['backfill_s']:,.1f} s")
    started = time.perf_counter()
    out["refreshed_days"] = rollups.refresh_dirty()
    out["refresh_s"] = round(time.perf_counter() - started, 2)
    return out


def _time_queries(
    store: Store, skills: dict[str, str], end: datetime, repeat: int
) -> list[dict[str, Any]]:
    out = []
    for window in WINDOWS:  # the skills list (the web UI's skills page): every skill at once
        since = window_start(window, end)

        def overview(since: Any = since) -> Any:
            return store.scorecards.overview(PROJECT, since=since)

        found, times = _timed(overview, repeat)
        out.append(
            {
                "query": "skills_list",
                "skill": "all",
                "window": window,
                "activations": sum(int(s["activations"]) for s in found["skills"]),
                **times,
            }
        )
    for role, skill in skills.items():
        for window in WINDOWS:
            since = window_start(window, end)

            def card(skill: str = skill, window: str = window, since: Any = since) -> Any:
                return scorecard(store, PROJECT, skill, window=window, since=since)

            result, times = _timed(card, repeat)
            out.append(
                {
                    "query": "scorecard",
                    "skill": role,
                    "window": window,
                    "activations": result.activations,
                    **times,
                }
            )
            # the skill page's cost and usage charts: from the day rollups, and from the rows
            for query, read_models in (("usage", True), ("usage_from_rows", False)):

                def usage(
                    skill: str = skill, since: Any = since, read_models: bool = read_models
                ) -> Any:
                    return store.scorecards.usage(
                        PROJECT, skill, since=since, read_models=read_models
                    )

                points, times = _timed(usage, repeat)
                out.append(
                    {
                        "query": query,
                        "skill": role,
                        "window": window,
                        "activations": sum(int(p["activations"]) for p in points),
                        **times,
                    }
                )
        since = window_start("30d", end)

        def below(skill: str = skill, since: Any = since) -> Any:
            # what `skillsight gate` reads for a failing threshold (its limit is 20)
            return store.scorecards.below(
                PROJECT, skill, 1.0, evaluator="security", since=since, limit=20
            )

        rows, times = _timed(below, repeat)
        out.append(
            {
                "query": "gate_below",
                "skill": role,
                "window": "30d",
                "rows": len(rows),
                **times,
            }
        )
    return out


def _print(report: dict[str, Any], console: Console) -> None:
    dataset = report["dataset"]
    table = Table(
        title=f"scorecard queries over {dataset['activations']:,} activations "
        f"({dataset['evaluation_rows']:,} evaluation rows), {report['repeat']} warm runs each"
    )
    for column in (
        "query",
        "skill",
        "window",
        "activations / rows",
        "cold ms",
        "median ms",
        "p95 ms",
    ):
        table.add_column(column, justify="left" if column in ("query", "skill") else "right")
    for q in report["queries"]:
        skill = report["skills"].get(q["skill"])
        table.add_row(
            q["query"],
            f"{q['skill']} ({skill['name']}, {skill['share']:.1%})" if skill else "every skill",
            q["window"],
            f"{q.get('activations', q.get('rows')):,}",
            f"{q['cold_ms']:,.1f}",
            f"{q['median_ms']:,.1f}",
            f"{q['p95_ms']:,.1f}",
        )
    console.print(table)
    live = report["live"]
    for q in live["reads"]:
        marked = f"hours {live['hours']}" if q["marked"] == "hours" else "whole"
        console.print(
            f"live traffic, {live['day']} marked {marked}: {q['query']} {q['window']} "
            f"{q['median_ms']:,.1f} ms median (p95 {q['p95_ms']:,.1f})"
        )
    console.print(
        "live traffic, the refresher's pass: "
        + ", ".join(f"marked {k} {v:.3f} CPU-s" for k, v in live["refresh_cpu_s"].items())
    )
    sustained = live.get("sustained")
    if sustained:
        console.print(
            f"steady traffic ({sustained['skills']} skills' newest hour marked, a pass every "
            f"{sustained['interval_s']:g} s for {sustained['seconds']:g} s): the refresher "
            + ", ".join(
                f"{name.replace('_', ' ')} {run['refresher_cpu_s']:.2f} CPU-s "
                f"({run['cpu_share']:.1%} of a core, {run['days_refreshed']:,} days refreshed)"
                for name, run in ((n, sustained[n]) for n in ("no_hold", "hold"))
            )
            + f"; hold {sustained['hold_s']:g} s"
        )
    verified = report["verified"]
    if verified:
        console.print(
            f"read models equal to the raw rows: {verified['comparisons']} scorecards and gate "
            f"reads of {len(verified['skills'])} skills, before and after rescoring "
            f"{verified['rescored_rows']:,} rows ({verified['marked_days']} days marked, "
            f"{verified['refreshed_days']} refreshed in {verified['refresh_s']} s); largest "
            f"difference of a mean {verified['largest_mean_gap']:.1e}"
        )
    if dataset["reused"]:
        console.print(f"dataset reused (generated in {dataset['generated_s']:,.1f} s)")
    else:
        console.print(f"dataset generated in {dataset['generated_s']:,.1f} s")
    # the charts read from the rows are the reference the rollups are measured against; the
    # skills list is a page of every skill, held to the UI's target
    worst = max(
        q["median_ms"]
        for q in report["queries"]
        if q["query"] not in ("usage_from_rows", "skills_list")
    )
    verdict = "meets" if worst < report["target_ms"] else "misses"
    console.print(
        f"[bold]slowest median {worst:,.1f} ms: {verdict} the {report['target_ms']:.0f} ms "
        "target[/]"
    )
    listed = max(q["median_ms"] for q in report["queries"] if q["query"] == "skills_list")
    verdict = "meets" if listed < UI_TARGET_MS else "misses"
    console.print(
        f"[bold]skills list: slowest median {listed:,.1f} ms: {verdict} the UI's "
        f"{UI_TARGET_MS / 1000:.0f} s target for a page[/]"
    )
