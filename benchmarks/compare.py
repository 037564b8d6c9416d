"""``skillsight bench compare``: one benchmark, this checkout against a base revision, alternated.

On a shared VM the same code's figures move by a quarter within half an hour, so a figure from
one run compared with another round's figure from another run says little. This runs a bench
command (any ``skillsight bench`` command that takes ``--json``) in two trees, each run a fresh
process: the base revision, checked out into a temporary git worktree, and this checkout as it
is (uncommitted changes included). The runs alternate (base, this, this, base, …), so a drift
of the machine lands on both sides alike, and every numeric figure of the reports is given as
each side's median with the ratio of the medians and the range of the paired ratios.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillsight.errors import SkillsightError

ROOT = Path(__file__).resolve().parents[1]


class CompareError(SkillsightError):
    """A revision, a worktree or a bench run that could not be had."""


@dataclass(frozen=True)
class Figure:
    """One numeric figure of both sides' reports."""

    name: str
    base: list[float]
    head: list[float]

    @property
    def ratio(self) -> float | None:
        """This checkout's median over the base's (None when the base's is 0)."""
        base = statistics.median(self.base)
        return statistics.median(self.head) / base if base else None

    @property
    def paired(self) -> tuple[float, float] | None:
        """The smallest and largest ratio of a run to the base run beside it."""
        ratios = [h / b for b, h in zip(self.base, self.head, strict=False) if b]
        return (min(ratios), max(ratios)) if ratios else None


def figures(bases: Sequence[Mapping[str, Any]], heads: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """The numeric leaves every report of both sides has, by dotted path (list items by
    index), in the order of the first base report; not booleans, and not those with one value
    in every run (the bench's parameters, counts of its inputs)."""
    found: dict[str, tuple[list[float], list[float]]] = {}
    for index, report in enumerate([*bases, *heads]):
        side = 0 if index < len(bases) else 1
        for name, value in _leaves(report):
            found.setdefault(name, ([], []))[side].append(value)
    return [
        Figure(name, base, head)
        for name, (base, head) in found.items()
        if len(base) == len(bases) and len(head) == len(heads) and len({*base, *head}) > 1
    ]


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield prefix, float(value)
        return
    items: Any = value.items() if isinstance(value, dict) else None
    if items is None and isinstance(value, list):
        items = enumerate(value)
    for key, inner in items or ():
        yield from _leaves(inner, f"{prefix}.{key}" if prefix else str(key))


def report_of(stdout: str) -> dict[str, Any]:
    """The JSON object a bench printed last (after its tables) with ``--json``."""
    lines = stdout.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if not lines[start].startswith("{"):
            continue
        try:
            found = json.loads("\n".join(lines[start:]))
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict):
            return found
    raise CompareError("the bench printed no JSON report (does the command take --json?)")


@contextmanager
def worktree(revision: str, repo: Path = ROOT) -> Iterator[Path]:
    """``revision`` checked out in a temporary git worktree, removed afterwards."""
    commit = _git(repo, "rev-parse", "--verify", f"{revision}^{{commit}}").strip()
    with tempfile.TemporaryDirectory(prefix="skillsight-compare-") as tmp:
        tree = Path(tmp) / "tree"
        _git(repo, "worktree", "add", "--detach", str(tree), commit)
        try:
            yield tree
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise CompareError(f"git could not run: {exc}") from exc
    if done.returncode != 0:
        raise CompareError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def run_bench(tree: Path, args: list[str], *, timeout_s: float = 3600) -> dict[str, Any]:
    """One run of ``python -m benchmarks ARGS --json`` in ``tree``, which imports its own
    ``skillsight`` and ``benchmarks`` (first on the path), in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "benchmarks", *args, "--json"]
    try:
        done = subprocess.run(
            command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired as exc:
        raise CompareError(f"the bench ran past {timeout_s:.0f} s in {tree}") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise CompareError(f"the bench failed in {tree}: " + " / ".join(tail))
    return report_of(done.stdout)


def compare(
    base: str, args: list[str], *, runs: int = 2, warmup: int = 1, repo: Path = ROOT
) -> tuple[str, list[Figure]]:
    """``args`` (a bench command and its options) run ``runs`` times in each tree, alternated
    (base first, then this checkout twice, then the base twice, …), after ``warmup`` runs in
    each whose figures are dropped (a first run after a pause measured up to 1.5x off the
    next, the same code on both sides); returns the base's commit and the figures."""
    if runs < 1 or warmup < 0:
        raise CompareError("runs must be at least 1, warm-up runs at least 0")
    if not args:
        raise CompareError("name a bench command to compare, e.g. -- rebuild --history 0")
    bases: list[dict[str, Any]] = []
    heads: list[dict[str, Any]] = []
    with worktree(base, repo) as tree:
        commit = _git(tree, "rev-parse", "HEAD").strip()
        for _ in range(warmup):
            run_bench(tree, args)
            run_bench(repo, args)
        for index in range(runs):
            order = [(tree, bases), (repo, heads)]
            for folder, into in order if index % 2 == 0 else order[::-1]:
                into.append(run_bench(folder, args))
    return commit, figures(bases, heads)
