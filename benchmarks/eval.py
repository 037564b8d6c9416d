"""``skillsight bench eval``: deterministic evaluations per second per core.

Synthetic activations shaped like real Claude Code ones (a script run, file reads, now and then a
failed call, a repeat, a secret in an output, a delete outside the workspace; SKILL.md bodies and
outputs of realistic size) are scored in this process and CPU time is measured, so the figure is
activations per CPU-second: per core. The cheap evaluators run together as the scheduler runs
them; ``skill_selection`` is reported apart, since it embeds texts with MiniLM: once with every
request new (the embedding cost) and once with requests seen before (the cache).

The synthetic corpus is frozen out of the garbage collector while it is measured: it is the
benchmark's input, thousands of models a scheduler never holds at once, and without the freeze
every full collection walks all of it and bills the evaluators for it. The cheap evaluators are
measured with the collector's young threshold a service process runs with
(``SKILLSIGHT_GC_YOUNG_THRESHOLD``, :func:`skillsight.runtime.settle_heap`), and once with
Python's for comparison.
"""

from __future__ import annotations

import gc
import os
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from skillsight.config import Settings
from skillsight.evaluators import (
    DETERMINISTIC,
    Baseline,
    CachedEmbedder,
    Evaluation,
    EvaluationContext,
    Evaluator,
    MiniLMEmbedder,
    Registry,
    deterministic_registry,
    run_evaluators,
    shared_views,
)
from skillsight.skills import SkillManifest
from skillsight.store.records import Activation, SkillContract, Tokens, ToolCall, VisibleSkill

CHEAP = tuple(name for name in DETERMINISTIC if name != "skill_selection")
WORKSPACE = "/home/dev/project"
_TOPICS = (
    "CSV sales totals",
    "PDF text extraction",
    "release notes from git tags",
    "unit prices",
    "deployment checks",
    "SQL migrations",
    "image resizing",
    "changelog linting",
    "invoice parsing",
    "log triage",
    "dependency audit",
    "API client generation",
    "spreadsheet cleanup",
    "test flakiness report",
    "Dockerfile review",
    "chart rendering",
    "meeting notes summary",
    "translation memory",
    "budget forecast",
    "incident timeline",
)


def _skills() -> list[tuple[SkillManifest, SkillContract]]:
    out = []
    for i, topic in enumerate(_TOPICS):
        name = f"skill-{i:02d}"
        folder = Path(WORKSPACE) / ".claude" / "skills" / name
        body = (
            f"# {topic}\n\nRun `python3 scripts/run_{i}.py INPUT` and report its output as is.\n"
            + "Check the inputs first; never edit files outside the project.\n" * 20
        )
        manifest = SkillManifest(
            name=name,
            description=f"Handle {topic}: compute, summarise and report. Use for {topic}.",
            allowed_tools=["Bash(python3:*)", "Read", "Grep"],
            body=body,
            path=folder,
            skill_md=folder / "SKILL.md",
            version=f"{i:064x}",
            frontmatter={},
            scripts=[f"scripts/run_{i}.py"],
        )
        contract = SkillContract(
            name=name,
            description=manifest.description,
            allowed_tools=manifest.allowed_tools,
            version=manifest.version,
            source_uri=str(folder / "SKILL.md"),
        )
        out.append((manifest, contract))
    return out


