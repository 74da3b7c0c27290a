"""The statistics behind every interval and test of the analysis layer, in numpy.

- the exact McNemar test: a two-sided binomial test (p = 1/2) on the discordant pairs, the
  test statsmodels' `mcnemar(table, exact=True)` runs;
- its interval: the exact conditional one (Clopper-Pearson on the share of discordant pairs
  that improved, scaled to a difference of pass rates), which excludes 0 exactly when the
  test is significant at the interval's level;
- Holm's step-down adjustment of several p-values (statsmodels' `multipletests('holm')`),
  and the level at which Holm tests each row, so that each row's interval is drawn at the
  level of its own test;
- a Poisson bootstrap: each resampled unit (a test, or a case) weighs Poisson(1) in each
  replicate, so a replicate's statistic is a function of weighted sums, and replicates are
  matrix products, not a Python loop over replicates x cases. Units with identical
  contributions are merged first (a profile of m units weighs Poisson(m), the sum of m
  Poisson(1)): pass / fail verdicts, counters and labels make a few profiles out of
  millions of cases;
- the paired sample size of Connor (1987) for McNemar's test, and its inverse.

Wilson's interval is closed form and lives in SQL (store/views.py). scipy is not needed at
run time: the binomial tail is summed in log space here; the tests check every figure
against scipy and statsmodels.
"""

from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from statistics import NormalDist

import numpy as np

REPLICATES, SEED, LEVEL = 1000, 20240601, 0.95
_CHUNK = 4_000_000  # replicate x profile weights drawn at once per thread (16 MB)
_POISSON1_CDF = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(19)])


def mcnemar_exact(regressed: np.ndarray, improved: np.ndarray) -> np.ndarray:
    """Two-sided exact McNemar p-value per comparison: twice the binomial(b + c, 1/2)
    probability of at most min(b, c), capped at 1; no discordant pair gives 1."""
    b, c = np.asarray(regressed, dtype=np.int64), np.asarray(improved, dtype=np.int64)
    return np.array([min(1.0, 2 * _binomial_half_cdf(int(min(x, y)), int(x + y)))
                     for x, y in zip(b.ravel(), c.ravel())]).reshape(b.shape)


