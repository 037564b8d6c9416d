"""What the scheduler knows about an activation beyond its record: the evaluation context.

- the project's skill catalogue (``Store.skills.contracts``, re-read every ``catalogue_ttl_s``):
  the skills the agent could see, for telemetry that does not list them;
- the skill's manifest, as :mod:`._manifests` finds it (its SKILL.md on this machine, else as
  the catalogue recorded it) when it is the version the activation ran;
- the project's rolling per-skill baseline of earlier production activations (a paired
  rerun's are scored against it, never added to it). Online (``seed=True``), a
  skill's baseline starts from the activations already stored the first time the skill is seen,
  so a restarted service (or one of several workers) compares with history at once rather than
  after five new activations; the activation being scored is never part of its own baseline.

Thread-safe: worker threads of the scheduler build contexts at the same time.
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from skillsight.evaluators._baseline import Baseline, RollingBaseline, restored_baseline
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._efficiency import EfficiencyEvaluator
from skillsight.evaluators._model import Evaluation
from skillsight.evaluators._skill_selection import SkillSelectionEvaluator, restored_catalogue
from skillsight.evaluators.judges import judge_context
from skillsight.evaluators.scheduler._manifests import SkillManifests
from skillsight.rebuild.trajectories.atif import Trajectory
from skillsight.store import ScoredBefore, SkillEntry, Store
from skillsight.store.records import Activation, VisibleSkill

log = logging.getLogger(__name__)

_OBSERVED_MAX = 100_000  # activation ids remembered so a rescored one is not counted twice


class LaterMessages:
    """What the agent said after each activation of a session: the integration messages of
    the session's activations that come after its own, in the same agent context and the same
    turn (the same user request), in order. A later turn answers another request: what the
    agent said there does not tell whether it used this skill's output (and a rebuild on the
    next prompt must not change this activation's verdict). A record from before turns were
    recorded (no ``request_step_id``) is not cut.

    Indexed once for all the activations at hand: each activation looking through every other
    one cost the square of a long session's activations at every hand-over."""

    __slots__ = ("_by_context", "_by_turn")

    def __init__(self, siblings: Sequence[Activation]) -> None:
        by_context: dict[tuple[str, str], list[tuple[int, str]]] = {}
        by_turn: dict[tuple[str, str, int], list[tuple[int, str]]] = {}
        for sibling in siblings:
            step, message = sibling.integration_step_id, sibling.integration_message
            if step is None or not message:
                continue
            where = (sibling.session_id, sibling.decision_trajectory_id)
            by_context.setdefault(where, []).append((step, message))
            if sibling.request_step_id is not None:
                by_turn.setdefault((*where, sibling.request_step_id), []).append((step, message))
        self._by_context = {key: _indexed(found) for key, found in by_context.items()}
        self._by_turn = {key: _indexed(found) for key, found in by_turn.items()}

    def after(self, activation: Activation) -> tuple[str, ...]:
        step = activation.integration_step_id
        if step is None:
            return ()
        where = (activation.session_id, activation.decision_trajectory_id)
        turn = activation.request_step_id
        steps, messages = (
            self._by_context.get(where) if turn is None else self._by_turn.get((*where, turn))
        ) or ((), ())
        return tuple(dict.fromkeys(messages[bisect_right(steps, step) :]))


def _indexed(found: list[tuple[int, str]]) -> tuple[list[int], list[str]]:
    found.sort()
    return [step for step, _ in found], [message for _, message in found]


@dataclass(frozen=True, slots=True)
class StoredScores:
    """What a batch's stored evaluations scored (:meth:`ContextAssembler.stored_scores`)."""

    before: dict[str, dict[tuple[str, str], ScoredBefore]]
    """Per activation id and (evaluator, version), what its newest row scored."""
    verdicts: dict[str, dict[tuple[str, str], Evaluation]]
    """Per activation id, its stored judge verdicts that say what prompt they answered."""


