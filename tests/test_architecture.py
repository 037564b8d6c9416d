"""The shape of the code: layer contracts, private insides, only product code in the wheel,
small modules, a light base install, typed and lint-clean."""

from __future__ import annotations

import ast
import os
import statistics
import subprocess
import sys
import venv
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_import_contracts_hold() -> None:
    """The stages import only the ones below them (pyproject's import-linter contracts: cli ->
    api -> reports -> reruns -> runtime|goldens -> clustering -> evaluators -> rebuild|ingest ->
    store -> skills);
    instrumentation imports nothing of the service; product code never imports the demo, the
    benchmarks or the tests."""
    result = run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    for contract in ("layered in pipeline order", "never imports the demo"):
        assert contract in result.stdout


def _package_of(module: str) -> str:
    """The stage a module belongs to: ``skillsight.store._sql`` -> ``skillsight.store``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "skillsight" else parts[0]


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def private_imports(folder: Path) -> list[str]:
    """Imports of a private (``_``) module of a package by code outside that package."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for name in _imports(path):
            parts = name.split(".")
            private = [i for i, p in enumerate(parts) if p.startswith("_") and p != "__init__"]
            if parts[0] != "skillsight" or not private:
                continue
            owner = ".".join(parts[: private[0]])
            if module != owner and not module.startswith(owner + "."):
                found.append(f"{module} imports {name}")
    return found


def test_no_package_reaches_into_another_packages_private_modules(tmp_path: Path) -> None:
    """Each package's public face is its ``__init__``; its underscore modules are its own.
    (The fast path's micro-benchmark measures the fast path's private stages one by one.)"""
    measured_insides = "benchmarks.fastpath_measure imports skillsight.store.fastpath._"
    found = [
        line
        for folder in ("skillsight", "demo", "benchmarks")
        for line in private_imports(ROOT / folder)
        if not line.startswith(measured_insides)
    ]
    assert found == []
    # the check itself catches a reach into another package's insides
    (tmp_path / "skillsight" / "api").mkdir(parents=True)
    probe = tmp_path / "skillsight" / "api" / "probe.py"
    probe.write_text("from skillsight.store._sql import micros\n")
    rel = probe.relative_to(tmp_path)
    assert _imports(probe) == ["skillsight.store._sql", "skillsight.store._sql.micros"]
    assert _package_of(".".join(rel.with_suffix("").parts)) == "skillsight.api"


def test_the_wheel_holds_only_product_code(tmp_path: Path) -> None:
    """No scripted model servers, scenario libraries, benchmarks or synthetic data generators
    are shipped: they live in the checkout's demo/ and benchmarks/ folders."""
    built = run(
        sys.executable,
        *("-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"),
        *("-w", str(tmp_path), str(ROOT)),
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("skillsight-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = [n for n in names if n.endswith(".py")]
    assert "skillsight/instrumentation/__init__.py" in modules
    assert "skillsight/store/migrations/0001_spans.sql" in names
    assert all(n.startswith(("skillsight/", "skillsight-")) for n in names), names
    doubles = ("scripted", "scenario", "synthetic", "workload", "measure")
    assert [n for n in modules if any(word in n for word in doubles)] == []
    folders = {n.split("/")[1] for n in modules if n.count("/") > 1}
    assert not folders & {"demo", "bench", "benchmarks", "tests"}, folders


def test_modules_stay_small() -> None:
    """One concept per module: a median under 200 lines and none over 450."""
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "skillsight").rglob("*.py")
    }
    assert statistics.median(sizes.values()) <= 200
    assert {path: n for path, n in sizes.items() if n > 450} == {}


def test_package_is_typed_and_lint_clean() -> None:
    ruff = run(str(BIN / "ruff"), "check", "skillsight", "tests", "demo", "benchmarks")
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    mypy = run(str(BIN / "mypy"))
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr


def test_the_command_starts_without_the_service_or_the_store() -> None:
    """``skillsight --help`` (and every command that only talks to a running service) starts
    in ~0.4 s: loading the store, the read models or the evaluators costs ~2 s more, so those
    are imported by the commands that use them, not when the command starts."""
    heavy = ("chdb", "pyarrow", "clickhouse_connect", "fastapi", "grpc", "torch", "litellm")
    ours = ("skillsight.store", "skillsight.reports", "skillsight.evaluators")
    assert _loaded_after("import skillsight.cli", heavy + ours) == []


def _loaded_after(imports: str, modules: Sequence[str]) -> list[str]:
    """Which of ``modules`` a fresh interpreter holds after running ``imports``."""
    shown = f"print(sorted(m for m in {list(modules)!r} if m in sys.modules))"
    probe = f"import sys\n{imports}\n{shown}"
    result = run(sys.executable, "-c", probe)
    assert result.returncode == 0, result.stderr
    loaded: list[str] = ast.literal_eval(result.stdout.strip())
    return loaded