def _binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ binomial(n, 1/2), summed in log space (exact to rounding for
    any n; no big integers)."""
    if n == 0 or k >= n:
        return 1.0
    j = np.arange(1, k + 1, dtype=np.float64)
    log_pmf = np.concatenate([[0.0], np.cumsum(np.log((n - j + 1) / j))]) - n * math.log(2)
    top = log_pmf.max()
    return float(math.exp(top) * np.exp(log_pmf - top).sum())


def _log_choose(n: int) -> np.ndarray:
    """log C(n, k) for k = 0..n."""
    j = np.arange(1, n + 1, dtype=np.float64)
    return np.concatenate([[0.0], np.cumsum(np.log((n - j + 1) / j))])


def _upper_tail(log_choose: np.ndarray, k: int, p: float) -> float:
    """P(X >= k) for X ~ binomial(n, p), n = len(log_choose) - 1, summed in log space."""
    n = len(log_choose) - 1
    if k <= 0:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    i = np.arange(k, n + 1, dtype=np.float64)
    logs = log_choose[k:] + i * math.log(p) + (n - i) * math.log1p(-p)
    top = logs.max()
    return float(math.exp(top) * np.exp(logs - top).sum())


def _root(f, low: float, high: float) -> float:
    """The point where the increasing `f` crosses 0 in [low, high], by bisection. One end
    is 1/2; the answer never lands on it unless f is 0 there, so the side of 1/2 that the
    caller chose is kept."""
    for _ in range(64):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        low, high = (mid, high) if f(mid) < 0 else (low, mid)
    return high if abs(high - 0.5) >= abs(low - 0.5) else low


def mcnemar_interval(regressed: int, improved: int, matched: int, alpha: float
                     ) -> tuple[float, float]:
    """The exact conditional 1 - alpha interval of B's pass rate minus A's over `matched`
    paired cases: Clopper-Pearson on the share of the n = regressed + improved discordant
    pairs that improved, scaled by n / matched (difference = (improved - regressed) /
    matched). It excludes 0 exactly when `mcnemar_exact` is below alpha: whether it does is
    read from that same p-value, and each bound is then found on its side of 1/2."""
    b, c = int(regressed), int(improved)
    n = b + c
    if matched <= 0 or not 0 < alpha < 1:
        return math.nan, math.nan
    if n == 0:
        return 0.0, 0.0
    logs = _log_choose(n)
    excludes = float(mcnemar_exact(np.array(b), np.array(c))) < alpha
    low_half = (0.5, 1.0) if excludes and c > b else (0.0, 0.5)
    high_half = (0.0, 0.5) if excludes and c < b else (0.5, 1.0)
    # L: P(X >= c | L) = alpha / 2 (increasing in p); U: P(X <= c | U) = alpha / 2
    low = 0.0 if c == 0 else _root(lambda p: _upper_tail(logs, c, p) - alpha / 2, *low_half)
    high = 1.0 if c == n else _root(lambda p: alpha / 2 - (1 - _upper_tail(logs, c + 1, p)),
                                    *high_half)
    scale = n / matched
    return scale * (2 * low - 1), scale * (2 * high - 1)


def holm_levels(p_values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(level, significant) per p-value under Holm's step-down at family level `alpha`:
    rows are tested in increasing p against alpha / m, alpha / (m - 1), ... while each is
    below its threshold; a rejected row's level is its own threshold, every other row's
    the threshold at which the procedure stopped (its p is at least that). So a row is
    significant exactly when its p is below its level, and an interval drawn at 1 - level
    excludes 0 exactly then. NaN stays NaN (not counted, not significant)."""
    p = np.asarray(p_values, dtype=np.float64)
    level = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    order = valid[np.argsort(p[valid], kind="stable")]
    thresholds = alpha / (len(order) - np.arange(len(order)))
    failed = np.flatnonzero(p[order] >= thresholds)
    stop = int(failed[0]) if len(failed) else len(order)
    level[order[:stop]] = thresholds[:stop]
    if stop < len(order):
        level[order[stop:]] = thresholds[stop]
    return level, ~np.isnan(level) & (p < level)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values; NaN (a comparison with no test) stays NaN and is not
    counted among the comparisons."""
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    order = valid[np.argsort(p[valid], kind="stable")]
    m = len(order)
    steps = np.maximum.accumulate((m - np.arange(m)) * p[order]) if m else p[order]
    adjusted[order] = np.minimum(steps, 1.0)
    return adjusted


def _poisson1_table() -> np.ndarray:
    """k of Poisson(1), as float32, for each of the 65,536 equal slices of [0, 1) that lie
    between two steps of its CDF; NaN marks the 8 slices a step crosses."""
    edges = np.arange(65_537) / 65_536
    low = np.searchsorted(_POISSON1_CDF, edges[:-1], side="right")
    high = np.searchsorted(_POISSON1_CDF, np.nextafter(edges[1:], 0), side="right")
    return np.where(low == high, low, np.nan).astype(np.float32)


_POISSON1_TABLE = _poisson1_table()


def poisson_weights(rng: np.random.Generator, m: np.ndarray, replicates: int) -> np.ndarray:
    """(replicates x profiles) Poisson(m) weights, as float32. Profiles of one unit (the
    usual case with continuous scores) look up a 16-bit uniform in a table of the inverse
    CDF; the 8 slices in 65,536 that a CDF step crosses draw a finer uniform. Exact, and
    ~10x faster than numpy's Poisson sampler."""
    m = np.asarray(m, dtype=np.float64)
    slices = rng.integers(0, 65_536, (replicates, len(m)), dtype=np.uint16)
    weights = _POISSON1_TABLE[slices]
    crossed = np.flatnonzero(np.isnan(weights.ravel()))
    fine = (slices.ravel()[crossed] + rng.random(len(crossed))) / 65_536
    weights.ravel()[crossed] = np.searchsorted(_POISSON1_CDF, fine, side="right")
    several = np.flatnonzero(m != 1)  # merged profiles: few, whatever the cases
    weights[:, several] = rng.poisson(m[several], (replicates, len(several)))
    return weights


def _block_sums(seed: np.random.SeedSequence, group: np.ndarray, m: np.ndarray,
                x: np.ndarray, replicates: int) -> list[tuple[int, np.ndarray]]:
    """(group, replicates x features sums) for one block of profiles, sorted by group."""
    weights = poisson_weights(np.random.default_rng(seed), m, replicates)
    values = x.astype(np.float32)
    edges = [0, *(np.flatnonzero(np.diff(group)) + 1), len(group)]
    return [(int(group[a]), weights[:, a:b] @ values[a:b])  # a group's rows are contiguous
            for a, b in zip(edges[:-1], edges[1:])]


