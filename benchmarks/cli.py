"""The benchmarks that measure DESIGN.md's targets: ``python -m benchmarks NAME`` (``make bench``).

They run from a source checkout, beside the package and outside the wheel: they drive the scripted
model servers and synthetic data generators of ``demo/`` and ``benchmarks/``. ``skillsight bench
NAME`` runs the same commands when the checkout is there.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from benchmarks.instruction_budgets import BUDGETS as _BUDGETS
from skillsight.errors import SkillsightError

app = typer.Typer(
    help="Benchmarks that measure the targets in DESIGN.md.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Also print the numbers as JSON.")]
"""Every bench's ``--json``: its report printed as JSON after its tables."""


def fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"error: {message}", highlight=False)
    return typer.Exit(code)


@app.command("ingest")
def bench_ingest(
    spans_total: Annotated[int, typer.Option("--spans", help="Spans to send.")] = 300_000,
    senders: Annotated[int, typer.Option("--senders", help="Concurrent exporters.")] = 4,
    batch: Annotated[int, typer.Option("--batch", help="Spans per export request.")] = 512,
    ack: Annotated[
        str,
        typer.Option(
            "--ack",
            help="Acknowledgement modes to run, comma-separated: spool (durable: fsync'd), "
            "commit (durable: committed), memory (queued only: the rate before durable "
            "acknowledgements).",
        ),
    ] = "spool,memory,commit",
    compare: Annotated[
        bool,
        typer.Option(
            "--compare/--no-compare",
            help="Also run the first mode with the fast path off and print the ratio of the two.",
        ),
    ] = True,
) -> None:
    """Measure OTLP/HTTP protobuf ingest into a fresh embedded server: committed spans/s, for
    each acknowledgement mode.

    Example: skillsight bench ingest --spans 300000 --ack spool,memory
    """
    from benchmarks.ingest import run_ingest_bench

    modes = [m.strip() for m in ack.split(",") if m.strip()]
    runs = [(True, mode) for mode in modes] + ([(False, modes[0])] if compare and modes else [])
    try:
        reports = [
            run_ingest_bench(
                spans_total=spans_total,
                senders=senders,
                batch=batch,
                console=console,
                fast_path=fast,
                ack=mode,
            )
            for fast, mode in runs
        ]
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    console.print("[bold]summary[/] (spans per server CPU-s, wall spans/s, answer p50/p99):")
    for report in reports:
        console.print(
            f"  {report['path']:15s} ack={report['ack']:7s} "
            f"{report['committed_spans_per_cpu_s'] or 0:>8} /CPU-s "
            f"{report['committed_spans_per_s']:>8} /s"
            f"  {report['answer_p50_ms']:>7} / {report['answer_p99_ms']} ms",
            highlight=False,
        )
    if compare and len(reports) > len(modes):
        fast_rate = reports[0]["committed_spans_per_cpu_s"] or 0
        python_rate = reports[-1]["committed_spans_per_cpu_s"] or 0
        ratio = fast_rate / python_rate if python_rate else float("inf")
        console.print(f"[bold]fast path / Python decoder: {ratio:.2f}x[/] spans per server CPU-s")
    if any(r["spans_lost"] for r in reports):
        raise typer.Exit(1)


@app.command("fuzz")
def bench_fuzz(
    inputs: Annotated[
        int, typer.Option("--inputs", help="Mutated requests to decode.")
    ] = 1_000_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (a run is repeatable).")] = 15,
    findings: Annotated[
        Path, typer.Option("--findings", help="Folder for inputs that crash or hang a decoder.")
    ] = Path(".skillsight/fuzz-findings"),
) -> None:
    """Fuzz the OTLP decoders and the fast path's screen with mutated real requests.

    Example: skillsight bench fuzz --inputs 1000000
    """
    from benchmarks.fuzz import run_fuzz

    report = run_fuzz(count=inputs, seed=seed, findings=findings, console=console)
    if report["findings"]:
        raise fail(f"{report['findings']} findings in {findings}")


