"""``make demo``: serve on the embedded store and play a real Claude Code session into it.

Starts ``skillsight serve`` (data in ``.skillsight/demo``), runs the demo session — the real
Claude Code CLI with a scripted model, using the project skill ``csv-summary`` and its script —
exporting its native traces and log events over OTLP, then shows what the collector stored and
the skill activation the service rebuilt from it, and keeps serving until Ctrl-C (``--once``
stops right after, for scripts).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from demo import replay
from demo.workload import create_demo_project, run_demo
from skillsight.cli.views import print_activation, print_evaluations
from skillsight.store.records import Activation

console = Console()


def _start_server(
    data: Path, ports: Sequence[str], skills: Sequence[Path]
) -> tuple[subprocess.Popen[str], dict[str, str]]:
    command = [
        sys.executable,
        "-m",
        "skillsight.cli",
        "serve",
        "--data",
        str(data),
        *(arg for folder in skills for arg in ("--skills", str(folder))),
        *ports,
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("SKILLSIGHT_READY "):
            return proc, json.loads(line.split(" ", 1)[1])
        sys.stdout.write(line)
    proc.wait()
    raise SystemExit("skillsight serve did not start (see above)")


def _wait_for(api: str, session_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    spans: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        spans = httpx.get(f"{api}/api/v1/spans", params={"session_id": session_id}).json()
        events = httpx.get(f"{api}/api/v1/events", params={"session_id": session_id}).json()
        if any(e["event_name"] == "claude_code.skill_activated" for e in events) and any(
            s["tool_name"] == "Bash" for s in spans
        ):
            break
        time.sleep(0.25)
    return spans, events


def _show(spans: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    table = Table(title="spans of the demo session", box=None, header_style="bold")
    for column in ("name", "operation", "tool", "skill", "input", "ms"):
        table.add_column(column, overflow="fold")
    for span in spans:
        table.add_row(
            span["name"],
            span["operation"],
            span["tool_name"],
            span["skill_name"],
            span["input"][:60],
            f"{span['duration_ms']:.0f}",
        )
    console.print(table)
    wanted = ("claude_code.skill_activated", "claude_code.tool_result", "claude_code.api_request")
    events_table = Table(title="log events (a selection)", box=None, header_style="bold")
    for column in ("event", "tool", "skill", "tokens in/out", "cost $"):
        events_table.add_column(column)
    for event in events:
        if event["event_name"] in wanted:
            tokens = event["tokens"]
            events_table.add_row(
                event["event_name"],
                event["tool_name"],
                event["skill_name"],
                f"{tokens['input']}/{tokens['output']}",
                f"{event['cost_usd']:.4f}" if event["cost_usd"] else "",
            )
    console.print(events_table)


def _show_activations(api: str, session_id: str, ended: float) -> int:
    """Wait for the service to rebuild the session's activations by itself, then show them."""

    def listed() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = httpx.get(
            f"{api}/api/v1/activations", params={"session_id": session_id}
        ).json()
        return found

    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # caught up: every row sent is committed and rebuilt, so what is read next is the final
        # rebuild (read first, it may be an earlier one that a rebuild replaced in between)
        if httpx.get(f"{api}/healthz").json()["caught_up"]:
            found = listed()
            if found:
                break
        time.sleep(0.1)
    else:  # not caught up in time (a busy machine): show what is there now
        found = listed()
    if not found:
        console.print("[red]no skill activation was rebuilt from the session[/]")
        return 0
    console.print(
        f"\n[bold]the skill activation, rebuilt by the service[/] "
        f"({time.monotonic() - ended:.1f} s after the session ended)\n"
    )
    for record in found:
        print_activation(console, Activation.model_validate(record))
        _show_evaluations(api, record["activation_id"])
    return len(found)