def synthetic_activations(
    count: int, *, rows: int = 30, seed: int = 7
) -> tuple[list[Activation], list[Any]]:
    """``count`` activations and their skills' (manifest, contract) pairs; ``rows`` bounds the
    lines of each script output and file read (3 is the size of the scenario captures)."""
    rng = random.Random(seed)
    skills = _skills()
    visible = [VisibleSkill(name=c.name, description=c.description) for _, c in skills]
    out = []
    for n in range(count):
        index = rng.randrange(len(skills))
        manifest, contract = skills[index]
        calls: list[ToolCall] = []
        step = 3
        for k in range(rng.randint(1, 6)):
            roll = rng.random()
            if roll < 0.5:
                name, args = (
                    "Bash",
                    {
                        "command": f"python3 {manifest.path}/scripts/run_{index}.py "
                        f"data/in_{n}.csv",
                        "description": "run the script",
                    },
                )
                result = "\n".join(
                    f"row {j}: total {rng.randint(10, 9999)}.{j:02d}"
                    for j in range(rng.randint(min(3, rows), rows))
                )
            elif roll < 0.85:
                name, args = "Read", {"file_path": f"{WORKSPACE}/data/in_{n}_{k}.csv"}
                result = "region,amount\n" + "\n".join(
                    f"r{j},{rng.randint(1, 500)}.00" for j in range(rows)
                )
            elif roll < 0.93:
                name, args = "Bash", {"command": f"rm -rf /var/cache/app-{n}"}
                result = ""
            else:
                name, args = "Bash", {"command": "cat .env"}
                result = f"API_KEY=sk-live-{rng.getrandbits(128):032x}\nDEBUG=0"
            calls.append(
                ToolCall(
                    tool_call_id=f"toolu_{n:06d}_{k}",
                    name=name,
                    arguments=args,
                    result=result,
                    is_error=rng.random() < 0.05,
                    step_id=step,
                )
            )
            step += 1
        figures = [line.rsplit(" ", 1)[-1] for c in calls for line in (c.result or "").split("\n")]
        out.append(
            Activation(
                activation_id=f"{n:032x}",
                session_id=f"s{n // 3}",
                trace_id=f"t{n // 3}",
                skill_name=contract.name,
                skill_version=contract.version,
                trigger="skill_tool",
                trigger_call_id=f"toolu_{n:06d}_load",
                trigger_step_id=2,
                request=f"Please take care of {_TOPICS[index]} for data/in_{n}.csv",
                tool_calls=calls,
                skill_output=f"Base directory for this skill: {manifest.path}\n\n{manifest.body}",
                integration_message="Here is the result: " + ", ".join(figures[:5]),
                integration_step_id=step,
                step_ids=list(range(3, step)),
                started_at="2026-11-22T12:00:00Z",
                ended_at="2026-11-22T12:00:05Z",
                duration_ms=rng.uniform(500, 20_000),
                tokens=Tokens(input=rng.randint(100, 5000), output=rng.randint(50, 2000)),
                visible_skills=visible,
                contract=contract,
            )
        )
    return out, skills


class _Constant(Evaluator):
    """Scores 1.0 without looking: what running an evaluator costs before it does anything."""

    version = "0"

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        return self.result(
            activation,
            1.0,
            "constant",
            "not looked at",
            step_ids=[activation.trigger_step_id],
            tool_call_ids=[activation.trigger_call_id],
        )


def _floor_registry() -> Registry:
    return Registry(type(f"Constant_{n}", (_Constant,), {"name": n})() for n in CHEAP)


def _cpu(run: Callable[[], object]) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def _machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "cpus": os.cpu_count(),
        "load_average_1m": round(load[0], 2),
        "python": platform.python_version(),
        "processor": platform.machine(),
    }


def run_eval_bench(*, activations: int, selection: int, console: Console) -> dict[str, Any]:
    """Run the benchmark, print its report and return the figures."""
    machine = _machine()
    console.print(
        f"machine: {machine['cpus']} CPUs ({machine['processor']}), load average "
        f"{machine['load_average_1m']} at the start, Python {machine['python']}"
    )
    report: dict[str, Any] = {
        "cheap_evaluators": list(CHEAP),
        "target_per_core": 20_000,
        "machine": machine,
    }
    for label, rows in (("scenario-sized", 3), ("large outputs", 30)):
        report[label] = _cheap(activations, rows, label, console)
    if selection > 0:
        report["skill_selection"] = _selection(synthetic_activations(selection)[0], console)
    return report


def synthetic_workload(
    count: int, *, rows: int
) -> tuple[list[Activation], Callable[[Activation], EvaluationContext]]:
    """``count`` synthetic activations (:func:`synthetic_activations`) and each one's context as
    the cheap evaluators are measured with it: its skill's manifest, a baseline of 200 samples
    and the workspace."""
    acts, skills = synthetic_activations(count, rows=rows)
    baseline = Baseline(tool_calls=3, tokens=3000, duration_ms=8000, samples=200)
    contexts = {
        m.name: EvaluationContext(manifest=m, baseline=baseline, workspace=WORKSPACE)
        for m, _ in skills
    }

    def context(a: Activation) -> EvaluationContext:
        return contexts[a.skill_name]

    return acts, context


