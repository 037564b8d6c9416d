"""Skills the service is pointed at (``skillsight serve --skills DIR``), put in the catalogue.

Claude Code's telemetry names a skill but carries none of its SKILL.md: no description, no
``allowed-tools``, no version. With the skill folders registered, rebuilt activations get their
contract and the evaluators their manifest, so allowed-tools, script and selection checks apply.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from skillsight.collector.store import Store
from skillsight.skills import ScanReport, scan

log = logging.getLogger(__name__)


def skill_dirs(raw: str) -> list[Path]:
    """The folders of a ``SKILLSIGHT_SKILLS_DIRS`` value (``os.pathsep``-separated)."""
    return [Path(part) for part in raw.split(os.pathsep) if part.strip()]


def register_skill_dirs(store: Store, dirs: Sequence[Path], projects: Sequence[str]) -> ScanReport:
    """Scan ``dirs`` and record every skill that loads in each project's catalogue.

    A skill with spec violations is still registered (its contract is what the agent ran
    under); the violations are logged, as ``skillsight skills scan`` would print them.
    """
    report = scan(dirs)
    for violation in report.violations:
        log.warning("%s: %s: %s", violation.file, violation.rule, violation.message)
    for project in projects:
        store.insert_skills(project, report.skills)
    return report
