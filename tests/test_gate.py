"""``skillsight eval run``, ``skillsight skills scorecard`` and ``skillsight gate`` on a store.

Two recorded Claude Code sessions (the clean ``one_skill`` and ``allowed_tools_violation``, a
``Read``-only skill that ran ``Bash``) are loaded into an embedded store with their skills
catalogued, rebuilt, and scored with ``skillsight eval run``; the gate then reads the store
(``--data``). Reading through a running service (``--api``) is covered end to end in
``test_eval_e2e.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from demo.scenario_library import build_scenario
from skillsight.cli import app
from skillsight.cli._gate import GateConfig, read_config
from skillsight.errors import ConfigError
from skillsight.evaluators import DETERMINISTIC
from skillsight.rebuild.catalogue import store_catalogue
from skillsight.rebuild.finalizer import default_rebuild, rebuild_sessions
from skillsight.skills import load_skill
from skillsight.store import EmbeddedStore
from tests.harness.scenario_captures import CAPTURES, load_capture
from tests.test_activations import load

runner = CliRunner()
CHEAP = ["allowed_tools", "script_execution", "tool_errors", "integration_heuristic", "security"]
STRICT = ["--min", "allowed_tools=1.0", "--min", "security=1.0"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store holding both sessions, rebuilt against the catalogue, then scored by the CLI."""
    folder = tmp_path_factory.mktemp("gate") / "data"
    store = EmbeddedStore(folder)
    store.migrate()
    try:
        for name in ("one_skill", "allowed_tools_violation"):
            root = Path(load_capture(name).manifest["project_root"])
            build_scenario(name, root).write()
            skills = sorted((root / ".claude" / "skills").iterdir())
            store.skills.insert("default", [load_skill(s) for s in skills])
            load(store, CAPTURES / name / "claude_code")
        keys = store.sessions.touched(0)
        rebuild_sessions(store, keys, rebuild=default_rebuild(), catalogue=store_catalogue(store))
    finally:
        store.close()
    evaluators = [arg for name in CHEAP for arg in ("--evaluator", name)]
    scored = runner.invoke(app, ["eval", "run", "--data", str(folder), *evaluators])
    assert scored.exit_code == 0, scored.output
    assert "scored 2 activations: 10 evaluations (10 scored, 1 failed, 0 evaluator errors)" in (
        scored.output
    )
    yield folder


def gate(data: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["gate", "--data", str(data), *args])
    return result.exit_code, result.output


def bash_call(data: Path) -> dict[str, object]:
    listed = runner.invoke(
        app, ["activations", "list", "--skill", "sales-report", "--json", "--data", str(data)]
    )
    (activation,) = json.loads(listed.stdout)
    (call,) = [c for c in activation["tool_calls"] if c["name"] == "Bash"]
    return {"activation_id": activation["activation_id"], **call}


def test_the_violation_fails_the_gate_and_prints_the_cited_bash_step(data: Path) -> None:
    code, output = gate(data, "--skill", "sales-report", *STRICT)
    call = bash_call(data)
    assert code == 1, output
    assert f"activation {call['activation_id']}" in output
    assert f"tool_not_allowed at step {call['step_id']}, {call['tool_call_id']}" in output
    assert "gate failed" in output


def test_the_clean_skill_passes_the_gate(data: Path) -> None:
    code, output = gate(data, "--skill", "csv-summary", *STRICT, "--min", "script_execution=1")
    assert code == 0, output
    assert "gate passed" in output


def test_the_gate_as_json(data: Path) -> None:
    code, output = gate(data, "--skill", "sales-report", *STRICT, "--json")
    call = bash_call(data)
    result = json.loads(output)
    assert code == 1
    failing = result.pop("failing")
    assert result == {
        "skill": "sales-report",
        "version": "",
        "ok": False,
        "activations": 1,
        "verdicts": [
            {"evaluator": "allowed_tools", "min": 1.0, "mean": 0.5, "pass_rate": 0.0, "scored": 1,
             "ok": False},
            {"evaluator": "security", "min": 1.0, "mean": 1.0, "pass_rate": 1.0, "scored": 1,
             "ok": True},
        ],
    }  # fmt: skip
    assert [(f["activation_id"], f["evaluator"], f["score"]) for f in failing] == [
        (call["activation_id"], "allowed_tools", 0.5)
    ]
    assert failing[0]["evidence"] == {
        "step_ids": [call["step_id"]],
        "tool_call_ids": [call["tool_call_id"]],
    }


