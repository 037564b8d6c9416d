"""``skillsight rerun``: replay a golden set with and without the skill, report Skill Lift."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillsight.cli._common import (
    ClickhouseOpt,
    DataOpt,
    ProjectOpt,
    app,
    err,
    fail,
    load_settings,
    opened_store,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError

if TYPE_CHECKING:
    from skillsight.reruns import RerunReport
    from skillsight.store import Store


def _out(flag: str, what: str) -> Any:
    return typer.Option(flag, help=f"{what} to FILE ('-' = stdout).", show_default=False)


JsonOut = Annotated[Path | None, _out("--json", "The report as JSON")]
MarkdownOut = Annotated[Path | None, _out("--markdown", "The report as Markdown")]
HtmlOut = Annotated[Path | None, _out("--html", "The report as an HTML page with plots")]
BenchmarkOut = Annotated[Path | None, _out("--benchmark-json", "skill-creator's benchmark.json")]


def _skill_folder(store: Store, project: str, skill: str) -> Path:
    """SKILL as a folder, else by name from here (Claude Code's skill folders), else from the
    project's catalogue."""
    from skillsight.skills import find_skill_dir

    given = Path(skill)
    if (given / "SKILL.md").is_file():
        return given
    found = find_skill_dir(skill, cwd=Path.cwd())
    if found is not None:
        return found
    entry = store.skills.contracts(project).get(skill)
    uri = str(entry.get("source_uri") or "") if entry else ""
    path = Path(uri.removeprefix("file://"))
    folder = path.parent if path.name == "SKILL.md" else path
    if uri and (folder / "SKILL.md").is_file():
        return folder
    raise fail(f"no skill folder for {skill!r}: pass the folder (with its SKILL.md)", 2)


def _write(target: Path, text: str) -> None:
    if str(target) == "-":
        sys.stdout.write(text)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {target}: {exc}") from exc
    err.print(f"wrote {target}", highlight=False)


def _progress(done: int, total: int, row: Mapping[str, Any]) -> None:
    overall = row.get("overall")
    shown = "—" if overall is None else f"{overall:.3f}"
    err.print(
        f"[{done}/{total}] {row['case_id']} {row['condition']} #{row['attempt']}: "
        f"{row['status']}, overall {shown}",
        highlight=False,
    )


def _outputs(report: RerunReport, outputs: Mapping[str, Path | None]) -> None:
    from skillsight.reruns import benchmark_json, render_html, render_markdown

    renderers = {
        "json": lambda: report.model_dump_json(indent=2) + "\n",
        "markdown": lambda: render_markdown(report),
        "html": lambda: render_html(report),
        "benchmark": lambda: json.dumps(benchmark_json(report), indent=2) + "\n",
    }
    chosen = {k: v for k, v in outputs.items() if v is not None}
    for kind, target in (chosen or {"markdown": Path("-")}).items():
        _write(target, renderers[kind]())


@app.command()
def rerun(
    skill: Annotated[str, typer.Argument(help="The skill: its folder, or its name.")],
    set_id: Annotated[
        str, typer.Option("--set", help="Golden set id (default: the skill's newest set).")
    ] = "",
    attempts: Annotated[int, typer.Option("--attempts", help="Attempts per condition (K).")] = 3,
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="'claude' (the Claude Code CLI), or a command with {prompt}, {prompt_file}, "
            "{workspace} (docs/golden-sets.md, the agent contract).",
        ),
    ] = "claude",
    sdk: Annotated[
        bool, typer.Option("--sdk", help="The Claude Agent SDK under skillsight's instrumentor.")
    ] = False,
    fail_under: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-under",
            help="METRIC=VALUE: exit 1 when under (lift, lift.<metric>, ci_low, pass@K, "
            "utility, security_score, …); repeatable.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOut = None,
    markdown: MarkdownOut = None,
    html: HtmlOut = None,
    benchmark: BenchmarkOut = None,
    files: Annotated[
        Path | None,
        typer.Option(
            "--files", help="Folder the cases' fixture paths are relative to.", show_default=False
        ),
    ] = None,
    keep: Annotated[
        list[Path] | None,
        typer.Option(
            "--keep-skill",
            help="A support or decoy skill kept in both conditions.",
            show_default=False,
        ),
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="isolation, or group (every skill beside it stays).")
    ] = "isolation",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Runs at once.")] = 2,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds per run (default: the set's timeout_sec, 300).",
            show_default=False,
        ),
    ] = None,
    telemetry_wait: Annotated[
        float, typer.Option("--telemetry-wait", help="Seconds to wait for a run's telemetry.")
    ] = 60.0,
    run_id: Annotated[
        str, typer.Option("--run-id", help="Resume this run (or name a new one).")
    ] = "",
    harbor_results: Annotated[
        Path | None,
        typer.Option(
            "--harbor-results",
            help="Score a Harbor job run on the set's exported tasks instead of running agents.",
            show_default=False,
        ),
    ] = None,
    workdir: Annotated[
        Path, typer.Option("--workdir", help="Where the runs' workspaces are made.")
    ] = Path(".skillsight/reruns"),
    seed: Annotated[
        int | None, typer.Option("--seed", help="Bootstrap seed.", show_default=False)
    ] = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Replay a golden set in fresh workspaces with the skill and without it, K attempts each;
    score both sides with the same evaluators and judges; report Skill Lift with a normal and a
    bootstrap 95% interval, pass@k, utility, cost and flips. Exit 1 under a --fail-under
    threshold, 2 when a threshold cannot be judged.

    Example: skillsight rerun .claude/skills/csv-summary --attempts 3 --fail-under lift=0.0
    """
    from skillsight.goldens import load_set, newest_set_of
    from skillsight.reruns import (
        DEFAULT_SEED,
        RerunOptions,
        exit_code,
        import_harbor_run,
        judge,
        parse_agent,
        parse_thresholds,
        sdk_agent,
    )
    from skillsight.reruns import (
        rerun as play,
    )

    try:
        thresholds = parse_thresholds(fail_under or [])
        command = sdk_agent() if sdk else parse_agent(agent)
        settings = load_settings(data=data, clickhouse=clickhouse)
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    try:
        with opened_store(data, clickhouse, code=2) as store:
            folder = _skill_folder(store, project, skill)
            from skillsight.skills import load_skill

            name = load_skill(folder).name
            golden = (
                load_set(store, project, set_id) if set_id else newest_set_of(store, project, name)
            )
            if golden is None:
                raise fail(f"{name} has no golden set: golden promote or golden import first", 2)
            options = RerunOptions(
                attempts=attempts,
                concurrency=concurrency,
                timeout_s=timeout or float(golden.defaults.get("timeout_sec", 300)),
                telemetry_wait_s=telemetry_wait,
                mode=mode,
                seed=DEFAULT_SEED if seed is None else seed,
            )
            if harbor_results is not None:
                report = import_harbor_run(
                    settings, store, golden, harbor_results, skill_dir=folder,
                    project_id=project, run_id=run_id,
                )  # fmt: skip
            else:
                report = asyncio.run(
                    play(
                        settings, store, golden, skill_dir=folder, agent=command,
                        project_id=project, workdir=workdir.resolve(), others=keep or [],
                        files_root=files.resolve() if files else None, options=options,
                        run_id=run_id, progress=_progress,
                    )
                )  # fmt: skip
    except SkillsightError as exc:
        raise fail(str(exc), 2) from exc
    _outputs(report, {"json": as_json, "markdown": markdown, "html": html, "benchmark": benchmark})
    verdicts = judge(report, thresholds)
    for verdict in verdicts:
        state = {True: "ok", False: "FAIL", None: "not applicable"}[verdict.ok]
        err.print(f"{verdict.name} >= {verdict.minimum:g}: {state} ({verdict.reason})",
                  highlight=False)  # fmt: skip
    code = exit_code(verdicts)
    if code:
        raise typer.Exit(code)