def replicate_sums(group: np.ndarray, m: np.ndarray, x: np.ndarray, replicates: int = REPLICATES,
                   seed: int = SEED) -> np.ndarray:
    """(groups x replicates x features) Poisson-bootstrap sums of the profile rows `x`
    (profiles x features, `m` units each, sorted by `group`, an index from 0). Blocks of
    profiles run on threads (numpy lets go of the GIL), each with its own seed, and are
    added up in block order: the same profiles give the same replicates, bit for bit."""
    groups = int(group.max()) + 1 if len(group) else 0
    sums = np.zeros((groups, replicates, x.shape[1]))
    step = max(1, _CHUNK // max(replicates, 1))
    starts = range(0, len(m), step)
    seeds = np.random.SeedSequence(seed).spawn(len(starts))
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        blocks = pool.map(lambda i: _block_sums(
            seeds[i], group[starts[i]:starts[i] + step], m[starts[i]:starts[i] + step],
            x[starts[i]:starts[i] + step], replicates), range(len(starts)))
        for block in blocks:  # in order
            for owner, partial in block:
                sums[owner] += partial
    return sums


def percentile_interval(replicates: np.ndarray, level: float = LEVEL
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval along the last axis; replicates where the statistic is
    undefined (NaN: x/0) are left out, and none defined gives NaN."""
    tail = 100 * (1 - level) / 2
    values = np.where(np.isfinite(replicates), replicates, np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": NaN is the answer
        low, high = np.nanpercentile(values, [tail, 100 - tail], axis=-1)
    return low, high


def bootstrap_interval(replicates: np.ndarray, alpha: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `replicates` (rows x replicates), the percentile interval at level
    1 - alpha[row] taken as order statistics: the k-th smallest and k-th largest finite
    replicate, k = ceil(alpha (n + 1) / 2) - 1. The lower bound is above 0 exactly when
    fewer than k replicates are at or below 0, that is when `bootstrap_p_value` is below
    alpha: interval and test agree. Too few replicates for alpha (k = 0): unbounded."""
    rows = np.atleast_2d(np.asarray(replicates, dtype=np.float64))
    low, high = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for i, (row, a) in enumerate(zip(rows, np.broadcast_to(alpha, len(rows)))):
        values = np.sort(row[np.isfinite(row)])
        n = len(values)
        if n == 0 or not 0 < a < 1:
            continue
        k = math.ceil(a * (n + 1) / 2) - 1
        low[i], high[i] = (values[k - 1], values[n - k]) if k >= 1 else (-math.inf, math.inf)
    return low, high


def bootstrap_p_value(replicates: np.ndarray) -> np.ndarray:
    """Two-sided p-value of a difference from its bootstrap replicates: twice the smaller
    share of replicates on either side of 0 (with the +1 of a finite resample), capped
    at 1; the level at which the percentile interval would just touch 0."""
    values = np.where(np.isfinite(replicates), replicates, np.nan)
    n = np.sum(~np.isnan(values), axis=-1)
    below = np.sum(values <= 0, axis=-1)
    above = np.sum(values >= 0, axis=-1)
    with np.errstate(all="ignore"):
        p = 2 * (np.minimum(below, above) + 1) / (n + 1)
    return np.where(n > 0, np.minimum(p, 1.0), np.nan)


def _z(q: float) -> float:
    return NormalDist().inv_cdf(q)


def paired_flip_rate(pass_rate: float, drop: float) -> float:
    """The share of cases whose verdict changes between two runs when their verdicts are
    independent given the pass rates: the most flips two such runs can show, so the
    sample size from it is the cautious one."""
    after = pass_rate - drop
    return pass_rate * (1 - after) + after * (1 - pass_rate)


def sample_size(pass_rate: float, drop: float, power: float = 0.8, alpha: float = 0.05,
                flip_rate: float | None = None) -> int:
    """Matched cases needed for McNemar's test to detect a drop of `drop` (a fraction)
    from `pass_rate` with `power` at two-sided `alpha` (Connor 1987). `flip_rate`: the
    share of cases whose verdict changes between two runs of the same system (noise, half
    each way; measured, say, on two runs of one model); the drop adds its regressions to
    those. Unknown, the runs are taken as independent, the cautious figure."""
    if not 0 < drop <= pass_rate <= 1:
        raise ValueError(f"drop {drop} must be above 0 and at most the pass rate {pass_rate}")
    flips = paired_flip_rate(pass_rate, drop) if flip_rate is None else flip_rate + drop
    if flips > 1:
        raise ValueError(f"a flip rate of {flip_rate} plus a drop of {drop} is above 1")
    root = _z(1 - alpha / 2) * math.sqrt(flips) + _z(power) * math.sqrt(flips - drop ** 2)
    return math.ceil(root ** 2 / drop ** 2)


def detectable_drop(cases: int, pass_rate: float, power: float = 0.8, alpha: float = 0.05,
                    flip_rate: float | None = None) -> float | None:
    """The smallest drop (a fraction) that `cases` matched cases detect with `power` at
    `alpha` from `pass_rate` (bisection on `sample_size`); None when even a drop to 0
    needs more cases."""
    def needed(drop: float) -> int:
        return sample_size(pass_rate, drop, power, alpha, flip_rate)

    top = pass_rate if flip_rate is None else min(pass_rate, 1 - flip_rate)
    if cases <= 0 or top <= 0 or needed(top) > cases:
        return None
    low, high = 0.0, top
    for _ in range(60):  # halves the bracket; 60 steps reach double precision
        mid = (low + high) / 2
        low, high = (low, mid) if needed(mid) <= cases else (mid, high)
    return high