@app.command("overhead")
def bench_overhead(
    sessions: Annotated[
        int, typer.Option("--sessions", help="Real Claude Code sessions each way (0: skip).")
    ] = 3,
    replays: Annotated[
        int, typer.Option("--replays", help="Sessions replayed through the instrumentor alone.")
    ] = 2000,
    tool_calls: Annotated[
        int, typer.Option("--tool-calls", help="Tool calls per replayed session.")
    ] = 20,
) -> None:
    """Measure what the Claude Agent SDK instrumentor adds: latency per session and call, memory.

    Example: skillsight bench overhead --sessions 5
    """
    from benchmarks.overhead import run_overhead_bench

    run_overhead_bench(sessions=sessions, replays=replays, tool_calls=tool_calls, console=console)


@app.command("rebuild")
def bench_rebuild(
    steps: Annotated[int, typer.Option("--steps", help="Steps of the long session.")] = 1000,
    sessions: Annotated[
        int, typer.Option("--sessions", help="Short sessions for the throughput run.")
    ] = 200,
    repeat: Annotated[int, typer.Option("--repeat", help="Timed runs (median).")] = 5,
    turn_steps: Annotated[
        int,
        typer.Option(
            "--turn-steps",
            help="Steps of a long turn whose rows arrive in batches (0 skips it).",
        ),
    ] = 10_000,
    batches: Annotated[int, typer.Option("--batches", help="Batches the turn arrives in.")] = 100,
    per_batch: Annotated[
        bool,
        typer.Option(
            "--per-batch", help="Also replay a provisional rebuild after every batch (slow)."
        ),
    ] = False,
    prompts: Annotated[
        int,
        typer.Option(
            "--prompts",
            help="Prompts of a session rebuilt after each: extended, whole with the row cache, "
            "and whole without it (0 skips it).",
        ),
    ] = 20,
    prompt_steps: Annotated[int, typer.Option("--prompt-steps", help="Steps per prompt.")] = 50,
    history: Annotated[
        int,
        typer.Option(
            "--history",
            help="Sessions already stored in the project of a second throughput run (0 skips it).",
        ),
    ] = 20_000,
    as_json: JsonFlag = False,
) -> None:
    """Measure rebuild time of a long session (algorithm alone, and store read + algorithm +
    write), activations rebuilt per CPU-second (also in a project that already holds many
    sessions), and the rebuild work of a long turn arriving in batches against one rebuild of
    it, on fresh embedded stores.

    Example: skillsight bench rebuild --steps 1000 --turn-steps 10000 --batches 100
    """
    from benchmarks.rebuild import run_rebuild_bench
    from benchmarks.rebuild_history import run_history_bench
    from benchmarks.rebuild_long import run_long_session_bench
    from benchmarks.rebuild_prompts import run_many_prompts_bench

    try:
        report = run_rebuild_bench(steps=steps, sessions=sessions, repeat=repeat, console=console)
        if history:
            report["history"] = h = run_history_bench(
                history=history, sessions=sessions, repeat=repeat
            )
            console.print(
                f"{sessions} sessions of 20 steps in a project holding {history:,} sessions: "
                f"{h['activations_per_cpu_s_pass']:,} activations / CPU-second for read + "
                f"rebuild + write (median of {repeat} passes); one session's read "
                f"{h['one_session_read_ms']} ms CPU "
                f"({h['one_session_read_ms_without_history']} ms before the history)"
            )
        if turn_steps:
            turn = run_long_session_bench(steps=turn_steps, batches=batches, per_batch=per_batch)
            report["long_turn"] = turn
            for policy in ("bounded", "per_batch"):
                if policy in turn:
                    r = turn[policy]
                    console.print(
                        f"turn of {turn_steps:,} steps in {turn['batches']} batches, {policy}: "
                        f"{r['provisional_rebuilds']} provisional rebuilds, "
                        f"{r['span_id_looks']} looks at its span ids, "
                        f"{r['total_cpu_s']} CPU-s in all = {r['ratio']}x one rebuild "
                        f"({r['one_rebuild_cpu_s']} CPU-s)"
                    )
        if prompts:
            report["many_prompts"] = many = [
                run_many_prompts_bench(prompts=prompts, steps=prompt_steps, mode=mode)
                for mode in PROMPT_MODES
            ]
            for r in many:
                console.print(
                    f"session of {prompts} prompts of {prompt_steps} steps, rebuilt after each, "
                    f"{PROMPT_MODES[r['mode']]} ({r['extended']} extended): "
                    f"{r['total_cpu_s']} CPU-s in all = {r['ratio']}x one rebuild "
                    f"({r['one_rebuild_cpu_s']} CPU-s; read {r['read_cpu_s']}, "
                    f"algorithm {r['algorithm_cpu_s']}, write {r['write_cpu_s']}; "
                    f"{r['rows_read']:,} rows read)"
                )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


