"""Skill Lift's statistics and SkillTester's utility, against values worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skillsight.reruns import (
    CaseOutcome,
    bootstrap_interval,
    both_succeeded,
    case_utility,
    efficiency_score,
    normal_interval,
    paired_lift,
    pass_at_k,
    pass_at_k_case,
    security_status,
    utility,
)

# --- SkillTester's worked values (DESIGN.md, *Paired reruns and Skill Lift*) --------------------


@pytest.mark.parametrize(
    ("token_ratio", "time_ratio", "expected"),
    [(0.5, 0.5, 75.0), (2.0, 2.0, 35.0), (4.0, 4.0, 20.0), (2.0, 1.0, 42.5)],
)
def test_skilltester_worked_values(token_ratio: float, time_ratio: float, expected: float) -> None:
    assert both_succeeded(token_ratio, time_ratio) == pytest.approx(expected, abs=1e-12)


def _outcome(**overrides: object) -> CaseOutcome:
    values: dict[str, object] = {
        "case_id": "c",
        "invoked": True,
        "with_succeeded": True,
        "baseline_succeeded": True,
        "with_tokens": 99.0,
        "baseline_tokens": 199.0,
        "with_seconds": 9.0,
        "baseline_seconds": 19.0,
    }
    values.update(overrides)
    return CaseOutcome(**values)  # type: ignore[arg-type]


def test_skill_fails_is_zero_and_only_the_skill_succeeding_is_a_hundred() -> None:
    assert case_utility(_outcome(with_succeeded=False)) == 0.0
    assert case_utility(_outcome(with_succeeded=False, baseline_succeeded=False)) == 0.0
    assert case_utility(_outcome(baseline_succeeded=False)) == 100.0


def test_the_epsilon_of_one_makes_the_ratios_of_the_worked_values() -> None:
    # (99 + 1) / (199 + 1) = 0.5 for tokens, (9 + 1) / (19 + 1) = 0.5 for seconds -> 75
    assert case_utility(_outcome()) == pytest.approx(75.0)
    # 399 vs 99 tokens (r = 4), 19 s vs 19 s (r = 1): e = (0 + 50) / 2 = 25 -> 20 + 0.6 * 25
    assert case_utility(
        _outcome(with_tokens=399.0, baseline_tokens=99.0, with_seconds=19.0)
    ) == pytest.approx(35.0)


def test_the_invocation_gate_zeroes_a_run_that_never_used_the_skill() -> None:
    assert case_utility(_outcome(invoked=False, baseline_succeeded=False)) == 0.0
    assert utility([_outcome(baseline_succeeded=False), _outcome(invoked=False)]) == 50.0
    assert utility([]) is None


def test_efficiency_is_clipped_to_0_100() -> None:
    assert efficiency_score(1 / 1024) == 100.0
    assert efficiency_score(1024) == 0.0
    with pytest.raises(ValueError):
        efficiency_score(0)


def test_security_status_bands() -> None:
    assert security_status(100.0) == "Pass"
    assert security_status(80.0) == "Caution"
    assert security_status(79.99) == "Risky"
    assert security_status(None) is None


# --- lift and its intervals --------------------------------------------------------------------


def test_normal_interval_is_aces_mean_plus_minus_1_96_sd_over_root_n() -> None:
    deltas = [0.5, 0.0, 1.0, 0.25]
    mean = 0.4375
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / 3)
    low, high = normal_interval(deltas) or (0.0, 0.0)
    assert low == pytest.approx(mean - 1.96 * sd / 2)
    assert high == pytest.approx(mean + 1.96 * sd / 2)
    assert normal_interval([0.3]) is None


def test_bootstrap_is_the_documented_seeded_resampling() -> None:
    deltas = [0.5, 0.0, 1.0, 0.25, -0.25, 0.75]
    rng = np.random.default_rng(7)
    index = rng.integers(0, len(deltas), size=(10_000, len(deltas)))
    means = np.asarray(deltas)[index].mean(axis=1)
    expected = tuple(float(v) for v in np.quantile(means, [0.025, 0.975]))
    assert bootstrap_interval(deltas, seed=7) == expected
    # the same stream when drawn in blocks: a run over many cases gives the same numbers
    big = [((i * 37) % 101) / 100 - 0.3 for i in range(1_000)]
    rng = np.random.default_rng(3)
    index = rng.integers(0, len(big), size=(10_000, len(big)))
    whole = np.quantile(np.asarray(big)[index].mean(axis=1), [0.025, 0.975])
    assert bootstrap_interval(big, seed=3) == (float(whole[0]), float(whole[1]))
    assert bootstrap_interval([0.1], seed=3) is None


def test_paired_lift_shares_and_degenerate_cases() -> None:
    lift = paired_lift([0.5, -0.5, 0.0, 1.0], seed=1)
    assert lift.n == 4 and lift.lift == pytest.approx(0.25)
    assert (lift.positive, lift.negative, lift.tied) == (0.5, 0.25, 0.25)
    empty = paired_lift([])
    assert empty.n == 0 and empty.lift is None and empty.normal_ci is None
    one = paired_lift([0.2])
    assert one.lift == pytest.approx(0.2) and one.sd is None and one.bootstrap_ci is None


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # n = 3 attempts, c = 1 passed: pass@1 = 1/3, pass@2 = 1 - C(2,2)/C(3,2) = 2/3, pass@3 = 1
    assert pass_at_k_case(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k_case(3, 1, 2) == pytest.approx(2 / 3)
    assert pass_at_k_case(3, 1, 3) == 1.0
    assert pass_at_k_case(3, 0, 3) == 0.0
    # a case with fewer scored attempts than k is left out, and counted
    assert pass_at_k([(3, 1), (3, 3), (2, 2)], 3) == (1.0, 2)
    assert pass_at_k([(2, 2)], 3) == (None, 0)
    with pytest.raises(ValueError):
        pass_at_k_case(2, 3, 1)
