"""Paired statistics over cases: Skill Lift with two 95% intervals, shares, and pass@k.

Given one paired difference per case (with-skill minus baseline, attempts averaged per condition
first):

- lift = the mean difference over the n cases that have both sides;
- the normal interval (ACES's): lift ± 1.96 · sd / √n, sd the sample standard deviation
  (n - 1 in the denominator); none for n < 2;
- the paired bootstrap: ``numpy.random.default_rng(seed)`` draws a (resamples x n) matrix of
  case indices with ``integers(0, n, size=(resamples, n))``; the interval is the 2.5% and
  97.5% quantiles (numpy's default linear interpolation) of the resampled means; none for
  n < 2. The draws are made a block of rows at a time, which yields the same stream;
- shares of positive, negative and tied (|difference| ≤ 1e-9) cases.

pass@k is the unbiased estimator 1 - C(n - c, k) / C(n, k) per case (n scored attempts, c passed),
averaged over the cases with n ≥ k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z_95 = 1.96
TIE = 1e-9
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 20_260_101
_BLOCK_CELLS = 4_000_000  # indices drawn per block (32 MB of int64)


@dataclass(frozen=True)
class PairedLift:
    n: int
    lift: float | None
    sd: float | None
    normal_ci: tuple[float, float] | None
    bootstrap_ci: tuple[float, float] | None
    positive: float | None
    negative: float | None
    tied: float | None


def normal_interval(deltas: Sequence[float]) -> tuple[float, float] | None:
    """ACES's interval: mean ± 1.96 · sd / √n."""
    n = len(deltas)
    if n < 2:
        return None
    mean = math.fsum(deltas) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in deltas) / (n - 1))
    half = Z_95 * sd / math.sqrt(n)
    return (mean - half, mean + half)


def bootstrap_interval(
    deltas: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[float, float] | None:
    """The seeded paired bootstrap over cases (see the module)."""
    n = len(deltas)
    if n < 2 or resamples < 1:
        return None
    values = np.asarray(deltas, dtype=np.float64)
    rng = np.random.default_rng(seed)
    rows = max(1, _BLOCK_CELLS // n)
    means = np.empty(resamples, dtype=np.float64)
    done = 0
    while done < resamples:
        take = min(rows, resamples - done)
        index = rng.integers(0, n, size=(take, n))
        means[done : done + take] = values[index].mean(axis=1)
        done += take
    low, high = np.quantile(means, [0.025, 0.975])
    return (float(low), float(high))


def paired_lift(
    deltas: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> PairedLift:
    """Lift, both intervals and the shares of one metric's per-case differences."""
    n = len(deltas)
    if n == 0:
        return PairedLift(0, None, None, None, None, None, None, None)
    mean = math.fsum(deltas) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in deltas) / (n - 1)) if n > 1 else None
    return PairedLift(
        n=n,
        lift=mean,
        sd=sd,
        normal_ci=normal_interval(deltas),
        bootstrap_ci=bootstrap_interval(deltas, resamples=resamples, seed=seed),
        positive=sum(1 for d in deltas if d > TIE) / n,
        negative=sum(1 for d in deltas if d < -TIE) / n,
        tied=sum(1 for d in deltas if abs(d) <= TIE) / n,
    )


def pass_at_k_case(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one case: n attempts scored, c of them passed (n >= k)."""
    if not 0 <= c <= n or k < 1 or n < k:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k(cases: Sequence[tuple[int, int]], k: int) -> tuple[float | None, int]:
    """The mean pass@k over the cases ``(n, c)`` with n >= k, and how many counted."""
    counted = [pass_at_k_case(n, c, k) for n, c in cases if n >= k]
    return (math.fsum(counted) / len(counted) if counted else None, len(counted))
