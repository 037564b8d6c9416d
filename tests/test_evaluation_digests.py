"""``evaluation_digests`` (migration 0026): what each activation's evaluations scored, narrow and
in small granules, read by the scheduler for every batch instead of the wide evaluations.

Its answers must be the evaluations' own: every evaluation write writes it after the rows, and
rows written before it existed are read from the evaluations until the refresher has copied
them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skillsight.store import ReadModelRefresher, ScoredBefore, Store
from skillsight.store._evaluations import _SCORED_BEFORE_OF

P = "p"
EVALUATORS = ("security", "efficiency", "skill_selection")


def _row(activation: int, evaluator: str, version: str, at_us: int, **extra: Any) -> dict[str, Any]:
    return {
        "activation_id": f"a{activation:03d}",
        "evaluator": evaluator,
        "evaluator_version": version,
        "skill_name": f"skill-{activation % 4}",
        "skill_version": "v1",
        "score": 1.0,
        "passed": True,
        "label": "pass",
        "evaluated_at_us": at_us,
        "activation_digest": f"d{activation}-{at_us}",
        "inputs_hash": f"h{activation}-{evaluator}-{at_us}",
        "compared_with": f'{{"at": {at_us}}}' if evaluator != "security" else "",
        **extra,
    }


@contextmanager
def _tables_read(store: Store) -> Iterator[list[str]]:
    """Per statement run meanwhile, whether it reads the digests or the evaluations."""
    seen: list[str] = []
    query = store.query

    def recording(sql: str, params: Any = None) -> Any:
        seen.append("evaluation_digests" if "FROM evaluation_digests" in sql else "evaluations")
        return query(sql, params)

    store.query = recording  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        store.query = query  # type: ignore[method-assign]


def _from_evaluations(store: Store, ids: list[str], skills: list[str]) -> list[ScoredBefore]:
    """What the evaluations' own newest rows say (the read before migration 0026)."""
    params = {"project": P, "activations": ids, "skills": skills}
    return sorted(map(ScoredBefore.of_row, store.query(_SCORED_BEFORE_OF[True], params)), key=repr)


def _answer(store: Store, ids: list[str], skills: list[str]) -> list[ScoredBefore]:
    return sorted(store.evaluations.scored_before(P, ids, skills=skills), key=repr)


def test_the_digests_answer_what_the_evaluations_do(store: Store) -> None:
    base = 1_800_000_000_000_000
    # written through the store: scored, some rescored later (new digests, what they were
    # compared with), some by a new evaluator version, one also under a skill it no longer has
    store.evaluations.write(P, [_row(a, e, "1", base) for a in range(60) for e in EVALUATORS])
    store.evaluations.write(
        P, [_row(a, e, "1", base + 10) for a in range(0, 60, 3) for e in EVALUATORS]
    )
    store.evaluations.write(P, [_row(a, "efficiency", "2", base + 20) for a in range(0, 60, 5)])
    store.evaluations.write(P, [_row(7, "security", "1", base + 30, skill_name="renamed")])
    ids = [f"a{a:03d}" for a in range(0, 80)]  # twenty never scored
    skills = [f"skill-{a % 4}" for a in range(0, 80)]
    assert store.evaluations.digests_ready()

    with _tables_read(store) as seen:
        answer = _answer(store, ids, skills)
    assert seen == ["evaluation_digests"]
    assert answer == _from_evaluations(store, ids, skills)
    assert len(answer) == 60 * 3 + 12  # the newest row of each (activation, evaluator, version)
    newest = {(r.activation_id, r.evaluator, r.evaluator_version): r for r in answer}
    rescored = newest[("a003", "efficiency", "1")]
    assert (rescored.activation_digest, rescored.compared_with) == (
        f"d3-{base + 10}",
        f'{{"at": {base + 10}}}',
    )
    assert newest[("a004", "efficiency", "1")].activation_digest == f"d4-{base}"
    assert newest[("a007", "security", "1")].activation_digest == f"d7-{base}"  # not "renamed"


def test_rows_from_before_the_digests_are_read_from_the_evaluations_until_copied(
    store: Store,
) -> None:
    """A store whose evaluations were written before migration 0026 (rows its writers never
    copied): the scheduler reads the evaluations until the refresher's first pass has copied
    every row, and the digests from then on, with the same answers."""
    store.execute(
        """
        INSERT INTO evaluations (project_id, activation_id, evaluator, evaluator_version,
                                 skill_name, score, evaluated_at, activation_digest,
                                 inputs_hash, compared_with)
        SELECT {project:String}, concat('old', toString(number % 50)),
               ['security', 'efficiency'][1 + intDiv(number, 50) % 2], '1',
               concat('old-skill-', toString(number % 50 % 3)), 1.0,
               now64(6) - toIntervalSecond(number), concat('d', toString(number)),
               concat('h', toString(number)), concat('c', toString(number))
        FROM numbers(200)""",
        {"project": P},
    )
    assert not store.evaluations.digests_ready()
    # written by the service meanwhile: to both
    store.evaluations.write(
        P, [_row(a, e, "1", 1_800_000_000_000_000) for a in range(9) for e in EVALUATORS]
    )
    ids = [f"old{n}" for n in range(50)] + [f"a{a:03d}" for a in range(9)]
    skills = [f"old-skill-{n % 3}" for n in range(50)] + [f"skill-{a % 4}" for a in range(9)]
    expected = _from_evaluations(store, ids, skills)
    assert len(expected) == 50 * 2 + 9 * 3

    with _tables_read(store) as seen:
        before = _answer(store, ids, skills)
    assert before == expected and "evaluation_digests" not in seen

    refresher = ReadModelRefresher(store, interval_s=60)
    refresher.refresh_now()
    assert refresher.health()["backfilled_digests"] == 3 + 4  # (project, skill) pairs
    assert store.evaluations.digests_ready()
    with _tables_read(store) as seen:
        after = _answer(store, ids, skills)
    assert after == expected and seen == ["evaluation_digests"]
    refresher.refresh_now()  # ready: nothing is copied again
    assert refresher.health()["backfilled_digests"] == 7


def test_hex_digests_are_stored_with_zstd(store: Store) -> None:
    """The digests are random hex, which LZ4 (ClickHouse's default) barely compresses: with real
    digests they were most of the evaluations' disk (32.5 MB per 700,000 rows, 19.6 with ZSTD);
    both tables keep them with ZSTD (migrations 0026, 0027)."""
    found = store.query(
        "SELECT table, name, compression_codec FROM system.columns "
        "WHERE database = currentDatabase() AND table IN ('evaluations', 'evaluation_digests') "
        "AND name IN ('activation_digest', 'inputs_hash')"
    )
    codecs = {(str(r["table"]), str(r["name"])): str(r["compression_codec"]) for r in found}
    assert len(codecs) == 4 and set(codecs.values()) == {"CODEC(ZSTD(1))"}, codecs
