"""``skillsight bench instructions``: instructions per activation, counted by callgrind.

The CPU-time benches are at the mercy of the machine: a shared VM drifts by a third within
minutes, so a change worth a few percent cannot be told from noise, even alternated. This counts
machine instructions instead, which are the same from run to run for the same code and inputs,
whatever else the machine does. Two workloads, each in a child process under ``valgrind
--tool=callgrind`` that counts only what runs inside ``operator.call(...)`` (``--toggle-collect``
on the interpreter's ``_operator_call``), so that start-up, imports, loading the inputs and a
warm-up run are left out:

- ``rebuild``: skillsight's rebuild algorithm (ATIF trajectory and activations) over
  ``sessions`` sessions of ``steps`` steps, read from an embedded store beforehand as the
  finalizer reads them (the read and the write are ClickHouse's, not the algorithm's);
- ``evaluators``: the six cheap evaluators as the scheduler runs them, over the synthetic
  activations of ``bench eval``, with a service process's collector thresholds.

The children run with a fixed hash seed (``PYTHONHASHSEED=0``): with string hashes random,
sets and dicts iterate in another order in each process. A count repeats to within 0.01% in one
folder; the same code in another folder (``bench compare``'s worktree) counts up to ~0.4% apart,
since the memory layout moves the interpreter's method cache and dict probes. An instruction
is not a fixed share of a second (a cache miss costs more than an add), so this complements the
CPU-time figures: it says whether a change does less work, and ``bench compare --only
instructions`` gives the ratio.
"""

from __future__ import annotations

import gc
import json
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from skillsight.errors import SkillsightError

_ROOT = Path(__file__).resolve().parent.parent
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")
_TIMEOUT_S = 3600


class InstructionsError(SkillsightError):
    """The instructions could not be counted (no valgrind, or a child failed)."""


def run_instructions_bench(
    *, sessions: int = 50, steps: int = 20, activations: int = 1000
) -> dict[str, Any]:
    """Instructions per activation of the rebuild algorithm (``sessions`` sessions of ``steps``
    steps; 0 skips it) and of the six cheap evaluators (``activations``; 0 skips it)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise InstructionsError(
            "valgrind is not installed: it counts the instructions (Debian: apt install valgrind)"
        )
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-instructions-") as tmp:
        if sessions > 0:
            rows = Path(tmp) / "rows.json"
            _save_rows(rows, sessions, steps, Path(tmp) / "store")
            report["rebuild"] = {
                "sessions": sessions,
                "steps": steps,
                **_counted(valgrind, ["rebuild", str(rows)]),
            }
        if activations > 0:
            report["evaluators"] = _counted(valgrind, ["evaluators", str(activations)])
    return report


def _save_rows(path: Path, sessions: int, steps: int, folder: Path) -> None:
    """The rows of ``sessions`` synthetic sessions, as the store returns them, to ``path``."""
    from benchmarks.rebuild import insert_sessions
    from skillsight.store import EmbeddedStore

    store = EmbeddedStore(folder)
    try:
        store.migrate()
        keys = insert_sessions(store, "bench", steps, 5, list(range(100, 100 + sessions)))
        rows = store.sessions.rows_of("bench", keys)
    finally:
        store.close()
    path.write_bytes(orjson.dumps({"keys": keys, "rows": [rows[key] for key in keys]}))


def _counted(valgrind: str, args: list[str]) -> dict[str, Any]:
    """The child's report (the JSON it printed: its ``activations`` and more) with the
    instructions callgrind counted inside its ``operator.call``, in all and per activation."""
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [
        valgrind,
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        "--collect-atstart=no",
        "--toggle-collect=_operator_call",
        sys.executable,
        "-m",
        "benchmarks.instructions",
        *args,
    ]
    try:
        done = subprocess.run(
            command, cwd=_ROOT, env=env, capture_output=True, text=True, timeout=_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise InstructionsError(f"the {args[0]} count ran past {_TIMEOUT_S} s") from exc
    found = _COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise InstructionsError(
            f"the {args[0]} count failed (exit {done.returncode}): {done.stderr[-2000:]}"
        )
    count = int(found[-1])
    if count == 0:
        raise InstructionsError(
            "callgrind counted nothing inside operator.call: this interpreter has no "
            "_operator_call symbol to toggle on (a stripped build?)"
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise InstructionsError(f"the {args[0]} child printed no report: {done.stdout[-500:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    report["instructions"] = count
    report["instructions_per_activation"] = round(count / max(1, report["activations"]))
    return report


# -- the children ------------------------------------------------------------------------------


def _settled() -> None:
    """Every object made so far collected or frozen out of the collector, its counts at zero:
    a collection during the counted run then depends on the run alone. Without it, how much the
    imports left in each generation (more or less with the tree's path) decides when the older
    generations are collected and how much they walk: the same code counted 1.6% apart in two
    folders."""
    gc.collect()
    gc.freeze()


def _rebuild_child(rows_file: Path) -> dict[str, Any]:
    from skillsight.rebuild.finalizer import default_rebuild, gc_paused

    saved = orjson.loads(rows_file.read_bytes())
    sessions = [
        (key, spans, events)
        for key, (spans, events) in zip(saved["keys"], saved["rows"], strict=True)
    ]
    rebuild = default_rebuild()

    def run() -> int:
        with gc_paused():  # as the finalizer's pass runs it
            built = [
                rebuild(spans, events, project_id="bench", session_id=key)
                for key, spans, events in sessions
            ]
        return sum(len(b.activations) for b in built)

    run()  # imports, caches and the first call's set-up: not counted
    _settled()
    activations = operator.call(run)
    return {"activations": activations}


def _evaluators_child(count: int) -> dict[str, Any]:
    from benchmarks.eval import CHEAP, synthetic_workload
    from skillsight.config import Settings
    from skillsight.evaluators import deterministic_registry, run_evaluators

    found, context = synthetic_workload(count, rows=3)
    registry = deterministic_registry()
    run_evaluators(found[:200], context, registry=registry, names=CHEAP)  # warm caches, imports
    _settled()  # the corpus is input, not what a scheduler holds (as ``bench eval``)
    young = Settings.load().gc_young_threshold
    if young > 0:
        gc.set_threshold(young, *gc.get_threshold()[1:])
    operator.call(lambda: run_evaluators(found, context, registry=registry, names=CHEAP))
    return {"activations": len(found), "evaluators": len(CHEAP)}


def main(argv: list[str]) -> int:
    """A child: ``rebuild ROWS_FILE`` or ``evaluators COUNT``; prints its report as JSON."""
    if len(argv) != 2 or argv[0] not in ("rebuild", "evaluators"):
        print("usage: python -m benchmarks.instructions rebuild FILE | evaluators COUNT")
        return 2
    what, arg = argv
    report = _rebuild_child(Path(arg)) if what == "rebuild" else _evaluators_child(int(arg))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
