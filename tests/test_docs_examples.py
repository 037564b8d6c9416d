"""The documentation's code examples, run as written (only the collector's address is changed,
to a capturing receiver on 127.0.0.1; the Claude Code example's model is scripted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from demo.scripted_anthropic import ScriptedAnthropic
from demo.session import session_env
from demo.workload import create_demo_project, demo_turns
from tests.harness.otlp_capture import OtlpCapture, iter_spans

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED_ENDPOINT = "http://127.0.0.1:4318"


def python_examples(document: str, heading: str) -> list[str]:
    """The ```python blocks of one ``## heading`` section of a document."""
    text = (ROOT / document).read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0] for block in section.split("```python\n")[1:]]


def run_example(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = cwd / "example.py"
    script.write_text(code, encoding="utf-8")
    environ = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=150,
    )


def test_the_configure_example_exports_to_the_address_it_names(tmp_path: Path) -> None:
    (example,) = python_examples("docs/instrumentation.md", "`configure()`: where spans go")
    assert DOCUMENTED_ENDPOINT in example
    with OtlpCapture() as receiver:
        code = example.replace(DOCUMENTED_ENDPOINT, receiver.http_endpoint)
        code += (
            "\nfrom opentelemetry import trace\n"
            "with trace.get_tracer('docs').start_as_current_span('probe'):\n    pass\n"
        )
        result = run_example(code, tmp_path, {})
        assert result.returncode == 0, result.stderr
        spans = list(iter_spans(receiver.captures))
    assert [s["name"] for s in spans] == ["probe"]
    assert {c.headers.get("x-skillsight-key") for c in receiver.captures} == {"my-project-key"}


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_claude_agent_sdk_example_records_the_skill_activation(tmp_path: Path) -> None:
    (example,) = python_examples("docs/instrumentation.md", "Claude Agent SDK")
    project = create_demo_project(tmp_path / "project")
    config_dir = tmp_path / "claude-config"
    config_dir.mkdir()
    with OtlpCapture() as receiver, ScriptedAnthropic(demo_turns(project)) as base_url:
        code = example.replace(DOCUMENTED_ENDPOINT, receiver.http_endpoint)
        result = run_example(code, project.root, session_env(base_url, config_dir))
        assert result.returncode == 0, result.stderr[-3000:]
        spans = list(iter_spans(receiver.captures))
    assert "ResultMessage" in result.stdout.split()
    names = [s["name"] for s in spans]
    assert f"activate_skill {project.skill_name}" in names
    assert "execute_tool Bash" in names
    activation = next(s for s in spans if s["name"].startswith("activate_skill"))
    bash = next(s for s in spans if s["name"] == "execute_tool Bash")
    assert bash["parentSpanId"] == activation["spanId"]  # the skill's call, nested under it


def readme_examples() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def test_the_readme_shows_exactly_the_examples_this_module_runs() -> None:
    first, second = readme_examples()
    assert "ClaudeAgentSDKInstrumentor().instrument()" in first
    assert "skill_activation(" in second


def test_the_readme_instrumentor_example_instruments_the_sdk(tmp_path: Path) -> None:
    example = readme_examples()[0]
    with OtlpCapture() as receiver:
        code = "import claude_agent_sdk\noriginal = claude_agent_sdk.query\n"
        code += example.replace(DOCUMENTED_ENDPOINT, receiver.http_endpoint)
        code += (
            "\nassert claude_agent_sdk.query is not original  # wrapped\n"
            "from opentelemetry import trace\n"
            "with trace.get_tracer('docs').start_as_current_span('probe'):\n    pass\n"
        )
        result = run_example(code, tmp_path, {})
        assert result.returncode == 0, result.stderr
    assert [s["name"] for s in iter_spans(receiver.captures)] == ["probe"]


def test_the_readme_manual_example_nests_the_call_under_the_activation(tmp_path: Path) -> None:
    """Given what the example leaves to the reader (the request, a call id, a command and a way
    to run it), it records the skill's activation with the command nested under it."""
    example = readme_examples()[1]
    project = create_demo_project(tmp_path / "project")
    with OtlpCapture() as receiver:
        prelude = (
            "import subprocess\n"
            "from skillsight.instrumentation import configure, shutdown\n"
            f"configure({receiver.http_endpoint!r})\n"
            "request = 'Summarise data/sales.csv'\n"
            "call_id = 'call-1'\n"
            f"command = {project.command!r}\n"
            "def run(command):\n"
            "    done = subprocess.run(command, shell=True, capture_output=True, text=True)\n"
            "    return done.stdout\n"
        )
        result = run_example(prelude + example + "shutdown()\n", project.root, {})
        assert result.returncode == 0, result.stderr
        spans = list(iter_spans(receiver.captures))
    activation = next(s for s in spans if s["name"] == f"activate_skill {project.skill_name}")
    shell = next(s for s in spans if s["name"] == "execute_tool shell")
    assert shell["parentSpanId"] == activation["spanId"]
    assert "total amount: 133.00" in shell["attrs"]["gen_ai.tool.call.result"]
    assert activation["attrs"]["gen_ai.skill.version"]  # read from the project's SKILL.md
