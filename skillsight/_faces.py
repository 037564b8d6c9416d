"""Package faces that import their insides on first use.

A package face re-exports its public names from private modules. Importing every one of them
when the package is imported makes ``skillsight.store.records`` (plain pydantic records) cost
the store's engines, chdb and pyarrow (~2 s), and a command that only asks a running service
pays for all of it. A lazy face writes its re-exports as usual, but under ``if TYPE_CHECKING:``
(so mypy, ruff and readers see them), keeps its ``__all__``, and ends with::

    __getattr__, __dir__ = lazy_face(globals())

Those imports are then the one list of which module gives which name: a name's module is
imported when the name is first read, and the value is kept in the package, so later reads cost
nothing.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any


def lazy_face(
    namespace: MutableMapping[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose ``globals()`` is ``namespace``."""
    package = str(namespace["__name__"])
    where = _type_checking_imports(Path(str(namespace["__file__"])))

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__


def _type_checking_imports(source: Path) -> dict[str, str]:
    """``{name: module}`` of the ``from module import name`` statements under the module's
    top-level ``if TYPE_CHECKING:``."""
    tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    where: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom) or statement.level or not statement.module:
                continue
            for alias in statement.names:
                name = alias.asname or alias.name
                if name in where:
                    raise ImportError(f"{source}: {name} is imported from two modules")
                where[name] = statement.module
    return where


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
