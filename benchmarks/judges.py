"""``skillsight bench judges``: LLM-judge throughput, and what judging adds beyond the model.

Against the scripted OpenAI-compatible server on 127.0.0.1 (which answers at once, so the
numbers are the judge's own cost, not a provider's), it measures:

- **throughput**: distinct activations judged per second at a given concurrency, through
  litellm's real client (no verdict cache);
- **overhead per judged activation**: the judge's mean latency minus the mean latency of the
  very same HTTP requests replayed with a bare HTTP client at the same concurrency, i.e. what
  prompt building, litellm, parsing, crediting and accounting add per judgement;
- **skillsight's share** of it: rendering the prompt and crediting the verdict alone, offline;
- **scheduler overhead per judged activation**: the same activations, one session each, through
  the online :class:`~skillsight.evaluators.scheduler.EvaluationScheduler` (context assembly,
  sampling, the store write of every evaluation row) at the same concurrency, against judging
  them directly: (scheduler wall - direct wall) * concurrency / activations.
"""

from __future__ import annotations

import asyncio
import math
import re
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from demo.scripted_openai import Answer, Json, Reply, ScriptedOpenAI, Usage
from skillsight.errors import EvaluatorError
from skillsight.evaluators import Registry
from skillsight.evaluators.judges import (
    JudgeClient,
    JudgeContext,
    JudgeEvaluator,
    JudgeSettings,
    credit,
    load_rubric,
    release_connections,
    render_inputs,
)
from skillsight.evaluators.scheduler import ContextAssembler, EvaluationScheduler
from skillsight.rebuild.finalizer import ActivationsReady
from skillsight.store import EmbeddedStore
from skillsight.store.records import Activation, SkillContract, ToolCall

_CHECK = re.compile(r"^- `([^`]+)`:", re.M)
_STEP = re.compile(
    r"^(?:### step|## The decision: step|## The next agent message: step) (\d+)", re.M
)


def bench_activation(n: int, calls: int = 5) -> Activation:
    """A realistic activation: a request, a contract and ``calls`` Bash calls with results."""
    tool_calls = [
        ToolCall(
            tool_call_id=f"call-{n}-{i}",
            name="Bash",
            arguments={"command": f"python3 .claude/skills/csv-summary/scripts/step{i}.py {n}"},
            result=f"rows: {n + i}\n" + "value,amount\n" * 40,
            step_id=i + 3,
        )
        for i in range(calls)
    ]
    return Activation(
        activation_id=f"bench-{n}",
        session_id=f"session-{n}",
        trace_id=f"trace-{n}",
        skill_name="csv-summary",
        trigger="skill_tool",
        trigger_call_id=f"call-{n}",
        trigger_step_id=2,
        request=f"Summarise data/sales-{n}.csv: the total amount and the top region.",
        tool_calls=tool_calls,
        step_ids=[c.step_id for c in tool_calls],
        integration_message=f"The total amount is {n * 7}; north sold the most.",
        integration_step_id=calls + 3,
        started_at="2026-01-01T00:00:00Z",
        ended_at="2026-01-01T00:00:02Z",
        contract=SkillContract(
            name="csv-summary",
            description="Summarise a CSV file: totals and top groups.",
            allowed_tools=["Bash(python3:*)", "Read"],
        ),
    )