PROMPT_MODES = {
    "extended": "as the finalizer runs (row cache, each rebuild extending the one before)",
    "cached": "with the row cache, every rebuild whole",
    "whole": "without the row cache, every rebuild whole",
}


@app.command("eval")
def bench_eval(
    activations: Annotated[
        int, typer.Option("--activations", help="Synthetic activations per workload.")
    ] = 5000,
    selection: Annotated[
        int,
        typer.Option("--selection", help="Activations for skill_selection (0 skips the model)."),
    ] = 300,
    prompts: Annotated[
        int,
        typer.Option(
            "--prompts",
            help="Prompts of a session handed to the scheduler after each, with and without "
            "keeping unchanged activations' verdicts (0 skips it).",
        ),
    ] = 20,
    history: Annotated[
        int,
        typer.Option(
            "--history",
            help="Evaluation rows already stored in the project of a run of the scheduler's "
            "hand-overs, beside the same run in an empty one (0 skips it).",
        ),
    ] = 2_000_000,
    backlog: Annotated[
        int,
        typer.Option(
            "--backlog",
            help="Activations per hand-over of a run of the scheduler scoring a backlog, as "
            "the service does when sessions queue up, its CPU split (0 skips it).",
        ),
    ] = 1024,
    as_json: JsonFlag = False,
) -> None:
    """Measure deterministic evaluations per CPU-second (per core); skill_selection apart; the
    rows a session of many prompts writes; the scheduler's hand-overs (scored and written)
    in an empty project and in one with history; and the scheduler scoring a backlog.

    Example: skillsight bench eval --activations 5000 --selection 300 --prompts 20 --history 2000000
    --backlog 1024
    """
    from benchmarks.eval import run_eval_bench
    from benchmarks.eval_backlog import run_eval_backlog_bench
    from benchmarks.eval_history import run_eval_history_bench
    from benchmarks.eval_prompts import run_prompts_eval_bench

    try:
        report = run_eval_bench(activations=activations, selection=selection, console=console)
        if prompts:
            report["session_of_prompts"] = run_prompts_eval_bench(prompts=prompts, console=console)
        if history:
            report["history"] = h = run_eval_history_bench(history=history)
            empty, held = h["empty"], h["history"]
            console.print(
                f"the scheduler's hand-overs of {h['batch']} activations ({h['evaluators']} "
                f"evaluators, scored and written), CPU per activation: new "
                f"{empty['new_us_per_activation']:,} µs in an empty project, "
                f"{held['new_us_per_activation']:,} µs with {history:,} evaluation rows stored; "
                f"handed over again unchanged {empty['again_us_per_activation']:,} and "
                f"{held['again_us_per_activation']:,} µs"
            )
        if backlog:
            report["backlog"] = b = run_eval_backlog_bench(batch=backlog)
            console.print(
                f"the scheduler scoring a backlog, hand-overs of {b['batch']:,} activations "
                f"({b['evaluators']} evaluators, scored and written): "
                f"{b['activations_per_cpu_s']:,} activations per CPU-second, "
                f"{b['us_per_activation']} µs each: the evaluators {b['evaluators_us']}, "
                f"the rest of the scoring {b['scoring_rest_us']}, the write {b['write_us']}"
            )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("instructions")