def show_sources(api: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Print, per telemetry source, what its sessions arrived without (``/healthz``
    ``rebuild.sources``): tool output, tool inputs, prompts, a working directory, request ids.
    Returns the sources as the service reported them."""
    health = httpx.get(f"{api}/healthz", headers=headers or {}, timeout=30).json()
    sources: dict[str, Any] = (health.get("rebuild") or {}).get("sources") or {}
    console.print("\n[bold]what the telemetry carried[/] (per source, /healthz rebuild.sources)")
    for name, seen in sources.items():
        advice = seen.get("advice") or []
        verdict = "everything the evaluators read" if not advice else "gaps:"
        console.print(f"  {name}: {seen['sessions']} sessions, {verdict}")
        for line in advice:
            console.print(f"    [yellow]{line}[/]")
    return sources


def _show_evaluations(api: str, activation_id: str) -> None:
    """Wait for the service's evaluation scheduler to score the activation's current rebuild,
    then show the scores.

    The first score waits for the embedding model (skill_selection) to load at start-up."""
    deadline = time.monotonic() + 90
    scored: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        record = httpx.get(f"{api}/api/v1/activations/{activation_id}").json()
        scored = list(record.get("evaluations") or [])
        if scored and not any(e["stale"] for e in scored):
            break
        time.sleep(0.2)
    console.print()
    print_evaluations(console, scored)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__)
    parser.add_argument("--data", type=Path, default=Path(".skillsight/demo"))
    parser.add_argument("--once", action="store_true", help="stop after the session")
    parser.add_argument(
        "--any-ports", action="store_true", help="let the OS pick ports instead of 8000/4318/4317"
    )
    args = parser.parse_args(argv)
    ports = (
        ["--port", "0", "--otlp-http-port", "0", "--otlp-grpc-port", "0"] if args.any_ports else []
    )
    # The project is written first so the service can put its skill in the catalogue at
    # start-up (--skills), as a team points it at its skills repository.
    workdir = Path(tempfile.mkdtemp(prefix="skillsight-demo-"))
    project = create_demo_project(workdir / "project")
    # the recorded failing scenarios' skills too: their sessions are replayed after the live one
    # so that the web UI has failure clusters to show (demo/replay.py)
    recorded = [replay.write_skills(name) for name in (*replay.FAILING, *replay.CLEAN)]
    proc, endpoints = _start_server(args.data, ports, [project.skill_dir.parent, *recorded])
    try:
        console.print(
            f"[bold green]skillsight is serving[/] at {endpoints['api']} "
            f"(OTLP/HTTP {endpoints['otlp_http']}, OTLP/gRPC {endpoints['otlp_grpc']})"
        )
        console.print(
            "playing a real Claude Code session (scripted model) that uses the "
            "[bold]csv-summary[/] skill…"
        )
        result = run_demo(endpoints["otlp_http"], "http/protobuf", workdir=workdir)
        ended = time.monotonic()
        if not result.session_id:
            console.print("[red]the demo session did not run[/]")
            return 1
        console.print(f"session {result.session_id}: {result.result_text!r}")
        spans, events = _wait_for(endpoints["api"], result.session_id)
        _show(spans, events)
        activations = _show_activations(endpoints["api"], result.session_id, ended)
        console.print(
            "\nreplaying recorded Claude Code sessions (clean and failing, demo/replay.py) so "
            "that failures cluster…"
        )
        summary = replay.play_failures(
            endpoints["api"], endpoints["otlp_http"], already_scored=activations
        )
        console.print(f"clustered: {summary.get('clusters', '?')} failure clusters")
        show_sources(endpoints["api"])
        console.print(
            "\nLook around:\n"
            f"  {endpoints['api']}/docs                      the REST API\n"
            f"  {endpoints['api']}/api/v1/spans?session_id={result.session_id}\n"
            f"  {endpoints['api']}/api/v1/activations?session_id={result.session_id}\n"
            f"  {endpoints['api']}/api/v1/trajectories/{result.session_id}   (ATIF)\n"
            f"  .venv/bin/skillsight spans --api {endpoints['api']}\n"
            f"  .venv/bin/skillsight activations list --api {endpoints['api']}\n"
            "Point any agent at it: OTEL_EXPORTER_OTLP_ENDPOINT="
            f"{endpoints['otlp_http']} (Claude Code: see README)."
        )
        if not args.once:
            console.print("[dim]Ctrl-C stops the service.[/]")
        # the last line: where to look
        console.print(
            f"\n[bold green]open {endpoints['api']}/[/]   the web UI: failure clusters, "
            "skills, activation timelines",
            highlight=False,
        )
        if args.once:
            return 0 if spans and events and activations else 1
        proc.wait()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
