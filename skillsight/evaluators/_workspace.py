"""Where the agent worked: its workspace and the skill folder it loaded, as far as evidence goes.

A path can only be called "outside the workspace" when the workspace is known. Claude Code's
native telemetry does not report one, and the skill catalogue may have been scanned from another
checkout (a CI job pushing SKILL.md to a service elsewhere), so the catalogue's folder says
nothing about the agent's machine. The workspace is, in order:

1. ``given``: the evaluation context names it (a golden rerun knows its fresh workspace);
2. ``reported``: the telemetry reports it (``process.working_directory`` on the rows' resource,
   which Claude Code takes from ``OTEL_RESOURCE_ATTRIBUTES``);
3. ``skill folder``: the folder holding the ``.claude/skills`` the agent loaded the skill from,
   when the telemetry shows that folder: the base directory Claude Code's Skill tool announces,
   the source URI an activation span reported, an absolute path the agent used inside
   ``…/skills/<name>/``, or the catalogue's folder when the agent's own paths lie inside it;
4. ``paths``: a relative path of a command (``data/sales.csv``) that an absolute path of another
   call ends with (``/…/project/data/sales.csv``) places the directory the command ran in;
5. unknown: no path can be placed, and the rules that need a workspace do not fire.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlsplit

from skillsight.evaluators._calls import PATH_KEYS
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._views import views_of
from skillsight.store.records import Activation

__all__ = ["Place", "place_of"]

# Claude Code's Skill tool answers with this line first.
_BASE_DIRECTORY = re.compile(r"^Base directory for this skill: (/\S+)", re.MULTILINE)
_MARKER = "/.claude/skills/"
# Words of a command line that look like paths: absolute ones, or relative ones with a folder.
_WORD = re.compile(r"""(?:^|(?<=[\s'"=]))(/[^\s'";|&<>()]+|[\w.-]+/[^\s'";|&<>()]*)""")


@dataclass(frozen=True, slots=True)
class Place:
    """The agent's workspace and skill folder, with how each was known."""

    workspace: str | None
    how: str
    """``given``, ``reported``, ``skill folder``, ``paths`` or ``unknown``."""
    skill_dir: str | None
    """The skill folder on the agent's machine, when the telemetry shows it."""

    def describe(self) -> str:
        """One clause for a reason: which root was used and how it was known."""
        if self.workspace is None:
            return "workspace unknown (not reported, and no path of the agent's places it)"
        how = {
            "given": "given",
            "reported": "reported by the telemetry (process.working_directory)",
            "skill folder": f"the project holding the skill folder {self.skill_dir}",
            "paths": "inferred from the paths the calls used",
        }[self.how]
        return f"workspace {self.workspace} ({how})"


@lru_cache(maxsize=4096)
def _normal(path: str) -> str:
    return posixpath.normpath(path)


def _paths(activation: Activation) -> tuple[list[str], list[str]]:
    """(absolute, relative) paths the agent named: file-tool paths and the path-like words of
    its commands, in one pass."""
    absolute: list[str] = []
    relative: list[str] = []
    for parsed, command, _ in views_of(activation).views:
        if isinstance(parsed, dict):
            for key in PATH_KEYS:
                value = parsed.get(key)
                if not isinstance(value, str) or not value:
                    continue
                if value[0] == "/":
                    absolute.append(_normal(value))
                elif value[0] not in "~$":
                    relative.append(value)
        if command and "/" in command:
            for word in _WORD.findall(command):
                if word[0] == "/":
                    absolute.append(_normal(word))
                elif ".." not in word:
                    relative.append(word)
    return absolute, relative


def _uri_path(uri: str) -> str | None:
    path = unquote(urlsplit(uri).path) if uri.startswith("file:") else uri
    if not path.startswith("/"):
        return None
    path = _normal(path)
    return posixpath.dirname(path) if path.endswith("/SKILL.md") else path


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _agent_skill_dir(
    activation: Activation, context: EvaluationContext, paths: list[str]
) -> str | None:
    """The skill's folder on the agent's machine, from what the telemetry shows."""
    announced = _BASE_DIRECTORY.search(activation.skill_output or "")
    if announced:
        return _normal(announced.group(1))
    contract = activation.contract
    if contract is not None and "source_uri" in contract.reported and contract.source_uri:
        found = _uri_path(contract.source_uri)
        if found:
            return found
    needle = f"/skills/{activation.skill_name}"
    for path in paths:
        at = path.find(needle + "/")
        if at < 0 and path.endswith(needle):
            at = len(path) - len(needle)
        if at >= 0:
            return path[: at + len(needle)]
    if context.manifest is not None:
        folder = _normal(str(context.manifest.path))
        if any(_within(path, folder) for path in paths):
            return folder
    return None


def _from_paths(absolute_paths: list[str], relative_paths: list[str]) -> str | None:
    """The directory a relative path resolves from, when an absolute path of the agent's ends
    with it (and all such pairs agree)."""
    absolute = set(absolute_paths)
    if not absolute:
        return None
    roots = set()
    for relative in relative_paths:
        tail = "/" + _normal(relative).lstrip("./")
        if tail == "/.":
            continue
        for path in absolute:
            if path.endswith(tail) and len(path) > len(tail):
                roots.add(path[: -len(tail)] or "/")
    return roots.pop() if len(roots) == 1 else None


# allowed_tools and security ask for the same activation's place one after the other (the
# scheduler runs evaluator by evaluator over a batch): kept for the last activations seen,
# checked by identity against the activation and its context.
_PLACES: dict[int, tuple[Activation, EvaluationContext, Place]] = {}
_PLACES_MAX = 4096


def place_of(activation: Activation, context: EvaluationContext) -> Place:
    """Where the activation's agent worked (see the module docstring for the order)."""
    held = _PLACES.get(id(activation))
    if held is not None and held[0] is activation and held[1] is context:
        return held[2]
    place = _place_of(activation, context)
    if len(_PLACES) >= _PLACES_MAX:
        _PLACES.clear()
    _PLACES[id(activation)] = (activation, context, place)
    return place


def _place_of(activation: Activation, context: EvaluationContext) -> Place:
    if context.workspace:
        workspace = _normal(context.workspace)
        if context.manifest is not None:
            # a given workspace is the caller's word: a manifest inside it is the agent's copy
            folder = _normal(str(context.manifest.path))
            if _within(folder, workspace):
                return Place(workspace, "given", folder)
        skill_dir = _agent_skill_dir(activation, context, _paths(activation)[0])
        return Place(workspace, "given", skill_dir)
    absolute, relative = _paths(activation)
    skill_dir = _agent_skill_dir(activation, context, absolute)
    if activation.workspace.startswith("/"):
        return Place(_normal(activation.workspace), "reported", skill_dir)
    if skill_dir is not None:
        at = (skill_dir + "/").find(_MARKER)
        if at >= 0:
            return Place(skill_dir[:at] or "/", "skill folder", skill_dir)
    inferred = _from_paths(absolute, relative)
    if inferred is not None:
        return Place(inferred, "paths", skill_dir)
    return Place(None, "unknown", skill_dir)
