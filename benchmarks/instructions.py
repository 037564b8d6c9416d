"""``skillsight bench instructions``: instructions per unit of work, counted by callgrind.

The CPU-time benches are at the mercy of the machine: a shared VM drifts by a third within
minutes, so a change worth a few percent cannot be told from noise, even alternated. This counts
machine instructions instead, which are the same from run to run for the same code and inputs,
whatever else the machine does. Three workloads, the Python hot paths of the pipeline, run in
one child process under ``valgrind --tool=callgrind``. It counts only what runs inside
``operator.call(...)`` (``--toggle-collect`` on the interpreter's ``_operator_call``) and dumps
the count after each call (``--dump-after``), so start-up, imports, loading the inputs and each
workload's warm-up run are left out, and each workload gets its own count:

- ``rebuild``: skillsight's rebuild algorithm (ATIF trajectory and activations) over
  ``sessions`` sessions of ``steps`` steps, read from an embedded store beforehand as the
  finalizer reads them (the read and the write are ClickHouse's, not the algorithm's); per
  activation;
- ``evaluators``: the six cheap evaluators as the scheduler runs them, over the synthetic
  activations of ``bench eval``; per activation;
- ``ingest``: what the collector's Python does with each OTLP/protobuf trace request of
  ``bench ingest``'s kind: the fast path's screen and the Python decoder's rows (the requests
  the fast path hands back go through both); per span.

The child applies a service process's collector threshold (``settle_heap``'s) and runs with a
fixed hash seed (``PYTHONHASHSEED=0``: with string hashes random, sets and dicts iterate in
another order in each process), only the environment variables that decide what it runs, and
its input files named relative to its folder. A count repeats to within 1e-6 in one folder; the
same code in another folder (``bench compare``'s worktree), or after an edit that changes no
code path, counts up to ~0.5% apart, since the memory layout moves the interpreter's method
cache and dict probes (and the rebuild hashes its rows by identity). An instruction is not a
fixed share of a second (a cache miss costs more than an add), so this complements the CPU-time
figures: it says whether a change does less work, and ``bench compare --only instructions``
gives the ratio.
"""

from __future__ import annotations

import compileall
import gc
import json
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from skillsight.errors import SkillsightError

_ROOT = Path(__file__).resolve().parent.parent
_TIMEOUT_S = 3600


class InstructionsError(SkillsightError):
    """The instructions could not be counted (no valgrind, or a child failed)."""


WORKLOADS = ("rebuild", "evaluators", "ingest")
_UNIT = {"rebuild": "activation", "evaluators": "activation", "ingest": "span"}
_KEPT_ENV = frozenset({"PATH", "HOME", "LANG", "LC_ALL", "VIRTUAL_ENV", "HF_HUB_OFFLINE"})
_TOTALS = re.compile(r"^totals:\s*(\d+)", re.MULTILINE)


def per_unit(part: dict[str, Any]) -> tuple[str, int]:
    """A workload's unit and its instructions per unit (``instructions_per_activation`` …)."""
    for key, value in part.items():
        if key.startswith("instructions_per_"):
            return key.removeprefix("instructions_per_"), int(value)
    raise KeyError("no instructions_per_ figure in the workload's report")


def run_instructions_bench(
    *, sessions: int = 50, steps: int = 20, activations: int = 1000, spans: int = 10_000
) -> dict[str, Any]:
    """Instructions per activation of the rebuild algorithm (``sessions`` sessions of ``steps``
    steps) and of the six cheap evaluators (``activations``), and per span of the collector's
    decoding (``spans``); a size of 0 skips its workload."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise InstructionsError(
            "valgrind is not installed: it counts the instructions (Debian: apt install valgrind)"
        )
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-instructions-") as tmp:
        plan: dict[str, Any] = {}
        if sessions > 0:
            rows = Path(tmp) / "rows.json"
            _save_rows(rows, sessions, steps, Path(tmp) / "store")
            plan["rebuild"] = {"rows": rows.name, "sessions": sessions, "steps": steps}
        if activations > 0:
            plan["evaluators"] = {"activations": activations}
        if spans > 0:
            bodies = Path(tmp) / "bodies.bin"
            _save_bodies(bodies, spans)
            plan["ingest"] = {"bodies": bodies.name}
        if not plan:
            return {}
        spec = Path(tmp) / "plan.json"
        spec.write_text(json.dumps(plan), encoding="utf-8")
        _compiled()
        return _counted(valgrind, spec, Path(tmp) / "counts")


def _compiled() -> None:
    """Every module of the tree compiled to its cached bytecode before the child imports it: a
    child that compiles a module (its source newer than its cache) lays its heap out otherwise
    than one that loads it, and counted up to 0.2% apart from the next run. The child writes no
    bytecode itself (``PYTHONDONTWRITEBYTECODE``), so a tree where none can be written is
    compiled alike in every run."""
    for package in ("skillsight", "benchmarks"):
        compileall.compile_dir(_ROOT / package, quiet=2)


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


def _dumped(out: Path) -> list[int]:
    """The counts of callgrind's dumps ``out.1``, ``out.2``… in order (one per call)."""
    counts = []
    index = 1
    while (dump := Path(f"{out}.{index}")).exists():
        found = _TOTALS.search(dump.read_text(encoding="utf-8"))
        counts.append(int(found.group(1)) if found else 0)
        index += 1
    return counts


