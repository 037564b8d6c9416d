"""``skill_selection``: was this a plausible skill to pick for the request?

With a golden case that lists the expected skills: set F1 of the skills the run activated
against them. Otherwise, from the request and the skills the agent could see, with cosine
similarities of MiniLM embeddings (``"name: description"`` for a skill, as the agent sees it):

    s = sim(request, chosen skill)      b = max sim(request, any other visible skill)
    fit    = clamp(s / FIT)
    margin = 1                                   if fit = 1, or s >= b, or no other is visible
           = clamp(1 - (b - s) / MARGIN_SPAN)    otherwise
    score  = fit * margin, or 0 when the request names another visible skill and not this one

A skill whose description fits the request (s >= FIT) is a plausible pick whatever else is
visible: a request with two intents rightly activates two skills, each closer to one half.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache

from skillsight.evaluators._context import EMPTY_CONTEXT, EvaluationContext
from skillsight.evaluators._embedding import Embedder, cosine
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import Evaluation, Finding
from skillsight.store.records import Activation, VisibleSkill

FIT = 0.3
"""Cosine similarity from which a description fits the request (MiniLM: unrelated texts stay
near 0.1, a skill written for the request reaches 0.4-0.8)."""
MARGIN_SPAN = 0.25
"""A poorly fitting pick with a visible skill this much closer to the request scores 0."""


@lru_cache(maxsize=4096)
def skill_text(name: str, description: str) -> str:
    # Cached: the same catalogue recurs in every activation, and one string object per text
    # keeps its hash for the embedding cache's lookups.
    return f"{name}: {description}" if description else name


@lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE)


def _named(request: str, name: str) -> bool:
    """Whether the request names the skill: the name as a whole word, or ``/name``."""
    # On ASCII text a case-insensitive match is a match of the lower-cased texts, so a name
    # absent from the lower-cased request cannot match (elsewhere case folding has surprises:
    # the Kelvin sign matches k).
    if request.isascii() and name.isascii() and name.lower() not in request.lower():
        return False
    return _name_pattern(name).search(request) is not None


def visible_skills(activation: Activation, context: EvaluationContext) -> list[VisibleSkill]:
    """What the agent could see: as recorded with the activation, else the catalogue."""
    return list(activation.visible_skills) or list(context.catalogue)


_last_stored: tuple[object, str] = ((), "[]")


def stored_catalogue(catalogue: Sequence[VisibleSkill]) -> str:
    """The catalogue a verdict compared with, as its evaluation row keeps it (``[[name,
    description], ...]``). The catalogue a scheduler hands every activation is one object until
    it is read again, so the text of the last one is kept."""
    global _last_stored
    last, text = _last_stored
    if catalogue is last:
        return text
    text = json.dumps(
        [[skill.name, skill.description] for skill in catalogue],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    _last_stored = (catalogue, text)
    return text


def restored_catalogue(text: str) -> tuple[VisibleSkill, ...]:
    """The catalogue :func:`stored_catalogue` wrote; ``ValueError`` when ``text`` is not one."""
    try:
        found = json.loads(text)
    except RecursionError as exc:  # nested past the parser's stack
        raise ValueError(f"not a stored catalogue: {text[:80]!r}") from exc
    if not isinstance(found, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and isinstance(pair[1], str)
        for pair in found
    ):
        raise ValueError(f"not a stored catalogue: {text[:80]!r}")
    return tuple(VisibleSkill(name=name, description=description) for name, description in found)


class SkillSelectionEvaluator(Evaluator):
    name = "skill_selection"
    version = "2"  # 2: MiniLM in bfloat16 where the CPU has it (similarities move by up to 0.004)
    threshold = 0.5
    summary = "the activated skill fits the request (F1 against a golden case when known)"

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    def _embedder_for(self, context: EvaluationContext) -> Embedder:
        if context.embedder is not None:
            return context.embedder
        if self._embedder is None:
            from skillsight.evaluators._embedding import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def load(self) -> None:
        """The embedding model (imports torch and sentence-transformers: seconds of CPU)."""
        self._embedder_for(EMPTY_CONTEXT).embed(["warm-up"])

    def prepare(self, activations: Sequence[Activation], context: EvaluationContext) -> None:
        """Embed every request and skill text of the batch in one call (fills the cache)."""
        if context.golden is not None and context.golden.expected_skills is not None:
            return
        texts: dict[str, None] = {}
        for activation in activations:
            if activation.request.strip():
                texts[activation.request.strip()] = None
            for skill in visible_skills(activation, context):
                texts[skill_text(skill.name, skill.description)] = None
        if texts:
            self._embedder_for(context).embed(list(texts))

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        golden = context.golden
        if golden is not None and golden.expected_skills is not None:
            return self._f1(activation, golden.expected_skills, golden.activated_skills)
        return self._similarity(activation, context)

    def _f1(
        self,
        activation: Activation,
        expected: Sequence[str],
        activated: Sequence[str] | None,
    ) -> Evaluation:
        want = set(expected)
        got = set(activated) if activated is not None else {activation.skill_name}
        got.add(activation.skill_name)
        hit = len(want & got)
        f1 = 1.0 if not want and not got else 2 * hit / (len(want) + len(got))
        findings = []
        if activation.skill_name not in want:
            findings.append(
                Finding(
                    kind="unexpected_skill",
                    message=f"{activation.skill_name} is not among the expected skills "
                    f"{sorted(want)}",
                    step_id=activation.trigger_step_id,
                    tool_call_id=activation.trigger_call_id,
                    severity="medium",
                    detail={"expected": sorted(want), "activated": sorted(got)},
                )
            )
        missing = sorted(want - got)
        reason = f"F1 {f1:.3f}: activated {sorted(got)}, expected {sorted(want)}"
        if missing:
            reason += f", missing {missing}"
        label = "expected" if f1 == 1.0 else ("unexpected" if findings else "incomplete")
        return self.result(
            activation,
            f1,
            label,
            reason,
            findings,
            step_ids=[activation.trigger_step_id],
            tool_call_ids=[activation.trigger_call_id],
        )

    def _similarity(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        request = activation.request.strip()
        if not request:
            if not activation.request_logged:
                return self.not_applicable(activation, "the request was not logged", ("request",))
            return self.not_applicable(activation, "no request")
        visible = visible_skills(activation, context)
        chosen_desc = next(
            (s.description for s in visible if s.name == activation.skill_name),
            None,
        )
        if chosen_desc is None:
            chosen_desc = (
                context.manifest.description
                if context.manifest is not None
                else activation.contract.description
                if activation.contract is not None
                else ""
            )
        if not chosen_desc:
            return self.not_applicable(activation, "the chosen skill's description is unknown")
        others = [
            (s.name, skill_text(s.name, s.description))
            for s in visible
            if s.name != activation.skill_name
        ]
        texts = [request, skill_text(activation.skill_name, chosen_desc)] + [t for _, t in others]
        vectors = self._embedder_for(context).embed(texts)
        s = cosine(vectors[0], vectors[1])
        sims = {
            name: cosine(vectors[0], v) for (name, _), v in zip(others, vectors[2:], strict=True)
        }
        best_name, b = max(sims.items(), key=lambda kv: kv[1], default=("", float("-inf")))
        findings: list[Finding] = []
        fit = min(1.0, max(0.0, s) / FIT)
        if fit < 1.0:
            findings.append(
                Finding(
                    kind="far_from_request",
                    message=f"{activation.skill_name}'s description is far from the request "
                    f"(similarity {s:.3f} < {FIT})",
                    step_id=activation.trigger_step_id,
                    tool_call_id=activation.trigger_call_id,
                    severity="medium",
                    detail={"similarity": round(s, 4)},
                )
            )
        margin = 1.0 if fit == 1.0 or s >= b else max(0.0, 1.0 - (b - s) / MARGIN_SPAN)
        if margin < 1.0:
            findings.append(
                Finding(
                    kind="better_fit_visible",
                    message=f"{best_name} fits the request better ({b:.3f} vs {s:.3f})",
                    step_id=activation.trigger_step_id,
                    tool_call_id=activation.trigger_call_id,
                    severity="medium",
                    detail={"skill": best_name, "similarity": round(b, 4), "chosen": round(s, 4)},
                )
            )
        score = fit * margin
        named = (
            []
            if _named(request, activation.skill_name)
            else [name for name, _ in others if _named(request, name)]
        )
        if named:
            score = 0.0
            findings.append(
                Finding(
                    kind="named_other_skill",
                    message=f"the request names {', '.join(named)}, not {activation.skill_name}",
                    severity="high",
                    detail={"named": named},
                    step_id=activation.trigger_step_id,
                    tool_call_id=activation.trigger_call_id,
                )
            )
        ranking = ", ".join(f"{n} {v:.3f}" for n, v in sorted(sims.items(), key=lambda kv: -kv[1]))
        reason = f"similarity to the request {s:.3f}" + (
            f"; other visible skills: {ranking}" if ranking else "; no other skill visible"
        )
        label = "plausible" if not findings else ("named_other" if named else "distractor")
        scored = self.result(
            activation,
            score,
            label,
            reason,
            findings,
            step_ids=[activation.trigger_step_id],
            tool_call_ids=[activation.trigger_call_id],
        )
        if not activation.visible_skills:  # the catalogue stood in: a rescore sees it too
            scored.compared_with = stored_catalogue(context.catalogue)
        return scored
