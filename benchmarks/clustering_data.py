"""Failing activations by the ten thousand for ``bench clustering``, from a really scored seed.

A few hundred varied instances of the recorded scenarios (:mod:`benchmarks.clustering_corpus`)
are scored by the real evaluation scheduler. Each of the N failures the bench needs is then a
clone of one of those seeds: new activation, session, trace and tool-call ids, a start spread
over the window, and its skill renamed to one of ``skills`` names (activation and evaluation
rows alike: the failure texts name the skill, so there are ``skills`` by patterns causes, not
six). A share of the clones (``noise``) gets evaluation reasons and findings of random words:
one-off failures, each text unique. Clones are written as rebuilt sessions with their seed's
evaluation rows (naming the clone's rebuild), so the clustering reads them exactly as it reads
what the scheduler writes.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.clustering_corpus import PATTERNS, Corpus, Item
from skillsight.evaluators import Evaluation
from skillsight.store import Store
from skillsight.store.records import Activation, activation_id

_TOOL_ID = re.compile(r"toolu_[0-9A-Za-z]{12,}")
_VOCABULARY = (
    "quota lease shard mirror ledger beacon cipher ferry glacier harbor index journal kernel "
    "lattice meadow nickel orbit parcel quartz ribbon saddle timber umbra vessel walnut yarrow "
    "zephyr anchor bramble cobalt dune ember fathom garnet hollow iris jetty kiln lumen marrow"
)
_WORDS = tuple(_VOCABULARY.split())


@dataclass(frozen=True)
class Seed:
    activation: Activation
    evaluations: list[Evaluation]
    pattern: str


def seeds(corpus: Corpus, per_pattern: int, rng: random.Random) -> list[Seed]:
    """Score ``per_pattern`` varied instances of each failure pattern for real."""
    now = time.time_ns() // 1000
    items: list[Item] = []
    for pattern in PATTERNS:
        items += corpus.instances(pattern, per_pattern, rng, end_us=now, span_us=86_400_000_000)
    scored = corpus.write_and_score(items)
    return [
        Seed(i.activation, scored[i.activation.activation_id], i.pattern)
        for i in items
        if any(e.passed is False for e in scored[i.activation.activation_id])
    ]


def skill_name(base: str, index: int) -> str:
    """The ``index``-th synthetic skill made from ``base``: two words of its own before it
    (``quota-lease-csv-summary``), so skills read apart as real ones do."""
    first, second = divmod(index, len(_WORDS))
    return f"{_WORDS[first % len(_WORDS)]}-{_WORDS[second]}-{base}"


def _hex(rng: random.Random, length: int) -> str:
    return f"{rng.getrandbits(4 * length):0{length}x}"


def clone(
    seed: Seed, rng: random.Random, *, skill: str, started_us: int, noise: bool
) -> tuple[Activation, list[Evaluation]]:
    """A new failing activation like ``seed``: new ids, ``skill`` for its skill's name."""
    text = seed.activation.model_dump_json()
    for old in set(_TOOL_ID.findall(text)):
        text = text.replace(old, f"toolu_01{_hex(rng, 22)}")
    original = seed.activation.skill_name
    text = text.replace(original, skill)
    data = json.loads(text)
    session, trace = _hex(rng, 32), _hex(rng, 32)
    for key in ("trajectory_id", "decision_trajectory_id"):
        data[key] = session
    data.update(session_id=session, trace_id=trace)
    data["activation_id"] = activation_id(trace, data["trigger_call_id"])
    delta = started_us - _us(seed.activation.started_at)
    data["started_at"], data["ended_at"] = _iso(started_us), _iso(_us(data["ended_at"]) + delta)
    activation = Activation.model_validate(data)
    evaluations = []
    for evaluation in seed.evaluations:
        reason = evaluation.reason.replace(original, skill)
        findings = evaluation.findings
        if noise and evaluation.passed is False:
            words = " ".join(rng.choice(_WORDS) for _ in range(6))
            reason = f"unexpected {words}"
            findings = tuple(
                type(f)(
                    f"odd_{rng.choice(_WORDS)}",
                    f"{words} near {rng.choice(_WORDS)}",
                    f.step_id,
                    f.tool_call_id,
                    f.severity,
                )
                for f in findings[:1]
            )
        evaluations.append(
            Evaluation(
                activation.activation_id,
                evaluation.evaluator,
                evaluation.version,
                evaluation.score,
                evaluation.passed,
                evaluation.label,
                reason,
                evaluation.evidence,
                findings,
                project_id=evaluation.project_id,
                skill_name=skill,
                skill_version=activation.skill_version,
            )
        )
    return activation, evaluations


def fill_failures(
    store: Store,
    corpus: Corpus,
    seeds_: Sequence[Seed],
    count: int,
    rng: random.Random,
    *,
    skills: int = 100,
    noise: float = 0.03,
    window_us: int = 13 * 86_400_000_000,
    batch: int = 5_000,
) -> dict[str, str]:
    """Write ``count`` cloned failures (and their evaluation rows) into ``corpus``'s project;
    return each clone's cause (pattern and skill, or ``noise``) by activation id."""
    now = time.time_ns() // 1000
    truth: dict[str, str] = {}
    pending: list[tuple[Activation, list[Evaluation]]] = []
    for n in range(count):
        seed = seeds_[n % len(seeds_)]
        skill = skill_name(seed.activation.skill_name, rng.randrange(skills))
        is_noise = rng.random() < noise
        started = now - rng.randrange(window_us)
        activation, evaluations = clone(seed, rng, skill=skill, started_us=started, noise=is_noise)
        truth[activation.activation_id] = "noise" if is_noise else f"{seed.pattern}/{skill}"
        pending.append((activation, evaluations))
        if len(pending) >= batch or n == count - 1:
            write_clones(store, corpus, pending)
            pending = []
    return truth


def write_clones(
    store: Store, corpus: Corpus, pending: Sequence[tuple[Activation, list[Evaluation]]]
) -> None:
    """Store clones as rebuilt sessions with their evaluation rows (naming that rebuild)."""
    stored = corpus.write([Item(a, "") for a, _ in pending])
    now = time.time_ns() // 1000
    rows = [
        e.to_row(now, a.rebuilt_at)
        for a, (_, evaluations) in zip(stored, pending, strict=True)
        for e in evaluations
    ]
    store.evaluations.write(corpus.project_id, rows)


def _us(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1_000_000)


def _iso(us: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


__all__ = ["Seed", "clone", "fill_failures", "seeds", "skill_name", "write_clones"]
