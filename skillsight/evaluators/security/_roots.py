"""Where an activation may touch files: the workspace, the skill's folder, extra roots."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillsight.evaluators._calls import absolute
from skillsight.evaluators.security._gate import contains_any

# Places whose reading or writing is a finding wherever the workspace is.
_SENSITIVE = re.compile(
    r"(?:^|[\s'\"=:/])(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+|/Users/[^/\s]+)?/?"
    r"(?:\.ssh(?:/|\b)|\.aws/credentials|\.aws/config|\.config/gcloud|\.netrc\b|\.pgpass\b|"
    r"\.docker/config\.json|\.kube/config|\.gnupg(?:/|\b))"
    r"|(?:^|[\s'\"=])/etc/(?:shadow|gshadow|sudoers)\b"
    r"|(?:^|[\s'\"=/])id_(?:rsa|ecdsa|ed25519|dsa)(?:\b|$)"
)


_SENSITIVE_ANCHORS = (
    ".ssh",
    ".aws/",
    "gcloud",
    ".netrc",
    ".pgpass",
    ".docker/",
    ".kube/",
    ".gnupg",
    "/etc/",
    "id_",
)


def may_be_sensitive(text: str) -> bool:
    """False when :func:`sensitive_reference` finds nothing in ``text``, for certain."""
    return contains_any(text, _SENSITIVE_ANCHORS)


def sensitive_reference(text: str) -> str | None:
    """The sensitive location ``text`` mentions, or None."""
    if not contains_any(text, _SENSITIVE_ANCHORS):
        return None
    match = _SENSITIVE.search(text)
    return match.group(0).strip(" '\"=:") if match else None


@dataclass(frozen=True, slots=True)
class Roots:
    workspace: str | None
    skill_dir: str | None
    extra: tuple[str, ...] = ()
    _bounds: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)
    """Each root and the prefix of what is below it: what :func:`within` derives per call."""

    def __post_init__(self) -> None:
        roots = (self.workspace, self.skill_dir, *self.extra)
        bounds = tuple((r, r.rstrip("/") + "/") for r in roots if r)
        object.__setattr__(self, "_bounds", bounds)

    @property
    def known(self) -> bool:
        """Whether the workspace is known: without it no path is called "outside" it (the
        skill folder alone says nothing of where the agent's own files are)."""
        return self.workspace is not None

    def allowed(self, path: str) -> bool:
        """Whether normalized absolute ``path`` is in the workspace, the skill folder or one of
        the extra roots (:func:`within` one of them). Temporary directories are not exempt:
        /tmp holds other people's files too, and a skill has no business deleting them."""
        for root, below in self._bounds:  # noqa: SIM110 - a loop: any() over a generator costs more
            if path == root or path.startswith(below):
                return True
        return False

    def resolve(self, path: str) -> str | None:
        """``path`` made absolute against the workspace (None when unresolvable)."""
        return absolute(path, self.workspace)