_HEAVY = ("chdb", "pyarrow", "clickhouse_connect", "numpy", "fastapi", "grpc", "torch", "litellm")


def test_the_receivers_screen_and_decoder_load_no_store_engine() -> None:
    """What a collector does with each request (the fast path's screen, the Python decoder)
    loads neither chdb nor the server client: a collector in front of a ClickHouse server has
    no embedded engine to load (chdb alone costs ~0.3 s to import, minutes under valgrind,
    where ``bench instructions`` counts the two)."""
    imports = "from skillsight.store.fastpath import screen\nfrom skillsight.ingest import otlp"
    assert _loaded_after(imports, ("chdb", "clickhouse_connect")) == []


def test_the_composition_roots_heap_policy_loads_no_service() -> None:
    """``skillsight.runtime`` is a lazy face: taking its heap policy (as ``bench instructions``'
    child does) builds nothing and loads no store engine; the services load on first use."""
    assert _loaded_after("from skillsight.runtime import settle_heap", ("chdb",)) == []
    assert _loaded_after("from skillsight.runtime import build_services", ("chdb",)) == ["chdb"]


@pytest.mark.parametrize(
    "command",
    [
        ["gate", "--skill", "csv-summary", "--min", "allowed_tools=1"],
        ["activations", "list"],
        ["clusters", "list"],
        ["skills", "list"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_commands_that_ask_a_service_load_neither_the_store_nor_the_models(
    command: list[str],
) -> None:
    """A command given ``--api`` (a skill author's CI gate, on every push) starts in under a
    second: it loads the read models' records, not the store's engines (chdb, pyarrow) or the
    evaluators' and clusters' numerical stacks, which cost ~2 s more. The command runs for real
    against a port nobody listens on, so what it imported is what its own code path imports."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    probe = (
        "import atexit, sys\n"
        f"heavy = {list(_HEAVY)!r}\n"
        "atexit.register(lambda: print('LOADED', sorted(m for m in heavy if m in sys.modules)))\n"
        f"sys.argv = ['skillsight', *{command!r}, '--api', 'http://127.0.0.1:{port}']\n"
        "from skillsight.cli import main\n"
        "main()\n"
    )
    result = run(sys.executable, "-c", probe)
    assert result.returncode != 0, result.stdout + result.stderr  # the service is unreachable
    assert f"127.0.0.1:{port}" in result.stderr
    assert result.stdout.strip().splitlines()[-1] == "LOADED []"


def _type_checking_imports(init: Path) -> dict[str, str]:
    """``{name: module}`` of a package face's imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: str(statement.module)
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for statement in block.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }


def test_lazy_package_faces_give_every_name_they_list() -> None:
    """A lazy package face (``skillsight._faces``) lists in ``__all__`` only what it imports
    under ``TYPE_CHECKING`` or defines itself (ruff flags an import there that is neither
    listed nor used); each name, read in a fresh interpreter, is the very object its module
    defines, and a name it does not export is an AttributeError."""
    faces = [
        init
        for init in sorted((ROOT / "skillsight").glob("*/__init__.py"))
        if "lazy_face(globals())" in init.read_text(encoding="utf-8")
    ]
    assert {f.parent.name for f in faces} >= {"store", "reports", "evaluators", "clustering"}
    for init in faces:
        package = f"skillsight.{init.parent.name}"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        listed = next(
            ast.literal_eval(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__"
        )
        imported = _type_checking_imports(init)
        assert set(listed) <= imported.keys() | defined, package
        homes = {name: imported[name] for name in listed if name not in defined}
        probe = (
            "import importlib\n"
            f"face = importlib.import_module({package!r})\n"
            f"for name, home in {homes!r}.items():\n"
            "    assert getattr(face, name) is getattr(importlib.import_module(home), name), name\n"
            "    assert name in dir(face), name\n"
            "try:\n"
            "    face.no_such_name\n"
            "except AttributeError as exc:\n"
            "    print('refused:', exc)\n"
        )
        result = run(sys.executable, "-c", probe)
        assert result.returncode == 0, result.stderr
        assert f"refused: module '{package}' has no attribute 'no_such_name'" in result.stdout


@pytest.mark.slow
def test_instrumentation_imports_with_only_the_base_install(tmp_path: Path) -> None:
    """`pip install skillsight` (no extras) is enough for the in-process instrumentation."""
    env_dir = tmp_path / "base-venv"
    # no pip of its own (ensurepip costs ~7 CPU-s): this environment's pip installs into it
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    install = run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
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
