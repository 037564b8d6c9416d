"""Gitignore-style path globs, as Claude Code's Read and Edit permission rules use them.

- ``//abs/path`` is absolute; ``~/path`` is under the home directory; ``/path`` is anchored at
  the project root (the ``cwd`` of the check), or absolute when no root is known; ``./path`` and
  any pattern with a ``/`` inside it is relative to ``cwd``.
- A pattern with no ``/`` (``*.env``, ``.env``) matches a file name at any depth.
- ``*`` matches within one path segment, ``?`` one character of a segment, ``[…]`` a class,
  ``**`` any number of segments. A trailing ``/`` means the directory and everything under it.
- A pattern that matches a directory matches everything below it, as in ``.gitignore``.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class PathGlob:
    pattern: str

    @cached_property
    def _anchored(self) -> tuple[str, str | None]:
        """(kind, rest): kind is 'abs', 'home', 'root', 'cwd' or 'any' (unanchored name)."""
        p = self.pattern
        if p.startswith("//"):
            return "abs", p[1:]
        if p.startswith("~/"):
            return "home", p[2:]
        if p.startswith("/"):
            return "root", p[1:]
        p = p.removeprefix("./")
        if "/" in p.rstrip("/"):
            return "cwd", p
        return "any", p

    def matches(self, path: str, *, cwd: str | None = None) -> bool:
        """Whether ``path`` (absolute, or relative to ``cwd``) falls under this pattern."""
        kind, rest = self._anchored
        assert rest is not None
        rest = rest.rstrip("/") + ("/**" if rest.endswith("/") else "")
        target = _normalize(path, cwd)
        if kind == "any":
            return _regex("**/" + rest).fullmatch(target.lstrip("/")) is not None or any(
                _regex("**/" + rest).fullmatch(a.lstrip("/")) for a in _ancestors(target)
            )
        if kind == "abs":
            full = rest
        elif kind == "home":
            full = posixpath.join(os.path.expanduser("~"), rest)
        elif kind == "root":
            full = posixpath.join(_normalize(cwd, None), rest) if cwd else "/" + rest
        else:
            if cwd is None and target.startswith("/"):
                return False
            full = posixpath.join(_normalize(cwd, None), rest) if cwd else rest
        regex = _regex(full)
        return regex.fullmatch(target) is not None or any(
            regex.fullmatch(a) for a in _ancestors(target)
        )


def _normalize(path: str, cwd: str | None) -> str:
    path = os.path.expanduser(path)
    if cwd is not None and not path.startswith("/"):
        path = posixpath.join(os.path.expanduser(cwd), path)
    return posixpath.normpath(path)


def _ancestors(path: str) -> list[str]:
    out: list[str] = []
    head = posixpath.dirname(path)
    while head and head not in ("/", "."):
        out.append(head)
        head = posixpath.dirname(head)
    return out


_CACHE: dict[str, re.Pattern[str]] = {}


def _regex(glob: str) -> re.Pattern[str]:
    cached = _CACHE.get(glob)
    if cached is not None:
        return cached
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (close := glob.find("]", i + 2)) > 0:
            body = glob[i + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        elif glob[i] == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    compiled = re.compile("".join(out), re.DOTALL)
    if len(_CACHE) < 4096:
        _CACHE[glob] = compiled
    return compiled