def bench_instructions(
    sessions: Annotated[
        int, typer.Option("--sessions", help="Sessions rebuilt by the algorithm (0 skips it).")
    ] = 50,
    steps: Annotated[int, typer.Option("--steps", help="Steps per session.")] = 20,
    activations: Annotated[
        int,
        typer.Option("--activations", help="Activations scored by the six cheap evaluators."),
    ] = 1000,
    spans: Annotated[
        int,
        typer.Option("--spans", help="Spans the collector screens and decodes (0 skips it)."),
    ] = 10_000,
    budget: Annotated[
        bool,
        typer.Option(
            "--budget",
            help="Count at the budget file's sizes and hold each count to its budget: exit 1 "
            "when one is more than the tolerance over (a regression) or under (a gain to record).",
        ),
    ] = False,
    record_budget: Annotated[
        bool,
        typer.Option(
            "--record-budget", help="Write the counts as the budgets, with this environment."
        ),
    ] = False,
    budget_file: Annotated[
        Path,
        typer.Option("--budget-file", help="The budgets (JSON).", show_default=False),
    ] = _BUDGETS,
    as_json: JsonFlag = False,
) -> None:
    """Count machine instructions (callgrind) per activation of the rebuild algorithm and of
    the six cheap evaluators, and per span of the collector's screen and Python decoder: the
    same in every run of the same code, so a change of a few percent shows where CPU time on a
    busy machine cannot (`bench compare --only instructions`). `--budget` holds them to
    benchmarks/instruction_budgets.json (the suite does too), in the environment it was
    recorded in. Needs valgrind.

    Example: skillsight bench instructions --sessions 50 --activations 1000 --spans 10000
    """
    from benchmarks import instruction_budgets as budgets
    from benchmarks.instructions import per_unit, run_instructions_bench

    try:
        data = budgets.load(budget_file) if budget else None
        if data is not None:
            counted = budgets.sizes(data)
            sessions, steps = counted["sessions"], counted["steps"]
            activations, spans = counted["activations"], counted["spans"]
        report = run_instructions_bench(
            sessions=sessions, steps=steps, activations=activations, spans=spans
        )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    verdicts = {v.workload: v for v in budgets.check(report, data)} if data else {}
    table = Table(title="instructions per unit of work (callgrind, PYTHONHASHSEED=0)")
    table.add_column("workload")
    table.add_column("counted over", justify="right")
    table.add_column("instructions per unit", justify="right")
    if verdicts:
        table.add_column("budget", justify="right")
        table.add_column("against it")
    for name, part in report.items():
        unit, value = per_unit(part)
        cells = [name, f"{part[unit + 's']:,} {unit}s", f"{value:,} per {unit}"]
        if name in verdicts:
            v = verdicts[name]
            cells += [f"{v.budget:,} per {v.unit}" if v.budget else "-", f"{v.state}: {v.reason}"]
        table.add_row(*cells)
    console.print(table)
    if record_budget:
        budgets.record(report, budget_file)
        console.print(f"budgets recorded in {budget_file}")
    if as_json:
        print(json.dumps(report, indent=2))
    failed = [v for v in verdicts.values() if v.failed]
    if failed and not record_budget:
        raise fail(
            "; ".join(f"{v.workload} {v.state} its budget ({v.reason})" for v in failed)
            + ". If the change is meant, record the counts: skillsight bench instructions "
            "--budget --record-budget"
        )


@app.command("inserts")
def bench_inserts(
    rounds: Annotated[
        int, typer.Option("--rounds", help="Writes of each workload, each way (2 to 200).")
    ] = 30,
    as_json: JsonFlag = False,
) -> None:
    """Measure the embedded store's writes with each batch spooled to a file ClickHouse reads,
    and through chdb's Python() table function (the way when no file can be written),
    alternated in one process: CPU ms per write of a scheduler's hand-over, one session's
    rebuild, a pass of 200 sessions and 5,000 decoded spans.

    Example: skillsight bench inserts --rounds 30
    """
    from benchmarks.inserts import run_insert_bench

    try:
        report = run_insert_bench(rounds=rounds)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    table = Table(title=f"embedded store writes, CPU ms (median of {report['rounds']} each)")
    for column in ("write", "spooled file", "Python()", "ratio"):
        table.add_column(column, justify="left" if column == "write" else "right")
    for name, row in report["writes"].items():
        table.add_row(
            name, f"{row['file_ms']:.1f}", f"{row['python_ms']:.1f}", f"{row['ratio']:.2f}"
        )
    console.print(table)
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("eval-latency")
def bench_eval_latency(
    sessions: Annotated[int, typer.Option("--sessions", help="Sessions timed.")] = 20,
    quiet: Annotated[
        float, typer.Option("--quiet", help="The service's rebuild quiet period (s).")
    ] = 0.5,
    as_json: JsonFlag = False,
) -> None:
    """Latency from trace completion (the session's last span acknowledged) to its scores
    stored, through a real `skillsight serve`, p50/p95 over SESSIONS sessions (target <= 2 s).

    Example: skillsight bench eval-latency --sessions 20
    """
    from benchmarks.eval_latency import run_eval_latency_bench

    try:
        report = run_eval_latency_bench(sessions=sessions, quiet_s=quiet, console=console)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("scorecard")
