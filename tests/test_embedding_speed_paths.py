"""The embedding speed-ups keep skill_selection's verdicts: bfloat16 autocast against float32
on the benchmark's requests and the skills they see, and the hash-keyed cache.

A verdict whose similarities sit on one of the formula's edges (the chosen skill's similarity at
``FIT``, or level with the closest other skill's, or its score at the threshold) may fall either
side in either precision, as it may between two CPUs in one precision: those few are counted,
not compared."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.eval import synthetic_activations
from skillsight.evaluators import (
    CachedEmbedder,
    EvaluationContext,
    MiniLMEmbedder,
    cosine,
    deterministic_registry,
    run_evaluators,
)
from skillsight.evaluators._skill_selection import FIT, SkillSelectionEvaluator, skill_text
from skillsight.store.records import Activation

pytestmark = pytest.mark.slow

ACTIVATIONS = 240
EDGE = 5e-3
"""How far bfloat16 moves a similarity, at most (measured: up to 0.004)."""


@pytest.fixture(scope="module")
def pair() -> tuple[MiniLMEmbedder, MiniLMEmbedder]:
    return MiniLMEmbedder(precision="float32"), MiniLMEmbedder(precision="bfloat16")


@pytest.fixture(scope="module")
def cached(pair: tuple[MiniLMEmbedder, ...]) -> tuple[CachedEmbedder, CachedEmbedder]:
    """The pair behind caches the module shares: each text is embedded once per precision
    (bfloat16 is emulated, ten times slower, on a CPU without bfloat16 units)."""
    fp32, bf16 = pair
    return CachedEmbedder(fp32), CachedEmbedder(bf16)


def test_bfloat16_vectors_stay_within_float32s(
    pair: tuple[MiniLMEmbedder, ...], cached: tuple[CachedEmbedder, ...]
) -> None:
    activations, _ = synthetic_activations(ACTIVATIONS)
    texts = sorted(
        {a.request for a in activations}
        | {skill_text(s.name, s.description) for s in activations[0].visible_skills}
    )
    fp32, bf16 = cached
    a, b = np.stack(fp32.embed(texts)), np.stack(bf16.embed(texts))
    assert pair[1].bfloat16 and not pair[0].bfloat16
    assert float((a * b).sum(axis=1).min()) > 0.9995
    assert float(np.abs(a - b).max()) < 5e-3
    assert not np.array_equal(a, b)  # the bfloat16 path ran


def test_skill_selection_verdicts_are_the_same_in_both_precisions(
    cached: tuple[CachedEmbedder, ...],
) -> None:
    activations, _ = synthetic_activations(ACTIVATIONS)
    names = [s.name for s in activations[0].visible_skills]
    # every third activation picked another visible skill than the one its request is for
    activations = [
        a.model_copy(update={"skill_name": names[(names.index(a.skill_name) + 1) % len(names)]})
        if i % 3 == 0
        else a
        for i, a in enumerate(activations)
    ]
    registry = deterministic_registry()
    verdicts = []
    for embedder in cached:
        context = EvaluationContext(embedder=embedder)
        found = run_evaluators(activations, context, registry=registry, names=["skill_selection"])
        verdicts.append({e.activation_id: e for e in found})
    fp32, bf16 = verdicts
    assert fp32.keys() == bf16.keys() and len(fp32) == ACTIVATIONS
    labels = {e.label for e in fp32.values()}
    assert len(labels) > 1  # the requests are not all judged alike
    edges = {a.activation_id for a in activations if _on_an_edge(a, cached[0])}
    threshold = SkillSelectionEvaluator.threshold
    edges |= {k for k, e in fp32.items() if e.score is not None and abs(e.score - threshold) < 0.05}
    assert len(edges) <= ACTIVATIONS // 10  # the few on an edge; the rest are compared
    gaps = []
    for key, e in fp32.items():
        if key in edges:
            continue
        other = bf16[key]
        assert (e.label, e.passed) == (other.label, other.passed), key
        assert e.score is not None and other.score is not None
        gaps.append(abs(e.score - other.score))
    # similarities move by ~1e-4; the margin term (a gap over 0.25) magnifies that in scores
    assert max(gaps) < 1e-2 and sorted(gaps)[len(gaps) // 2] < 1e-3


def _on_an_edge(activation: Activation, embedder: CachedEmbedder) -> bool:
    """Whether the chosen skill's float32 similarity is within EDGE of FIT or of the closest
    other visible skill's."""
    skills = {s.name: skill_text(s.name, s.description) for s in activation.visible_skills}
    request, *vectors = embedder.embed([activation.request.strip(), *skills.values()])
    sims = {name: cosine(request, v) for name, v in zip(skills, vectors, strict=True)}
    chosen = sims.pop(activation.skill_name)
    return abs(chosen - FIT) < EDGE or abs(chosen - max(sims.values())) < EDGE


def test_the_cache_keys_texts_by_hash_and_embeds_each_once(
    pair: tuple[MiniLMEmbedder, ...],
) -> None:
    cached = CachedEmbedder(pair[0], capacity=3)
    long_text = "the failing step " * 5_000
    first = cached.embed([long_text, "a", long_text])
    assert first[0] is first[2] and cached.misses == 2
    assert cached.embed(["a"])[0] is first[1] and cached.misses == 2
    np.testing.assert_array_equal(first[0], pair[0].embed([long_text])[0])
    cached.embed(["b", "c", "d"])  # the capacity evicts the oldest
    cached.embed([long_text])
    assert cached.misses == 6
