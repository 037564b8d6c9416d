"""Golden cases as Harbor task directories, to run a set at scale on Harbor-compatible sandboxes.

Each replayed case becomes two tasks, one per condition of the paired protocol::

    <out>/<case_id>__with_skill/          <out>/<case_id>__baseline/
      task.toml                             the same, but environment/skills/ lacks the target
      instruction.md                        the case's question (and where to leave the answer)
      environment/Dockerfile                python:3.11-slim, fixtures into /app, skills into
      environment/skills/<name>/...           /app/.claude/skills and /root/.claude/skills
      environment/files/...                 the case's fixture files
      tests/test.sh                         the verifier: writes /logs/verifier/reward.txt
      tests/check_answer.py                 share of the ground truth's values in the answer
      tests/case.json                       the case itself
      solution/solve.sh                     writes the ground truth as the answer (oracle)

Harbor writes each trial's ATIF trajectory to ``agent/trajectory.json``; ``skillsight rerun
--harbor-results DIR`` reads them back and scores them like any other run.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from skillsight.errors import GoldenSetError
from skillsight.goldens._model import GoldenCase, GoldenSet

CONDITIONS: tuple[str, ...] = ("with_skill", "baseline")
ANSWER_FILE = "/app/answer.txt"

_DOCKERFILE = """\
FROM python:3.11-slim
WORKDIR /app
COPY files/ /app/
# Claude Code reads project skills from .claude/skills and user skills from ~/.claude/skills
COPY skills/ /app/.claude/skills/
COPY skills/ /root/.claude/skills/
"""

_TEST_SH = """\
#!/usr/bin/env bash
# Harbor's verifier: the share of the case's ground-truth values found in the agent's answer.
set -u
mkdir -p /logs/verifier
python3 /tests/check_answer.py /tests/case.json {answer} > /logs/verifier/reward.txt
"""

# The same rule as skillsight's goal_accuracy (docs/golden-sets.md): numbers of the ground truth
# (thousands separators and trailing zeros dropped), else its words, found in the answer.
_CHECK = """\
import json, re, sys

NUMBER = re.compile(r"(?<![\\w.])-?\\d[\\d,]*(?:\\.\\d+)?")
WORD = re.compile(r"[a-z0-9][a-z0-9_-]*")

def numbers(text):
    out = []
    for raw in NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.append(value)
    return out

case = json.load(open(sys.argv[1]))
truth = case.get("ground_truth")
try:
    answer = open(sys.argv[2]).read()
except OSError:
    answer = ""
if not truth:
    print("0")
    sys.exit(0)
wanted = list(dict.fromkeys(numbers(truth)))
found = set(numbers(answer))
if not wanted:
    wanted = list(dict.fromkeys(WORD.findall(truth.lower())))
    found = set(WORD.findall(answer.lower()))
print(round(sum(1 for w in wanted if w in found) / len(wanted), 6) if wanted else 0)
"""


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def task_toml(golden: GoldenSet, case: GoldenCase, condition: str) -> str:
    timeout = float(golden.defaults.get("timeout_sec", 300))
    metadata = {
        "skill": golden.skill_name,
        "golden_set": golden.set_id,
        "golden_set_version": golden.version,
        "case_id": case.case_id,
        "condition": condition,
        "difficulty": case.tags.get("difficulty_bucket", ""),
        "category": "agent-skills",
        "tags": sorted(f"{k}={v}" for k, v in case.tags.items()),
    }
    lines = ['version = "1.0"', "", "[metadata]"]
    lines += [f"{key} = {_toml_value(value)}" for key, value in metadata.items()]
    lines += ["", "[verifier]", "timeout_sec = 120.0", "", "[agent]", f"timeout_sec = {timeout}"]
    lines += ["", "[environment]", "build_timeout_sec = 600.0", "cpus = 1", "memory_mb = 2048"]
    return "\n".join(lines) + "\n"


def _instruction(case: GoldenCase) -> str:
    return (
        f"{case.question.rstrip()}\n\n"
        f"When you are done, also write your final answer to `{ANSWER_FILE}`.\n"
    )


def _copy_tree(source: Path, target: Path) -> None:
    if not source.is_dir():
        raise GoldenSetError(f"no skill folder {source}")
    shutil.copytree(source, target, dirs_exist_ok=True)


def _write(path: Path, text: str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(0o755)


def export_harbor(
    golden: GoldenSet,
    out: Path,
    *,
    skill_dir: Path,
    files_root: Path,
    other_skills: Sequence[Path] = (),
) -> list[Path]:
    """Write the task directories of every replayed case; return them in order.

    ``skill_dir`` is the target skill's folder, ``other_skills`` support and decoy skills kept
    in both conditions, ``files_root`` the folder the cases' fixture paths are relative to.
    """
    written: list[Path] = []
    for case in golden.replayed():
        for condition in CONDITIONS:
            task = out / f"{case.case_id}__{condition}"
            if task.exists():
                shutil.rmtree(task)
            env = task / "environment"
            _write(env / "Dockerfile", _DOCKERFILE)
            (env / "files").mkdir(parents=True, exist_ok=True)
            (env / "skills").mkdir(parents=True, exist_ok=True)
            for relative in case.files:
                source = files_root / relative
                if not source.is_file():
                    raise GoldenSetError(f"case {case.case_id}: no fixture file {source}")
                (env / "files" / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, env / "files" / relative)
            skills = [*other_skills, *([skill_dir] if condition == "with_skill" else [])]
            for folder in skills:
                _copy_tree(folder, env / "skills" / folder.name)
            _write(task / "task.toml", task_toml(golden, case, condition))
            _write(task / "instruction.md", _instruction(case))
            _write(task / "tests" / "test.sh", _TEST_SH.format(answer=ANSWER_FILE), True)
            _write(task / "tests" / "check_answer.py", _CHECK)
            _write(task / "tests" / "case.json", case.model_dump_json(indent=2) + "\n")
            truth = shlex.quote(case.ground_truth or "")
            solve = f"#!/usr/bin/env bash\nprintf '%s\\n' {truth} > {ANSWER_FILE}\n"
            _write(task / "solution" / "solve.sh", solve, True)
            written.append(task)
    return written


def task_key(name: str) -> tuple[str, str] | None:
    """``(case_id, condition)`` of a task directory name written here (None otherwise)."""
    case_id, sep, condition = name.rpartition("__")
    return (case_id, condition) if sep and condition in CONDITIONS and case_id else None


def read_task_metadata(task_toml_text: str) -> Mapping[str, object]:
    try:
        return dict(tomllib.loads(task_toml_text).get("metadata", {}))
    except tomllib.TOMLDecodeError as exc:
        raise GoldenSetError(f"task.toml: {exc}") from exc
