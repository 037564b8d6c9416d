"""Split a shell command line into the simple commands a permission check must look at.

``a && b``, ``a || b``, ``a; b``, ``a | b``, ``a & b``, newlines and ``( … )`` subshells separate
commands; ``$( … )`` and backtick substitutions are commands too (their text is checked on its
own, and the outer command keeps the substitution text). Quotes (``'…'``, ``"…"``) and backslash
escapes protect operators. This is a tokenizer for permission checks, not a shell: it never
expands anything.
"""

from __future__ import annotations

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")


def split_commands(command: str) -> list[str]:
    """The simple commands of ``command``, stripped, empty ones dropped, in order."""
    parts: list[str] = []
    _split(command, parts)
    return [p for p in (part.strip() for part in parts) if p]


def _split(command: str, out: list[str]) -> None:
    current: list[str] = []
    i, n = 0, len(command)
    quote: str | None = None
    while i < n:
        ch = command[i]
        if quote == "'":
            current.append(ch)
            if ch == "'":
                quote = None
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            current.append(command[i : i + 2])
            i += 2
            continue
        if ch == "$" and command.startswith("$((", i):
            # arithmetic expansion: no command inside, keep it as one word
            end = _closing(command, i + 2)
            current.append(command[i : end + 1])
            i = end + 1
            continue
        if ch == "$" and command.startswith("$(", i):
            end = _closing(command, i + 2)
            inner = command[i + 2 : end]
            _split(inner, out)
            current.append(command[i : end + 1])
            i = end + 1
            continue
        if ch == "`":
            end = command.find("`", i + 1)
            end = n if end < 0 else end
            _split(command[i + 1 : end], out)
            current.append(command[i : end + 1])
            i = end + 1
            continue
        if quote == '"':
            current.append(ch)
            if ch == '"':
                quote = None
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
            i += 1
            continue
        op = next((o for o in _OPERATORS if command.startswith(o, i)), None)
        # `2>&1`, `>&2` and `&>` are redirections, not background operators
        if op == "&" and (command[i - 1 : i] in (">", "<") or command[i + 1 : i + 2] == ">"):
            op = None
        if op is not None:
            out.append("".join(current))
            current = []
            i += len(op)
            continue
        current.append(ch)
        i += 1
    out.append("".join(current))


def _closing(command: str, start: int) -> int:
    """Index of the ``)`` closing a ``$(`` whose body starts at ``start`` (or the end)."""
    depth = 1
    i, n = start, len(command)
    quote: str | None = None
    while i < n:
        ch = command[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n