def _save_bodies(path: Path, spans: int) -> None:
    """``bench ingest``'s OTLP/protobuf trace requests of ``spans`` spans in all (500 each) to
    ``path``, each behind its length (made here: under callgrind building them takes minutes)."""
    from benchmarks.traces import export_requests

    with path.open("wb") as out:
        for body in export_requests(spans, per_request=500):
            out.write(len(body).to_bytes(4, "little"))
            out.write(body)


def _load_bodies(path: Path) -> list[bytes]:
    data = path.read_bytes()
    bodies, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "little")
        bodies.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return bodies


def _counted(valgrind: str, plan: Path, out: Path) -> dict[str, Any]:
    """Each workload's report (the JSON the child printed) with the instructions callgrind
    counted inside its ``operator.call``, in all and per unit. The child runs the workloads in
    ``WORKLOADS`` order, one call each; callgrind dumps after each call to ``out.1``, ``out.2``…
    The child runs in the plan's folder and is given its files by name alone, and with only the
    environment that decides what it runs: a temporary folder's random name, or a variable that
    changes from call to call (pytest's current test), moved the counts by up to 0.2%."""
    env = {
        **{k: v for k, v in os.environ.items() if k in _KEPT_ENV or k.startswith("SKILLSIGHT_")},
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [
        valgrind,
        "--tool=callgrind",
        f"--callgrind-out-file={out.name}",
        "--collect-atstart=no",
        "--toggle-collect=_operator_call",
        "--dump-after=_operator_call",
        sys.executable,
        "-m",
        "benchmarks.instructions",
        plan.name,
    ]
    try:
        done = subprocess.run(
            command, cwd=plan.parent, env=env, capture_output=True, text=True, timeout=_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise InstructionsError(f"the count ran past {_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        raise InstructionsError(f"the count failed (exit {done.returncode}): {done.stderr[-2000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise InstructionsError(f"the counting child printed no report: {done.stdout[-500:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    counts = _dumped(out)
    if len(counts) != len(report) or 0 in counts:
        raise InstructionsError(
            f"callgrind dumped {len(counts)} counts for {len(report)} workloads ({counts}): "
            "without an _operator_call symbol to toggle on (a stripped interpreter?) it counts "
            "nothing, and another operator.call in the child counts one more"
        )
    for (name, part), count in zip(report.items(), counts, strict=True):
        unit = _UNIT[name]
        part["instructions"] = count
        part[f"instructions_per_{unit}"] = round(count / max(1, part[f"{unit}s"]))
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


def _rebuild_workload(spec: dict[str, Any]) -> tuple[Callable[[], int], dict[str, Any]]:
    from skillsight.rebuild.finalizer import default_rebuild, gc_paused

    saved = orjson.loads(Path(spec["rows"]).read_bytes())
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
    return run, {"sessions": spec["sessions"], "steps": spec["steps"]}


def _evaluators_workload(spec: dict[str, Any]) -> tuple[Callable[[], int], dict[str, Any]]:
    from benchmarks.eval import CHEAP, synthetic_workload
    from skillsight.evaluators import deterministic_registry, run_evaluators

    found, context = synthetic_workload(int(spec["activations"]), rows=3)
    registry = deterministic_registry()
    run_evaluators(found[:200], context, registry=registry, names=CHEAP)  # warm caches, imports

    def run() -> int:
        return len(run_evaluators(found, context, registry=registry, names=CHEAP)) // len(CHEAP)

    return run, {"evaluators": len(CHEAP)}


def _ingest_workload(spec: dict[str, Any]) -> tuple[Callable[[], int], dict[str, Any]]:
    from skillsight.config import Settings
    from skillsight.ingest import otlp
    from skillsight.store.fastpath import screen

    settings = Settings.load()
    limits = otlp.Limits(settings.max_attribute_bytes, settings.max_attribute_depth)
    bodies = _load_bodies(Path(spec["bodies"]))
    bounds = otlp.Window().bounds()

    def decode(some: list[bytes]) -> int:
        spans = 0
        for body in some:
            screen(body, bounds)
            spans += otlp.decode(otlp.TRACES, body, otlp.PROTOBUF, "bench", limits).accepted
        return spans

    decode(bodies[:1])  # imports and first-call set-up: not counted
    return partial(decode, bodies), {"requests": len(bodies)}


def main(argv: list[str]) -> int:
    """The counting child: ``PLAN_FILE`` (the workloads and their sizes, as JSON); prints their
    reports as JSON, in ``WORKLOADS`` order, one ``operator.call`` each."""
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: python -m benchmarks.instructions PLAN_FILE (written by the bench)")
        return 2
    from skillsight.config import Settings
    from skillsight.runtime import settle_heap

    plan = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    makers = {
        "rebuild": _rebuild_workload,
        "evaluators": _evaluators_workload,
        "ingest": _ingest_workload,
    }
    prepared = [(name, makers[name](plan[name])) for name in WORKLOADS if name in plan]
    settle_heap(Settings.load().gc_young_threshold)  # a service process's collector thresholds
    report: dict[str, Any] = {}
    for name, (run, part) in prepared:
        _settled()
        done: int = operator.call(run)
        report[name] = {**part, f"{_UNIT[name]}s": done}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
