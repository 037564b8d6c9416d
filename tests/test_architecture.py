"""The shape of the code: layer contracts, a light base install, typed and lint-clean."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_import_contracts_hold() -> None:
    """api -> clustering -> evaluators -> collector; instrumentation imports none of them."""
    result = run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_package_is_typed_and_lint_clean() -> None:
    ruff = run(str(BIN / "ruff"), "check", "skillsight", "tests")
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    mypy = run(str(BIN / "mypy"))
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr


@pytest.mark.slow
def test_instrumentation_imports_with_only_the_base_install(tmp_path: Path) -> None:
    """`pip install skillsight` (no extras) is enough for the in-process instrumentation."""
    env_dir = tmp_path / "base-venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    install = run(
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        str(ROOT),
        env=environ,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    probe = (
        "import importlib.util, sys\n"
        "import skillsight.instrumentation, skillsight.semconv\n"
        "server = ['chdb', 'clickhouse_connect', 'fastapi', 'grpc', 'pyarrow', 'typer']\n"
        "present = [m for m in server if importlib.util.find_spec(m)]\n"
        "assert not present, f'base install pulled server deps: {present}'\n"
        "print('ok')\n"
    )
    result = run(str(python), "-c", probe, cwd=tmp_path, env=environ)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    cli = run(str(env_dir / "bin" / "skillsight"), "--help", cwd=tmp_path, env=environ)
    assert cli.returncode == 2
    assert "pip install 'skillsight[server]'" in cli.stderr
