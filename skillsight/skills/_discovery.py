"""Find a skill's folder where Claude Code would load it from."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from skillsight.skills._frontmatter import FrontmatterProblem, split_frontmatter

_SKILL_MD = "SKILL.md"


def skill_roots(
    *, cwd: str | os.PathLike[str], extra_dirs: Iterable[str | os.PathLike[str]] = ()
) -> list[Path]:
    """Directories that hold skill folders, in Claude Code's precedence order.

    Personal skills first (they override project skills of the same name):
    ``$CLAUDE_CONFIG_DIR/skills`` when that variable is set, else ``~/.claude/skills``. Then
    project skills: ``.claude/skills`` in ``cwd`` and each parent up to the repository root (the
    first directory with a ``.git``) or the filesystem root, nearest first. Then each extra
    directory (plugins, lowest): the directory itself and its ``skills`` subdirectory.
    """
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    user = Path(config_dir).expanduser() if config_dir else Path.home() / ".claude"
    roots: list[Path] = [user / "skills"]
    here = Path(os.path.abspath(Path(cwd).expanduser()))
    for directory in (here, *here.parents):
        roots.append(directory / ".claude" / "skills")
        if (directory / ".git").exists():
            break
    for extra in extra_dirs:
        extra_path = Path(extra).expanduser()
        roots += [extra_path, extra_path / "skills"]
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def find_skill_dir(
    name: str,
    *,
    cwd: str | os.PathLike[str],
    extra_dirs: Iterable[str | os.PathLike[str]] = (),
) -> Path | None:
    """The folder of the skill called ``name``, or None.

    In each root, in order, a folder named ``name`` with a SKILL.md wins; otherwise a folder
    whose SKILL.md frontmatter declares ``name``. A plugin-namespaced name (``plugin:skill``) is
    looked up by its skill part.
    """
    if not name or "/" in name or name in (".", ".."):
        return None
    wanted = name.rsplit(":", 1)[-1]
    for root in skill_roots(cwd=cwd, extra_dirs=extra_dirs):
        direct = root / wanted
        if (direct / _SKILL_MD).is_file():
            return direct
        for folder in _skill_folders(root):
            if _declared_name(folder / _SKILL_MD) == wanted:
                return folder
    return None


def _skill_folders(root: Path) -> Iterator[Path]:
    try:
        children = sorted(root.iterdir())
    except OSError:
        return
    for child in children:
        if (child / _SKILL_MD).is_file():
            yield child


def _declared_name(skill_md: Path) -> str | None:
    try:
        data = split_frontmatter(skill_md.read_text(encoding="utf-8")).data
    except (OSError, UnicodeDecodeError, FrontmatterProblem):
        return None
    name = data.get("name")
    return name.strip() if isinstance(name, str) else None