def bench_scorecard(
    activations: Annotated[
        int, typer.Option("--activations", help="Synthetic activations in the store.")
    ] = 10_000_000,
    skills: Annotated[int, typer.Option("--skills", help="Skills, with Zipf-like shares.")] = 50,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Folder of the synthetic store (default: a temporary folder).",
            show_default=False,
        ),
    ] = None,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep",
            help="Keep the store after the run and reuse it when it holds the same dataset.",
        ),
    ] = False,
    repeat: Annotated[int, typer.Option("--repeat", help="Warm runs per query.")] = 7,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Also compare the read models' scorecards and gate rows with the raw rows', "
            "before and after rescoring (writes the rescores into the store).",
        ),
    ] = False,
    sustain: Annotated[
        float,
        typer.Option(
            "--sustain",
            help="Seconds of steady traffic (the newest hour marked again and again) to time "
            "the refresher's passes over, without and with the service's hold (time-scaled: "
            "passes every second, a 12 s hold); 0 skips it.",
        ),
    ] = 48.0,
    as_json: JsonFlag = False,
) -> None:
    """Time skill scorecards (popular and typical skill; 7d, 30d, all) and the gate's read over
    a synthetic embedded store generated inside ClickHouse (target < 200 ms at 10 million).

    Example: skillsight bench scorecard --activations 10000000 --data /tmp/scorecards --keep
    """
    from benchmarks.scorecard import run_scorecard_bench

    try:
        report = run_scorecard_bench(
            activations=activations,
            skills=skills,
            data=data,
            keep=keep,
            repeat=repeat,
            verify=verify,
            sustain_s=sustain,
            console=console,
        )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("judges")
def bench_judges(
    activations: Annotated[
        int, typer.Option("--activations", help="Distinct activations judged.")
    ] = 200,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Judge calls in flight.")] = 8,
    rubric: Annotated[str, typer.Option("--rubric", help="Rubric judged.")] = "internal_trajectory",
    as_json: JsonFlag = False,
) -> None:
    """Measure judge throughput against the scripted OpenAI-compatible server on 127.0.0.1
    at a concurrency, and what judging adds per activation beyond the model's own answer.

    Example: skillsight bench judges --activations 200 --concurrency 8
    """
    from benchmarks.judges import run_judges_bench

    try:
        report = run_judges_bench(
            activations=activations, concurrency=concurrency, rubric=rubric, console=console
        )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("reruns")
def bench_reruns(
    pairs: Annotated[
        int, typer.Option("--pairs", help="Paired runs played for the overhead (0: skip).")
    ] = 10,
    cases: Annotated[
        int, typer.Option("--cases", help="Cases of the synthetic report (0: skip).")
    ] = 1000,
    attempts: Annotated[int, typer.Option("--attempts", help="Attempts per condition.")] = 3,
    as_json: JsonFlag = False,
) -> None:
    """Measure what a paired rerun adds beside its agents (a minimal agent that exports its own
    OTLP, one attempt at a time) and the report time for 1,000 cases x 2 conditions x 3 attempts.

    Example: skillsight bench reruns --pairs 10 --cases 1000
    """
    from benchmarks.reruns import run_reruns_bench

    try:
        report = run_reruns_bench(pairs, cases, attempts, console)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("clustering")