def _answer(body: dict[str, Any]) -> Answer:
    """Every listed check satisfied, citing the first step shown."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    steps = [int(s) for s in _STEP.findall(user)][:1]
    checks = {
        c: {"satisfied": True, "step_ids": steps, "reason": "shown"} for c in _CHECK.findall(user)
    }
    verdict: dict[str, Any] = {"checks": checks, "summary": "fine"}
    if "better_skill" in str(body.get("response_format") or body.get("tools")):
        verdict = {"checks": checks, "better_skill": None, "summary": "fine"}
    return Reply([Json(verdict)], usage=Usage(input_tokens=1200, output_tokens=80))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def run_judges_bench(
    *,
    activations: int = 200,
    concurrency: int = 8,
    rubric: str = "internal_trajectory",
    console: Console | None = None,
) -> dict[str, Any]:
    if activations < 1 or concurrency < 1:
        raise EvaluatorError("--activations and --concurrency must be at least 1")
    console = console or Console()
    chosen = load_rubric(rubric)
    batch = [bench_activation(n) for n in range(activations)]
    server = ScriptedOpenAI(_answer)
    with server as url:
        settings = JudgeSettings(
            model="openai/judge-bench",
            api_base=url,
            api_key="bench",
            concurrency=concurrency,
            cache_size=0,
            daily_spend_usd=math.inf,
            input_usd_per_mtok=0.15,
            output_usd_per_mtok=0.6,
        )
        judge = JudgeEvaluator.for_rubric(chosen, JudgeClient(settings))
        # Warm-up, untimed: litellm's import and first connection.
        judge.evaluate(bench_activation(-1), JudgeContext())
        warm = len(server.model_requests)
        started, cpu = time.perf_counter(), time.process_time()
        judged = judge.evaluate_many(batch, JudgeContext())
        wall, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        bodies = [r.body for r in server.model_requests[warm:]]
        raw_latencies, raw_wall = _replay(url, bodies, concurrency)
        scheduled_wall = _through_scheduler(judge, batch, concurrency)
        release_connections()
    failed = [e for e in judged if e.score is None]
    if failed:
        raise EvaluatorError(f"{len(failed)} judgements failed, e.g.: {failed[0].error}")
    latencies = [e.latency_ms for e in judged]
    offline = _offline_us(chosen, batch)
    report = {
        "rubric": rubric,
        "activations": activations,
        "concurrency": concurrency,
        "judged_per_s": activations / wall,
        "raw_requests_per_s": len(bodies) / raw_wall,
        "judge_latency_ms_mean": statistics.fmean(latencies),
        "judge_latency_ms_p95": _percentile(latencies, 0.95),
        "raw_request_latency_ms_mean": statistics.fmean(raw_latencies),
        "overhead_ms_per_judgement": statistics.fmean(latencies) - statistics.fmean(raw_latencies),
        "process_cpu_ms_per_judgement": cpu_s * 1000 / activations,
        "render_and_credit_us_per_activation": offline,
        "scheduled_per_s": activations / scheduled_wall,
        "scheduler_overhead_ms_per_judged_activation": (scheduled_wall - wall)
        * concurrency
        * 1000
        / activations,
        "prompt_chars_mean": statistics.fmean(
            len(b["messages"][0]["content"]) + len(b["messages"][1]["content"]) for b in bodies
        ),
        "cost_usd_total": sum(e.cost_usd for e in judged),
    }
    table = Table(title=f"Judge `{rubric}` against the scripted server, concurrency {concurrency}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, key, fmt in (
        ("activations judged per second", "judged_per_s", "{:.1f}"),
        ("same requests, bare HTTP, per second", "raw_requests_per_s", "{:.1f}"),
        ("judge latency, mean (ms)", "judge_latency_ms_mean", "{:.2f}"),
        ("judge latency, p95 (ms)", "judge_latency_ms_p95", "{:.2f}"),
        ("bare request latency, mean (ms)", "raw_request_latency_ms_mean", "{:.2f}"),
        ("overhead per judged activation (ms)", "overhead_ms_per_judgement", "{:.2f}"),
        (
            "process CPU per judgement (ms, server included)",
            "process_cpu_ms_per_judgement",
            "{:.2f}",
        ),
        ("prompt render + credit, offline (µs)", "render_and_credit_us_per_activation", "{:.0f}"),
        ("through the online scheduler, per second", "scheduled_per_s", "{:.1f}"),
        (
            "scheduler overhead per judged activation (ms)",
            "scheduler_overhead_ms_per_judged_activation",
            "{:.2f}",
        ),
        ("prompt size, mean (chars)", "prompt_chars_mean", "{:.0f}"),
    ):
        table.add_row(label, fmt.format(report[key]))
    console.print(table)
    return report


def _replay(url: str, bodies: list[dict[str, Any]], concurrency: int) -> tuple[list[float], float]:
    """The recorded judge requests again, straight over HTTP: the floor a judge call sits on."""
    endpoint = url + "/chat/completions"
    with httpx.Client(timeout=30) as client:

        def send(body: dict[str, Any]) -> float:
            started = time.perf_counter()
            client.post(endpoint, json=body, headers={"authorization": "Bearer bench"})
            return (time.perf_counter() - started) * 1000

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            latencies = list(pool.map(send, bodies))
        return latencies, time.perf_counter() - started


def _offline_us(rubric: Any, batch: list[Activation]) -> float:
    context = JudgeContext()
    started = time.perf_counter()
    for activation in batch:
        rendered = render_inputs(rubric, activation, context, 24_000)
        verdict = {
            "checks": {
                c.id: {"satisfied": True, "step_ids": [3], "reason": ""} for c in rubric.checks
            }
        }
        credit(verdict, rubric.checks, rendered.shown_steps, activation)
    return (time.perf_counter() - started) * 1e6 / len(batch)


def _through_scheduler(judge: JudgeEvaluator, batch: list[Activation], concurrency: int) -> float:
    """Seconds for the online scheduler to judge ``batch`` (one session each) and store every
    evaluation row in a fresh embedded store."""
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-judges-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            scheduler = EvaluationScheduler(
                store,
                registry=Registry([judge]),
                concurrency=concurrency,
                queue_max=len(batch) + 1,
                assembler=ContextAssembler(store, seed=False),
            )

            async def run() -> float:
                async with scheduler:
                    started = time.perf_counter()
                    for n, activation in enumerate(batch):
                        ready = ActivationsReady("default", activation.session_id, (activation,), n)
                        await scheduler.submit(ready)
                    while scheduler.stats.sessions_scored < len(batch):
                        if scheduler.stats.store_failures:
                            raise EvaluatorError(f"the store failed: {scheduler.stats.last_error}")
                        await asyncio.sleep(0.002)
                    return time.perf_counter() - started

            return asyncio.run(run())
        finally:
            store.close()
