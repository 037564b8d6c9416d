"""The skill catalogue: every recorded version of each skill, and how skills get into it.

Claude Code's telemetry names a skill but carries none of its SKILL.md: no description, no
``allowed-tools``, no version. Skill folders registered in the store (``serve --skills DIR``,
``skills scan --store``) give rebuilt activations their contract and the evaluators their
manifest. An activation ran one version of its skill: when its telemetry says which (an explicit
activation span's ``gen_ai.skill.version``), it is judged against that version's declared
contract; telemetry that names only the skill (Claude Code's) gets the latest recorded one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from skillsight.skills import ScanReport, scan
from skillsight.store import Store
from skillsight.store.records import SkillContract

__all__ = ["Catalogue", "CatalogueFn", "register_skill_dirs", "skill_dirs", "store_catalogue"]

log = logging.getLogger(__name__)


class Catalogue(Mapping[str, SkillContract]):
    """Per skill name, its recorded contracts, the latest first.

    As a mapping it gives each name's latest contract, so a plain ``{name: contract}`` — a
    catalogue that knows one version per skill — works wherever a catalogue is taken
    (:meth:`of` turns one into the other).
    """

    def __init__(self, versions: Mapping[str, Sequence[SkillContract]] | None = None) -> None:
        self._versions: dict[str, tuple[SkillContract, ...]] = {}
        self._by_version: dict[tuple[str, str], SkillContract] = {}
        for name, contracts in (versions or {}).items():
            if not contracts:
                raise ValueError(f"the catalogue lists skill {name!r} with no version")
            for contract in contracts:
                if contract.name != name:
                    raise ValueError(
                        f"the catalogue lists a contract of {contract.name!r} under {name!r}"
                    )
                # the first listed is the latest, so a repeated version keeps its newest row
                self._by_version.setdefault((name, contract.version), contract)
            self._versions[name] = tuple(contracts)

    @classmethod
    def of(cls, catalogue: Mapping[str, SkillContract] | None) -> Catalogue:
        """``catalogue`` as a :class:`Catalogue` (a plain mapping: one version per skill)."""
        if isinstance(catalogue, Catalogue):
            return catalogue
        return cls({name: [contract] for name, contract in (catalogue or {}).items()})

    def __getitem__(self, name: str) -> SkillContract:
        return self._versions[name][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)

    def versions(self, name: str) -> tuple[SkillContract, ...]:
        """Every recorded contract of ``name``, the latest first (empty when unknown)."""
        return self._versions.get(name, ())

    def contract(self, name: str, version: str = "") -> SkillContract | None:
        """The contract an activation of ``name`` that reported ``version`` ran under.

        No version reported: the latest recorded one. A version the catalogue does not hold:
        None — another version's allowed-tools and description are not this run's contract.
        """
        if not version:
            return self.get(name)
        return self._by_version.get((name, version))

    def __eq__(self, other: object) -> bool:
        """The same recorded versions of the same skills (a mapping's equality would compare
        only the latest of each)."""
        if not isinstance(other, Catalogue):
            return NotImplemented
        return self._versions == other._versions

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}: {len(found)}" for name, found in self._versions.items())
        return f"Catalogue({{{counts}}})"


CatalogueFn = Callable[[str], Catalogue | Mapping[str, SkillContract] | None]
"""Project id -> the skill catalogue ``rebuild_session`` joins activations to: a
:class:`Catalogue` of every recorded version, or a plain ``{name: contract}`` (one each)."""


def store_catalogue(store: Store) -> CatalogueFn:
    """The project's recorded skill catalogue (``skillsight skills scan --store``), every
    version of each skill, so an activation is joined to the version it ran."""

    def catalogue(project_id: str) -> Catalogue | None:
        entries = store.skills.versions(project_id)
        return (
            Catalogue(
                {name: [_contract(entry) for entry in found] for name, found in entries.items()}
            )
            if entries
            else None
        )

    return catalogue


def _contract(entry: Mapping[str, Any]) -> SkillContract:
    return SkillContract(
        name=str(entry["name"]),
        description=str(entry.get("description") or ""),
        allowed_tools=entry.get("allowed_tools"),
        version=str(entry.get("version") or ""),
        source_uri=str(entry.get("source_uri") or ""),
    )


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
        store.skills.insert(project, report.skills)
    return report
