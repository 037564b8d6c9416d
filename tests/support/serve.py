"""``skillsight serve`` as a real child process, on ports the OS picks, for end-to-end tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx


@dataclass
class RunningServer:
    api: str
    otlp_http: str
    otlp_grpc: str
    proc: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(self.api + path, params=params, headers=self.headers, timeout=30)
        response.raise_for_status()
        return response.json()

    def spans(self, **params: Any) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.get("/api/v1/spans", **params)
        return result

    def events(self, **params: Any) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.get("/api/v1/events", **params)
        return result

    def wait_written(self, spans: int = 0, events: int = 0, timeout: float = 30.0) -> None:
        """Block until the writer has committed at least this many rows (polls /healthz)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            health = self.get("/healthz")
            if (
                health["written_spans"] >= spans
                and health["written_events"] >= events
                and health["queue_rows"] == 0
            ):
                return
            time.sleep(0.05)
        raise AssertionError(f"rows not written within {timeout}s: {self.get('/healthz')}")


@contextmanager
def running_server(
    data_dir: Path, env: Mapping[str, str] | None = None, args: tuple[str, ...] = ()
) -> Iterator[RunningServer]:
    """Start ``skillsight serve`` and stop it with SIGTERM (a graceful drain) afterwards.

    Online evaluation is off unless ``env`` turns it on (``SKILLSIGHT_EVAL_ENABLED``): scoring
    loads the embedding model, seconds of CPU that tests about ingest need not pay.
    """
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skillsight.cli",
            "serve",
            "--data",
            str(data_dir),
            "--port",
            "0",
            "--otlp-http-port",
            "0",
            "--otlp-grpc-port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "SKILLSIGHT_EVAL_ENABLED": "false", **(env or {})},
    )
    assert proc.stdout is not None
    output: list[str] = []
    endpoints: dict[str, str] = {}
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        output.append(line)
        if line.startswith("SKILLSIGHT_READY "):
            endpoints = json.loads(line.split(" ", 1)[1])
            break
        if time.monotonic() > deadline:
            break
    if not endpoints:
        proc.kill()
        raise RuntimeError("skillsight serve did not start:\n" + "".join(output))

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    server = RunningServer(proc=proc, output=output, **endpoints)
    try:
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(5)
        if proc.stdout is not None:
            proc.stdout.close()
