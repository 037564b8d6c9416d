"""The skill catalogue: parse SKILL.md folders, version them, check their allowed-tools.

Depends on the standard library and PyYAML only, so the in-process instrumentation can use it.
"""

from __future__ import annotations

from skillsight.errors import SkillError
from skillsight.skills._allowed_tools import AllowedTools, PatternProblem, ToolRule, Verdict
from skillsight.skills._archive import MAX_ARCHIVE_BYTES, pack_skills, unpack_skills
from skillsight.skills._discovery import find_skill_dir, skill_roots
from skillsight.skills._manifest import SkillManifest, load_skill
from skillsight.skills._scan import ScanReport, find_skill_files, scan
from skillsight.skills._shell import split_commands
from skillsight.skills._validate import Violation, validate
from skillsight.skills._version import skill_version

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "AllowedTools",
    "PatternProblem",
    "ScanReport",
    "SkillError",
    "SkillManifest",
    "ToolRule",
    "Verdict",
    "Violation",
    "find_skill_dir",
    "find_skill_files",
    "load_skill",
    "pack_skills",
    "scan",
    "skill_roots",
    "skill_version",
    "split_commands",
    "unpack_skills",
    "validate",
]
