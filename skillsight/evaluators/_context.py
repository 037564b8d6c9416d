"""What an evaluator may know beyond the activation itself.

Everything here is optional: an evaluator that lacks what it needs returns a ``None`` score with
a reason rather than guessing. The context is read-only for evaluators, so one context can be
shared by many evaluations and the same inputs always give the same evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from skillsight.evaluators._baseline import Baseline
from skillsight.evaluators._embedding import Embedder
from skillsight.evaluators._model import Evaluation
from skillsight.skills import SkillManifest
from skillsight.store.records import VisibleSkill


@dataclass(frozen=True, slots=True)
class GoldenExpectation:
    """What a golden case expects of the run that produced the activation."""

    expected_skills: tuple[str, ...] | None = None
    """Skills the run should activate (``()`` = rightly none); ``None`` = the case does not say."""
    expected_script: str | None = None
    """A script (skill-relative path or file name) the run should execute."""
    activated_skills: tuple[str, ...] | None = None
    """Skills the whole run activated; ``None`` = only this activation's skill is known."""


@dataclass(frozen=True, slots=True)
class EvaluationContext:
    """Inputs beyond the activation. Build one per activation, or share one across a batch."""

    manifest: SkillManifest | None = None
    """The skill as loaded from its folder (body, scripts, allowed-tools) when readable."""
    baseline: Baseline | None = None
    """The skill's rolling baseline, computed from activations before this one."""
    golden: GoldenExpectation | None = None
    embedder: Embedder | None = None
    workspace: str | None = None
    """The agent's working directory; derived from the skill's path when not given."""
    extra_roots: tuple[str, ...] = field(default=())
    """More folders that count as inside the workspace (e.g. a scratch directory)."""
    later_messages: tuple[str, ...] = field(default=())
    """Agent messages after the integration message (up to the final answer), when the caller
    has the trajectory: an integration message that is only the next plan step ("now the
    other skill") leaves the use of the skill's values to these."""
    catalogue: tuple[VisibleSkill, ...] = field(default=())
    """The skills the agent could see, for activations whose telemetry does not list them
    (Claude Code's native telemetry does not): the project's scanned skill catalogue."""
    earlier: Mapping[tuple[str, str], Evaluation] = field(default_factory=dict)
    """The activation's stored evaluations, by (evaluator, version), when the caller read them
    (the online scheduler does for judges): a judge shown the same prompt again answers with
    its stored verdict instead of paying for another (a session is scored again at each
    rebuild)."""


EMPTY_CONTEXT = EvaluationContext()