def test_thresholds_come_from_the_nearest_skillsight_toml(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "skillsight.toml").write_text(
        '[gate]\nskill = "sales-report"\n[gate.min]\nsecurity = 1.0\n'
        "[gate.skills.sales-report.min]\nallowed_tools = 1.0\n"
    )
    nested = tmp_path / "skills" / "sales-report"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    code, output = gate(data)
    assert code == 1, output
    code, output = gate(data, "--min", "allowed_tools=0.5")  # the command line wins
    assert code == 0, output
    code, output = gate(data, "--skill", "csv-summary")  # [gate.min] only
    assert code == 0, output
    assert "allowed_tools" not in output


def test_read_config_merges_a_skills_own_thresholds(tmp_path: Path) -> None:
    path = tmp_path / "skillsight.toml"
    path.write_text(
        '[gate]\nskill = "a"\nwindow = "7d"\n[gate.min]\nsecurity = 1\ntool_errors = 0.5\n'
        "[gate.skills.a.min]\ntool_errors = 1.0\n"
    )
    assert read_config(path, "", DETERMINISTIC) == GateConfig(
        "a", "7d", {"security": 1.0, "tool_errors": 1.0}, path
    )
    assert read_config(path, "b", DETERMINISTIC).thresholds == {
        "security": 1.0,
        "tool_errors": 0.5,
    }
    path.write_text("[gate.min]\nsecurty = 1.0\n")
    with pytest.raises(ConfigError, match="no evaluator named 'securty'"):
        read_config(path, "a", DETERMINISTIC)
    path.write_text("[gate.min]\nsecurity = 2\n")
    with pytest.raises(ConfigError, match="is not a threshold in"):
        read_config(path, "a", DETERMINISTIC)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--skill", "no-such-skill", *STRICT], "nothing to gate"),
        (["--skill", "sales-report", *STRICT, "--version", "0" * 64], "nothing to gate"),
        (["--skill", "sales-report", "--min", "securty=1"], "no evaluator named 'securty'"),
        (["--skill", "sales-report", "--min", "security"], "is not evaluator=threshold"),
        (["--skill", "sales-report"], "no thresholds"),
        (["--skill", "sales-report", *STRICT, "--window", "week"], "is not a positive count"),
        (["--skill", "sales-report", *STRICT, "--config", "missing.toml"], "no config file"),
    ],
)
def test_mistakes_and_nothing_to_gate_exit_2(
    data: Path, args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no skillsight.toml up from here
    code, output = gate(data, *args)
    assert code == 2, output
    assert message in output


def test_the_scorecard_shows_the_stored_scores(data: Path) -> None:
    result = runner.invoke(
        app,
        ["skills", "scorecard", "sales-report", "--window", "all", "--json", "--data", str(data)],
    )
    assert result.exit_code == 0, result.output
    card = json.loads(result.stdout)
    assert (card["skill"], card["activations"]) == ("sales-report", 1)
    assert [(e["evaluator"], e["pass_rate"], e["mean_score"]) for e in card["evaluators"]] == [
        ("allowed_tools", 0.0, 0.5),
        ("script_execution", 1.0, 1.0),
        ("tool_errors", 1.0, 1.0),
        ("integration_heuristic", 1.0, 1.0),
        ("security", 1.0, 1.0),
    ]
    assert card["versions"][0]["evaluators"] == card["evaluators"]
    printed = runner.invoke(app, ["skills", "scorecard", "sales-report", "--data", str(data)])
    assert printed.exit_code == 0, printed.output
    assert "sales-report: 1 activations" in printed.output


def test_a_rerun_replaces_the_scores(data: Path) -> None:
    before = runner.invoke(
        app,
        ["skills", "scorecard", "sales-report", "--json", "--window", "all", "--data", str(data)],
    )
    again = runner.invoke(
        app,
        [
            "eval",
            "run",
            "--data",
            str(data),
            "--skill",
            "sales-report",
            "--evaluator",
            "allowed_tools",
        ],
    )
    assert again.exit_code == 0, again.output
    assert "scored 1 activations: 1 evaluations" in again.output
    after = runner.invoke(
        app,
        ["skills", "scorecard", "sales-report", "--json", "--window", "all", "--data", str(data)],
    )
    assert json.loads(after.stdout) == json.loads(before.stdout)
    unknown = runner.invoke(app, ["eval", "run", "--data", str(data), "--evaluator", "judge"])
    assert unknown.exit_code == 2
    assert "no evaluator named 'judge'" in unknown.output