def bench_clustering(
    sizes: Annotated[
        str, typer.Option("--sizes", help="Failures per full run, comma-separated (empty: skip).")
    ] = "10000,100000",
    list_activations: Annotated[
        int,
        typer.Option("--list-activations", help="Activations under the cluster list (0: skip)."),
    ] = 10_000_000,
    embed: Annotated[
        int, typer.Option("--embed", help="Distinct texts for embeddings/s (0: skip).")
    ] = 2000,
    pca: Annotated[
        str,
        typer.Option("--pca", help="PCA dimensions compared at the smallest size (0 = none)."),
    ] = "0,16,32,64",
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Folder of the 10M-activation store, kept and reused (default: a temporary "
            "folder, kept too).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Measure failure clustering: embeddings per second per core, full runs at 10k and 100k
    failures, online assignment per failure, and the cluster list over 10M activations.

    Example: python -m benchmarks clustering --sizes 10000 --list-activations 1000000
    """
    from benchmarks.clustering import run_clustering_bench

    try:
        report = run_clustering_bench(
            sizes=[int(n) for n in sizes.split(",") if n.strip()],
            list_activations=list_activations,
            embed_texts_count=embed,
            pca=tuple(int(n) for n in pca.split(",") if n.strip()),
            data=data,
            console=console,
        )
    except (SkillsightError, ValueError) as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("ui")
def bench_ui(
    activations: Annotated[
        int, typer.Option("--activations", help="Activations in the generated store.")
    ] = 10_000_000,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Folder of the generated store, kept and reused (default: the cluster-list "
            "bench's temporary folder).",
            show_default=False,
        ),
    ] = None,
    repeat: Annotated[int, typer.Option("--repeat", help="Timed fetches per page.")] = 10,
    as_json: JsonFlag = False,
) -> None:
    """Measure the web UI's pages (clusters, a cluster, skills, the skill page of the busiest
    and a typical skill for 7 days, 30 days and all time) over a generated store, through the
    real app; target: under 1 s each.

    Example: python -m benchmarks ui --activations 1000000
    """
    from benchmarks.ui import ui_bench

    report = ui_bench(activations, data, console, repeat=repeat)
    if as_json:
        print(json.dumps(report, indent=2, default=str))


@app.command("scale-out")
def bench_scale_out(
    sessions: Annotated[int, typer.Option("--sessions", help="Sessions per run.")] = 3000,
    workers: Annotated[
        str, typer.Option("--workers", help="Worker counts to run, comma-separated.")
    ] = "1,2,3",
    clickhouse: Annotated[
        str | None,
        typer.Option(
            "--clickhouse",
            help="A ClickHouse server to use (a database per run); default: the test suite's "
            "chdb-backed HTTP endpoint.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Measure activations evaluated per second with 1, 2 and 3 worker processes
    (`serve --role worker`) on the same store, and spans per collector CPU-second.

    Example: python -m benchmarks scale-out --sessions 3000 --workers 1,2,3
    """
    from benchmarks.scale_out import run_scale_out_bench

    try:
        counts = tuple(int(n) for n in workers.split(","))
        report = run_scale_out_bench(
            sessions=sessions, worker_counts=counts, clickhouse=clickhouse, console=console
        )
    except (SkillsightError, ValueError) as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@app.command("compare", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench_compare(
    ctx: typer.Context,
    base: Annotated[
        str, typer.Option("--base", help="The git revision to compare this checkout with.")
    ] = "HEAD",
    runs: Annotated[int, typer.Option("--runs", help="Runs of the bench in each tree.")] = 2,
    warmup: Annotated[
        int,
        typer.Option("--warmup", help="Runs in each tree first whose figures are dropped."),
    ] = 1,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="Report only the figures whose name holds this text (repeatable).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run one bench command in a worktree of a base revision and in this checkout (its
    uncommitted changes included), alternated, each run a fresh process; report every figure's
    medians, their ratio (this checkout over the base) and the range of the paired ratios.
    The bench's own options follow `--`.

    Example: skillsight bench compare --base HEAD~1 --runs 2 --only per_cpu -- rebuild --history 0
    """
    from benchmarks.compare import compare

    try:
        commit, found = compare(base, list(ctx.args), runs=runs, warmup=warmup)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    if only:
        found = [f for f in found if any(text in f.name for text in only)]
    table = Table(title=f"{' '.join(ctx.args)}: this checkout against {commit[:12]}, {runs} runs")
    table.add_column("figure", overflow="fold")
    for column in ("base (median)", "this (median)", "ratio", "paired ratios"):
        table.add_column(column, justify="right")
    for figure in found:
        paired = figure.paired
        table.add_row(
            figure.name,
            f"{statistics.median(figure.base):,.4g}",
            f"{statistics.median(figure.head):,.4g}",
            f"{figure.ratio:.3f}" if figure.ratio is not None else "-",
            f"{paired[0]:.3f} to {paired[1]:.3f}" if paired is not None else "-",
        )
    console.print(table)
    if as_json:
        report = {
            "base": commit,
            "command": list(ctx.args),
            "runs": runs,
            "figures": {f.name: {"base": f.base, "head": f.head, "ratio": f.ratio} for f in found},
        }
        print(json.dumps(report, indent=2))