def _cheap(count: int, rows: int, label: str, console: Console) -> dict[str, Any]:
    acts, context = synthetic_workload(count, rows=rows)
    registry = deterministic_registry()
    text = sum(len(c.result or "") for a in acts for c in a.tool_calls) / len(acts)
    console.print(
        f"{label}: {len(acts)} activations, {text:,.0f} characters of tool output each on average"
    )
    run_evaluators(acts[:200], context, registry=registry, names=CHEAP)  # warm caches, imports
    gc.collect()
    gc.freeze()
    defaults = gc.get_threshold()
    young = Settings.load().gc_young_threshold
    try:
        python_defaults = _cpu(
            lambda: run_evaluators(acts, context, registry=registry, names=CHEAP)
        )
        if young > 0:  # as a service process collects (skillsight.runtime.settle_heap)
            gc.set_threshold(young, *defaults[1:])
        seconds = _cpu(lambda: run_evaluators(acts, context, registry=registry, names=CHEAP))
        per_evaluator = {}
        # Each evaluator's own cost, in a run whose activations' views are derived already
        # (as the scheduler's other evaluators leave them): the views are counted once, in
        # "all six", not six times.
        with shared_views():
            run_evaluators(acts, context, registry=registry, names=CHEAP)
            for name in CHEAP:
                evaluator = registry.get(name)

                def one(e: Any = evaluator) -> None:
                    for a in acts:
                        e.evaluate(a, context(a))

                per_evaluator[name] = _cpu(one) / len(acts) * 1e6
        floor_registry = _floor_registry()
        floor = _cpu(lambda: run_evaluators(acts, context, registry=floor_registry))
    finally:
        gc.set_threshold(*defaults)
        gc.unfreeze()
    per_core = len(acts) / seconds
    table = Table(title=f"deterministic evaluation, {label} (CPU µs per activation)")
    table.add_column("evaluator")
    table.add_column("µs", justify="right")
    for name, micros in per_evaluator.items():
        table.add_row(name, f"{micros:.1f}")
    table.add_row("sum of the six alone (views shared)", f"{sum(per_evaluator.values()):.1f}")
    table.add_row("all six via run_evaluators", f"{seconds / len(acts) * 1e6:.1f}")
    table.add_row(
        "the same, Python's collector thresholds (700)",
        f"{python_defaults / len(acts) * 1e6:.1f}",
    )
    table.add_row("six constant evaluators via run_evaluators", f"{floor / len(acts) * 1e6:.1f}")
    console.print(table)
    console.print(f"[bold]{per_core:,.0f} activations/s per core[/] (target ≥ 20,000)")
    return {
        "activations": len(acts),
        "output_chars_per_activation": round(text),
        "activations_per_cpu_second": round(per_core),
        "us_per_activation": {k: round(v, 2) for k, v in per_evaluator.items()},
        "us_per_activation_all_six": round(seconds / len(acts) * 1e6, 2),
        "us_per_activation_all_six_python_gc": round(python_defaults / len(acts) * 1e6, 2),
        "gc_young_threshold": young,
        "us_per_activation_six_constant": round(floor / len(acts) * 1e6, 2),
    }


def _selection(acts: list[Activation], console: Console) -> dict[str, Any]:
    model = MiniLMEmbedder()
    embedder = CachedEmbedder(model)
    started = time.monotonic()
    embedder.embed(["warm-up"])
    load_s = time.monotonic() - started
    # bfloat16 only where the CPU multiplies it natively: a figure means little without it
    precision = "bfloat16" if model.bfloat16 else "float32"
    context = EvaluationContext(embedder=embedder)
    registry = deterministic_registry()
    cold = _cpu(lambda: run_evaluators(acts, context, registry=registry, names=["skill_selection"]))
    warm = _cpu(lambda: run_evaluators(acts, context, registry=registry, names=["skill_selection"]))
    texts = embedder.misses
    figures = {
        "activations": len(acts),
        "model_load_s": round(load_s, 2),
        "precision": precision,
        "new_requests_per_cpu_second": round(len(acts) / cold, 1),
        "cached_per_cpu_second": round(len(acts) / warm),
        "cached_us_per_activation": round(warm / len(acts) * 1e6, 1),
        "texts_embedded": texts,
    }
    console.print(
        f"skill_selection (MiniLM in {precision}, CPU, batched): model load {load_s:.1f} s; "
        f"every request new: "
        f"{figures['new_requests_per_cpu_second']:,} activations/s per core "
        f"({texts} texts embedded); requests seen before: "
        f"{figures['cached_per_cpu_second']:,} activations/s per core "
        f"({figures['cached_us_per_activation']} µs each)"
    )
    return figures
