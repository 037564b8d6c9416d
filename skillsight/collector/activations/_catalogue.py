"""The skill catalogue an activation is joined to: every recorded version of each skill.

An activation ran one version of its skill. When its telemetry says which (an explicit
activation span's ``gen_ai.skill.version``), it is judged against that version's declared
contract; telemetry that names only the skill (Claude Code's) gets the latest recorded one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from skillsight.collector.activations.model import SkillContract

__all__ = ["Catalogue"]


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

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}: {len(found)}" for name, found in self._versions.items())
        return f"Catalogue({{{counts}}})"