@dataclass(slots=True)
class _Recalled:
    """What an activation's stored evaluations say it was compared with."""

    baseline: Baseline | None = None
    has_baseline: bool = False
    """Efficiency recorded a baseline (``None`` then means the skill had none yet)."""
    catalogue: tuple[VisibleSkill, ...] | None = None


class ContextAssembler:
    """Builds an :class:`EvaluationContext` per activation; caches what it reads."""

    def __init__(
        self,
        store: Store,
        *,
        catalogue_ttl_s: float = 10.0,
        seed: bool = True,
        recall: bool = True,
        trajectories: bool = False,
        judges: Collection[str] = (),
    ) -> None:
        self.store = store
        self.catalogue_ttl_s = catalogue_ttl_s
        self.seed = seed
        self.recall_stored = recall
        """Read what the activations' stored evaluations scored (:meth:`stored_scores`): an
        activation handed over again with the same inputs keeps its rows, and one this process
        did not compare itself is compared with what they record (the efficiency baseline, the
        catalogue). Off (a backfill): everything is scored afresh."""
        self.trajectories = trajectories
        """Also read the session's trajectory (for judges whose prompt shows it)."""
        self.judges = frozenset(judges)
        """The judges scored: also read the activations' stored verdicts of these
        (:meth:`stored_scores`)."""
        self._seeded: set[tuple[str, str]] = set()
        self._catalogues: dict[str, tuple[float, Mapping[str, SkillEntry]]] = {}
        self._manifests = SkillManifests()
        self._baselines: dict[str, RollingBaseline] = {}
        self._observed: OrderedDict[str, None] = OrderedDict()
        # Per (project, activation id), the baseline it was compared with before it was
        # observed: a session rebuilt again is scored again, and by then the window holds the
        # activation itself and the ones after it.
        self._compared: OrderedDict[tuple[str, str], Baseline | None] = OrderedDict()
        # Per (project, activation id), the catalogue it was first shown with (the one
        # skill_selection compares with when the telemetry did not record what the agent saw):
        # a catalogue changed since, by a scan or a push, is not what the agent could see then.
        self._shown: OrderedDict[tuple[str, str], tuple[VisibleSkill, ...]] = OrderedDict()
        self._visible: tuple[Mapping[str, SkillEntry] | None, tuple[VisibleSkill, ...]] = (
            None,
            (),
        )
        # Per (project, activation id), what stored evaluations say it was compared with:
        # scored before this process compared it (a restart, another worker).
        self._recalled: OrderedDict[tuple[str, str], _Recalled] = OrderedDict()
        self._lock = threading.Lock()

    def catalogue(self, project_id: str) -> Mapping[str, SkillEntry]:
        now = time.monotonic()
        with self._lock:
            cached = self._catalogues.get(project_id)
        if cached is not None and now - cached[0] < self.catalogue_ttl_s:
            return cached[1]
        entries = self.store.skills.contracts(project_id)
        with self._lock:
            self._catalogues[project_id] = (now, entries)
        return entries

    def context(
        self,
        activation: Activation,
        siblings: Sequence[Activation] | LaterMessages = (),
        earlier: Mapping[tuple[str, str], Evaluation] | None = None,
    ) -> EvaluationContext:
        """The activation's context; the baseline is the one *before* it is observed.

        ``siblings``: other activations of its session at hand (or their
        :class:`LaterMessages`, indexed once for many); what the agent said after this one's
        integration message (their integration messages) is where an integration message that
        only announced the next step leaves the use of the skill's values. ``earlier``:
        its stored judge verdicts (:meth:`stored_scores`)."""
        entries = self.catalogue(activation.project_id)
        visible = self._shown_with(activation, entries)
        manifest = self._manifests.of(activation, entries.get(activation.skill_name))
        if self.seed:
            self._seed(activation)
        context = EvaluationContext(
            manifest=manifest,
            baseline=self._baseline_before(activation),
            catalogue=visible,
            later_messages=(
                siblings if isinstance(siblings, LaterMessages) else LaterMessages(siblings)
            ).after(activation),
            earlier=earlier or {},
        )
        if not self.trajectories:
            return context
        return judge_context(context, trajectory=self._trajectory(activation))

    def _trajectory(self, activation: Activation) -> Trajectory | None:
        document = self.store.trajectories.get(activation.project_id, activation.session_id)
        if document is None:
            return None
        try:
            return Trajectory.model_validate_json(document)
        except ValueError:
            log.warning("stored trajectory of session %s does not parse", activation.session_id)
            return None

    def stored_scores(self, project_id: str, activations: Sequence[Activation]) -> StoredScores:
        """What the activations' stored evaluations scored (none when the assembler reads
        neither ``recall`` nor ``judges``): per activation id, what the newest row of each
        (evaluator, version) scored (the digest of its inputs: an activation handed over again
        with the same inputs keeps those verdicts), and, with ``judges``, the verdicts of
        those that say what prompt they answered. And, for those this process has not
        compared, what they were compared with then, remembered: the efficiency baseline and
        the catalogue skill_selection saw. A session rebuilt again after a restart, or scored
        first by another worker, is compared with that, not with a window that by now holds it
        and the activations after it, nor with a catalogue changed since. Only rows recorded
        under each activation's current skill are read (through the evaluations' sort key): one
        recorded under another skill scored another record of it, whose digest differs. What
        was scored is read from the narrow digests (:meth:`Evaluations.scored_before`); the
        whole rows only of the activations a judge has scored, which a judge's sample keeps
        few."""
        skill_of = {a.activation_id: a.skill_name for a in activations}
        ids, skills = list(skill_of), list(skill_of.values())
        if not ids or not (self.recall_stored or self.judges):
            return StoredScores({}, {})
        scored = self.store.evaluations.scored_before(project_id, ids, skills=skills)
        verdicts: dict[str, dict[tuple[str, str], Evaluation]] = {}
        judged = list(dict.fromkeys(r.activation_id for r in scored if r.evaluator in self.judges))
        if judged:  # the whole rows, for the judges
            found = self.store.evaluations.of(
                project_id, judged, skills=[skill_of[i] for i in judged]
            )
            verdicts = {
                key: {
                    (str(r["evaluator"]), str(r["evaluator_version"])): Evaluation.from_row(r)
                    for r in rows
                    if r["judge_model"] and r["inputs_hash"]
                }
                for key, rows in found.items()
            }
        return StoredScores(
            self._remember(project_id, scored if self.recall_stored else []), verdicts
        )

    def _remember(
        self, project_id: str, rows: Sequence[ScoredBefore]
    ) -> dict[str, dict[tuple[str, str], ScoredBefore]]:
        """``rows`` (newest first) by activation id and (evaluator, version); what they were
        compared with remembered for activations this process has not compared."""
        before: dict[str, dict[tuple[str, str], ScoredBefore]] = {}
        with self._lock:
            known = {
                key
                for key in ((project_id, row.activation_id) for row in rows)
                if key in self._compared or key in self._recalled
            }
        recalled: dict[tuple[str, str], _Recalled] = {}
        broken: set[tuple[str, str]] = set()
        for row in rows:  # newest first
            scored = (row.evaluator, row.evaluator_version)
            before.setdefault(row.activation_id, {})[scored] = row
            key = (project_id, row.activation_id)
            if key in known or key in broken or not row.compared_with:
                continue
            found = recalled.setdefault(key, _Recalled())
            try:
                if row.evaluator == EfficiencyEvaluator.name and not found.has_baseline:
                    found.baseline = restored_baseline(row.compared_with)
                    found.has_baseline = True
                elif row.evaluator == SkillSelectionEvaluator.name and found.catalogue is None:
                    found.catalogue = self._shared(restored_catalogue(row.compared_with))
            except ValueError:
                log.warning("what activation %s was compared with does not parse", key[1])
                broken.add(key)
                recalled.pop(key, None)
        with self._lock:
            self._recalled.update(recalled)
            while len(self._recalled) > _OBSERVED_MAX:
                self._recalled.popitem(last=False)
        return before

    def _shared(self, catalogue: tuple[VisibleSkill, ...]) -> tuple[VisibleSkill, ...]:
        """The catalogue at hand when ``catalogue`` equals it (one object for the many
        activations that recall the same)."""
        current = self._visible[1]
        return current if current == catalogue else catalogue

    def _shown_with(
        self, activation: Activation, entries: Mapping[str, SkillEntry]
    ) -> tuple[VisibleSkill, ...]:
        """The catalogue the activation was first shown with: recalled from its stored
        evaluations, or the one at hand when this process first built its context."""
        key = (activation.project_id, activation.activation_id)
        with self._lock:
            recalled = self._recalled.get(key)
            if recalled is not None and recalled.catalogue is not None:
                return recalled.catalogue
            shown = self._shown.get(key)
            if shown is not None:
                self._shown.move_to_end(key)
                return shown
            last, visible = self._visible
            if entries is not last:  # built once per catalogue read, shared by activations
                visible = tuple(
                    VisibleSkill(name=name, description=str(entry.get("description") or ""))
                    for name, entry in sorted(entries.items())
                )
                self._visible = (entries, visible)
            self._shown[key] = visible
            while len(self._shown) > _OBSERVED_MAX:
                self._shown.popitem(last=False)
            return visible

    def _baseline_before(self, activation: Activation) -> Baseline | None:
        """The skill's baseline before ``activation`` was observed: the current one until it
        is, then the one it was compared with then (its session rebuilt is scored again), here
        or, as :meth:`stored_scores` read it, in an earlier process."""
        key = (activation.project_id, activation.activation_id)
        with self._lock:
            observed = activation.activation_id in self._observed
            if observed and key in self._compared:
                self._compared.move_to_end(key)
                return self._compared[key]
            recalled = self._recalled.get(key)
            if recalled is not None and recalled.has_baseline:  # compared before this process
                return recalled.baseline
        # observed but not compared here: loaded with the stored window at start (no
        # evaluation recorded its baseline), or out of the memory above; the window then holds
        # it, and it is left out
        baseline = self._baseline(activation.project_id).get(
            activation.skill_name, excluding=activation.activation_id if observed else ""
        )
        with self._lock:
            self._compared[key] = baseline
            self._compared.move_to_end(key)
            while len(self._compared) > _OBSERVED_MAX:
                self._compared.popitem(last=False)
        return baseline

    def observe(self, activation: Activation) -> None:
        """Add a scored activation to its skill's baseline (once, however often rescored)."""
        with self._lock:
            if activation.activation_id in self._observed:
                return
            self._observed[activation.activation_id] = None
            while len(self._observed) > _OBSERVED_MAX:
                self._observed.popitem(last=False)
        self._baseline(activation.project_id).observe(activation)

    def _seed(self, activation: Activation) -> None:
        key = (activation.project_id, activation.skill_name)
        with self._lock:
            if key in self._seeded:
                return
            self._seeded.add(key)
        baseline = self._baseline(activation.project_id)
        stored = self.store.activations.find(
            activation.project_id,
            skill=activation.skill_name,
            limit=baseline.window,
            production=True,
        )
        for earlier in reversed(stored):  # oldest first, as they were observed
            if earlier.activation_id != activation.activation_id:
                self.observe(earlier)

    def _baseline(self, project_id: str) -> RollingBaseline:
        with self._lock:
            baseline = self._baselines.get(project_id)
            if baseline is None:
                baseline = self._baselines[project_id] = RollingBaseline()
            return baseline
