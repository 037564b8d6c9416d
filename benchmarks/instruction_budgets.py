"""Instruction budgets: ``bench instructions``' counts recorded, and each new count held to them.

A count repeats to within 1e-6 for the same tree and ~0.5% across folders or after an edit that
changes no code path, so a change that makes the rebuild algorithm, the cheap evaluators or the
collector's decoding do a few percent more work shows, where CPU-time figures on a shared VM
cannot tell it from drift. The budget file records, per workload, the instructions per unit
(activation or span) and the sizes they were counted at, with the environment that decides
them: the interpreter, the machine's architecture and CPU vendor, valgrind and the libraries
the counted code runs (pydantic, orjson, protobuf). A count is held to its budget only in that
environment; elsewhere the check is not applicable and says what differs (a new pydantic
release moves the counts with no change here). Within it, a count more than ``tolerance`` above
its budget is a regression; more than ``tolerance`` below, a gain to record, so the budget
keeps it (``--record-budget``).
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.instructions import per_unit
from skillsight.errors import SkillsightError

BUDGETS = Path(__file__).resolve().parent / "instruction_budgets.json"
TOLERANCE = 0.03
"""How far a count may drift from its budget: above the folder-to-folder spread (~0.5%) and
what two CPUs of one vendor may differ by under valgrind, below a change worth seeing."""

_LIBRARIES = ("pydantic", "pydantic-core", "orjson", "protobuf")
_SIZES = ("sessions", "steps", "activations", "spans")


class BudgetError(SkillsightError):
    """The budget file is missing or not what ``--record-budget`` writes."""


@dataclass(frozen=True)
class Verdict:
    """One workload's count against its budget."""

    workload: str
    state: str
    """``within``, ``over``, ``under`` or ``not applicable``."""
    reason: str
    budget: int = 0
    unit: str = "activation"

    @property
    def failed(self) -> bool:
        return self.state in ("over", "under")


def environment() -> dict[str, str]:
    """What decides the counts besides the code: interpreter, architecture, CPU vendor,
    valgrind, libraries."""
    found: dict[str, str] = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "machine": platform.machine(),
        "cpu": _cpu_vendor(),
        "valgrind": _valgrind_version(),
    }
    for name in _LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def _cpu_vendor() -> str:
    """The CPU's vendor: the C library picks its string and memory routines by what the CPU
    reports, under valgrind too, so counts are compared within one vendor's CPUs only."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith(("vendor_id", "CPU implementer")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _valgrind_version() -> str:
    try:
        done = subprocess.run(
            ["valgrind", "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return "absent"
    match = re.search(r"\d+(\.\d+)+", done.stdout)
    return match.group(0) if match else "unknown"


def load(path: Path = BUDGETS) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BudgetError(f"no instruction budgets at {path} (--record-budget)") from exc
    except (OSError, ValueError) as exc:
        raise BudgetError(f"the instruction budgets at {path} are not JSON: {exc}") from exc
    workloads = data.get("workloads")
    if not isinstance(data.get("environment"), dict) or not isinstance(workloads, dict):
        raise BudgetError(f"{path} holds no environment and workloads: not a budget file")
    for name, entry in workloads.items():
        try:
            per_unit(entry)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise BudgetError(f"{path}: workload {name!r} has no instructions per unit") from exc
    return data


def sizes(data: dict[str, Any]) -> dict[str, int]:
    """The bench's sizes the budgets were counted at (0 for a workload the file has not)."""
    workloads = data["workloads"]
    rebuild = workloads.get("rebuild", {})
    return {
        "sessions": int(rebuild.get("sessions", 0)),
        "steps": int(rebuild.get("steps", 20)),
        "activations": int(workloads.get("evaluators", {}).get("activations", 0)),
        "spans": int(workloads.get("ingest", {}).get("spans", 0)),
    }


def record(report: dict[str, Any], path: Path = BUDGETS) -> dict[str, Any]:
    """``report`` (``run_instructions_bench``'s) written to ``path`` as the budgets."""
    data = {
        "environment": environment(),
        "tolerance": TOLERANCE,
        "workloads": {
            name: {
                **{key: part[key] for key in _SIZES if key in part},
                "instructions_per_" + per_unit(part)[0]: per_unit(part)[1],
            }
            for name, part in report.items()
        },
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def check(report: dict[str, Any], data: dict[str, Any]) -> list[Verdict]:
    """Each counted workload against its budget, in the budget's environment only."""
    here = environment()
    recorded: dict[str, str] = data["environment"]
    differs = [
        f"{key} {here.get(key, 'absent')} here, {value} recorded"
        for key, value in sorted(recorded.items())
        if here.get(key) != value
    ]
    tolerance = float(data.get("tolerance", TOLERANCE))
    verdicts = []
    for name, part in report.items():
        entry = data["workloads"].get(name)
        unit, counted = per_unit(part)
        if entry is None:
            verdicts.append(Verdict(name, "not applicable", "no budget for it", 0, unit))
            continue
        budget_unit, budget = per_unit(entry)
        other = [
            f"{key} {part.get(key)} counted, {entry[key]} budgeted"
            for key in _SIZES
            if key in entry and part.get(key) != entry[key]
        ]
        if budget_unit != unit:
            other.append(f"counted per {unit}, budgeted per {budget_unit}")
        if differs or other:
            reason = "; ".join(differs + other)
            verdicts.append(Verdict(name, "not applicable", reason, budget, unit))
            continue
        change = counted / budget - 1
        if change > tolerance:
            state, reason = "over", f"{change:+.1%}, past the {tolerance:.0%} allowed"
        elif change < -tolerance:
            state = "under"
            reason = f"{change:+.1%}: a gain to keep, record it (--record-budget)"
        else:
            state, reason = "within", f"{change:+.1%}"
        verdicts.append(Verdict(name, state, reason, budget, unit))
    return verdicts
