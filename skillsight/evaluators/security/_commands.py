"""Destructive shell commands: recursive forced deletes outside the workspace, force pushes,
filesystem creation, raw device writes, recursive permission changes outside the workspace,
fork bombs and piping a download into a shell."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from skillsight.evaluators.security._gate import contains_any
from skillsight.evaluators.security._roots import Roots
from skillsight.skills import split_commands

_WRAPPERS = frozenset({"sudo", "doas", "command", "exec", "nohup", "time", "nice", "env"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SAFE_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_FORK_BOMB = re.compile(r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:")
_DEVICE_REDIRECT = re.compile(r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)\w*")
_PIPE_TO_SHELL = re.compile(
    r"\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b", re.IGNORECASE
)
# The programs the argv checks below look at; other commands skip the (slow) shlex split.
_PROGRAMS = re.compile(r"\b(?:rm|git|mkfs[\w.]*|mke2fs|wipefs|dd|chmod|chown|chgrp)\b")
# The four patterns above in one alternation, which matches a command exactly when one of them
# does: the common harmless command costs one search instead of four.
_ANY = re.compile(
    "|".join(
        f"(?{'i' if p.flags & re.IGNORECASE else ''}:{p.pattern})"
        for p in (_FORK_BOMB, _DEVICE_REDIRECT, _PIPE_TO_SHELL, _PROGRAMS)
    )
)
_HOME = re.compile(r"^(?:~|\$HOME|\$\{HOME\})(?:/|$)")


@dataclass(frozen=True, slots=True)
class CommandFinding:
    kind: str
    message: str


# What makes shlex's split differ from str.split on ASCII text: quotes and escapes, and the
# whitespace str.split honours and shlex does not.
_SHLEX_SPECIAL = re.compile(r"[\\'\"\x0b\x0c\x1c-\x1f]")


def shell_words(simple: str) -> list[str]:
    """``shlex.split(simple)`` (posix, no comments), or its whitespace split when unbalanced."""
    if simple.isascii() and _SHLEX_SPECIAL.search(simple) is None:
        return simple.split()  # what shlex would give, at a fraction of the cost
    try:
        return shlex.split(simple, comments=False, posix=True)
    except ValueError:
        return simple.split()


def _argv(simple: str) -> list[str]:
    words = shell_words(simple)
    while words and (words[0] in _WRAPPERS or _ASSIGNMENT.match(words[0])):
        words = words[1:]
        while words and words[0].startswith("-") and words[0] != "--":
            words = words[1:]  # a wrapper's own flags (sudo -u root ...)
    return words


def _flags(words: list[str]) -> tuple[set[str], list[str]]:
    """(single-letter and long flags, operands) of a command's arguments."""
    flags: set[str] = set()
    operands: list[str] = []
    end = False
    for word in words:
        if end or not word.startswith("-") or word == "-":
            operands.append(word)
        elif word == "--":
            end = True
        elif word.startswith("--"):
            flags.add(word)
        else:
            flags.update(word[1:])
    return flags, operands


def _outside(target: str, roots: Roots, unplaced: list[str] | None = None) -> str | None:
    """Why deleting/changing ``target`` reaches outside the workspace, or None; a target only
    an unknown workspace could place goes to ``unplaced`` instead (no evidence, no finding)."""
    if target in ("/", "/*") or _HOME.match(target):
        return f"{target} is the filesystem root or a home directory"
    if target.startswith("$") or "$(" in target or "`" in target:
        return None  # an unexpanded variable: nothing to resolve it against
    resolved = roots.resolve(target)
    if resolved is None:
        return (
            None
            if roots.workspace is None and ".." not in target
            else (f"{target} cannot be placed inside the workspace")
        )
    if resolved in ("/", "/*"):
        return f"{target} is the filesystem root"
    if roots.allowed(resolved.rstrip("*").rstrip("/") or "/"):
        return None
    if not roots.known:
        if unplaced is not None:
            unplaced.append(target)
        return None
    return f"{target} is outside the workspace ({roots.workspace})"


# Literals without which _ANY cannot match: the fork bomb and the download piped into a shell
# need a '|', the device write a '>', the argv checks one of their program names. Most commands
# hold none, and ``in`` tests cost a fraction of a search that tries four patterns everywhere.
_PROGRAM_NAMES = ("rm", "git", "mkfs", "mke2fs", "wipefs", "dd", "chmod", "chown", "chgrp")


def may_destroy(commands: str) -> bool:
    """False when :func:`destructive` finds nothing in any of the command lines ``commands``
    joins (by newlines: no literal of the gate holds one), for certain."""
    return "|" in commands or ">" in commands or contains_any(commands, _PROGRAM_NAMES)


def destructive(
    command: str, roots: Roots, unplaced: list[str] | None = None
) -> list[CommandFinding]:
    """Destructive operations in one shell command line; deletes and permission changes that
    only a known workspace could place go to ``unplaced``."""
    if not may_destroy(command):
        return []
    if _ANY.search(command) is None:
        return []
    return _destructive(command, roots, unplaced)


def _destructive(
    command: str, roots: Roots, unplaced: list[str] | None = None
) -> list[CommandFinding]:
    found: list[CommandFinding] = []
    if _FORK_BOMB.search(command):
        found.append(CommandFinding("fork_bomb", "a shell fork bomb"))
    if _DEVICE_REDIRECT.search(command):
        found.append(CommandFinding("raw_device_write", "output redirected onto a disk device"))
    if _PIPE_TO_SHELL.search(command):
        found.append(CommandFinding("pipe_to_shell", "a download piped straight into a shell"))
    if _PROGRAMS.search(command) is None:
        return found
    for simple in split_commands(command):
        if _PROGRAMS.search(simple) is None:
            continue
        words = _argv(simple)
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        flags, operands = _flags(words[1:])
        if program == "rm" and (flags & {"r", "R", "--recursive"}) and (flags & {"f", "--force"}):
            for target in operands:
                why = _outside(target, roots, unplaced)
                if why:
                    found.append(CommandFinding("rm_rf_outside_workspace", f"{simple!r}: {why}"))
        elif program == "git" and operands[:1] == ["push"]:
            forced = flags & {"f", "--force"} or any(o.startswith("+") for o in operands[1:])
            if forced:
                found.append(
                    CommandFinding("git_force_push", f"{simple!r} rewrites remote history")
                )
        elif program.startswith("mkfs") or program in ("mke2fs", "wipefs"):
            found.append(CommandFinding("filesystem_format", f"{simple!r} formats a device"))
        elif program == "dd":
            for word in words[1:]:
                if word.startswith("of=/dev/") and word[3:] not in _SAFE_DEVICES:
                    found.append(
                        CommandFinding("raw_device_write", f"{simple!r} writes {word[3:]}")
                    )
        elif program in ("chmod", "chown", "chgrp") and (flags & {"R", "--recursive"}):
            for target in operands[1:]:
                why = _outside(target, roots, unplaced)
                if why:
                    found.append(
                        CommandFinding("recursive_permission_change", f"{simple!r}: {why}")
                    )
    return found
