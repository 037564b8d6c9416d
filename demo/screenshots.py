"""``python -m demo.screenshots``: the README's pictures of the web UI, regenerated.

Starts ``skillsight serve`` on a fresh folder, replays recorded Claude Code sessions into it
(``demo.replay``: the failing scenarios as several fresh sessions each, spread over the last two
days, and the clean ones), waits until they are scored, clusters the failures, and photographs
the clusters page and the timeline of a failing activation in Debian's chromium at 1366x768:
``docs/ui-clusters.png`` and ``docs/ui-activation.png``.
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
from collections.abc import Sequence
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

from demo import replay

DOCS = Path(__file__).resolve().parents[1] / "docs"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
REPEATS = 6


def _serve(data: Path) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable, "-m", "skillsight.cli", "serve", "--data", str(data),
        "--port", "0", "--otlp-http-port", "0", "--otlp-grpc-port", "0",
    ]  # fmt: skip
    env = {
        **os.environ,
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_CLUSTER_INTERVAL_S": "0",
        "SKILLSIGHT_API_KEYS": "",
    }
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("SKILLSIGHT_READY "):
            endpoints: dict[str, str] = json.loads(line.split(" ", 1)[1])
            return proc, json.dumps(endpoints)
    proc.wait()
    raise SystemExit("skillsight serve did not start")


def _photograph(api: str, out: Path) -> list[Path]:
    activations = httpx.get(f"{api}/api/v1/activations", params={"limit": 200}).json()
    failing = next(
        a
        for a in activations
        if any(e["evaluator"] == "allowed_tools" and e["passed"] is False for e in a["evaluations"])
    )
    shots = [
        ("/", out / "ui-clusters.png", False),
        (f"/activations/{failing['activation_id']}", out / "ui-activation.png", True),
    ]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        for path, target, full in shots:
            page.goto(api + path)
            page.screenshot(path=str(target), full_page=full)
        browser.close()
    return [target for _, target, _ in shots]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNG files")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="skillsight-screenshots-"))
    data = work / "data"
    for name in (*replay.FAILING, *replay.CLEAN):
        replay.scan_into_store(replay.write_skills(name), data)
    proc, endpoints = _serve(data)
    try:
        urls = json.loads(endpoints)
        replay.play_failures(urls["api"], urls["otlp_http"], repeats=REPEATS)
        for path in _photograph(urls["api"], args.out):
            print(f"wrote {path}")
        return 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
