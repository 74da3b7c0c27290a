"""A cascade stage's confidence threshold, certified by fixed-sequence testing.

Jung, Brahman & Choi, "Trust or Escalate" (ICLR 2025), after Learn-then-Test (Angelopoulos
et al. 2021): on a calibration set graded by the stage and by the reference, thresholds are
tried from the most confident down; each is accepted while the exact (Clopper-Pearson)
lower bound, at level 1 - risk, on the agreement among the rows it keeps is at least
`agreement`, i.e. while the binomial p-value P(Binomial(n, 1 - agreement) <= k) of "the
disagreement above it exceeds 1 - agreement" is at most `risk` (n kept rows, k of them
disagreeing). The search stops at the first threshold not accepted; the last accepted one
is chosen; none accepted: the stage keeps nothing. Then, with probability at least
1 - risk, the rows the stage keeps agree with the reference at least `agreement` of the time.

The thresholds tried are the calibration rows' distinct confidences, except those keeping
fewer rows than any test could certify (agreement ** n > risk: even n agreements out of n
do not reach the bound). Which thresholds are tried depends on the confidences only, never
on the agreements, so the sequence is fixed before any test is made. No normal
approximation anywhere: the binomial tail is summed exactly (in log space).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...suites.cascade import fewest


@dataclass(frozen=True)
class Certified:
    """A stage's chosen threshold: keep the rows with confidence >= `threshold` (None: keep
    none). `n` / `k`: calibration rows it keeps / of them, disagreeing with the reference;
    `bound`: the exact lower bound on their agreement at level 1 - risk (None: n = 0);
    `tried`: thresholds tested."""

    threshold: float | None
    n: int
    k: int
    bound: float | None
    tried: int

    def record(self) -> dict[str, float | int | None]:
        return {"threshold": self.threshold, "n": self.n, "k": self.k, "bound": self.bound,
                "tried": self.tried}


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k), summed exactly in log space."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    i = np.arange(k + 1)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    log_pmf = (log_fact[n] - log_fact[i] - log_fact[n - i]
               + i * math.log(p) + (n - i) * math.log1p(-p))
    top = log_pmf.max()
    return float(min(1.0, math.exp(top) * np.exp(log_pmf - top).sum()))


def p_value(n: int, k: int, agreement: float) -> float:
    """The exact p-value of "disagreement among the n kept rows exceeds 1 - agreement",
    given k disagreeing: P(Binomial(n, 1 - agreement) <= k)."""
    return binom_cdf(k, n, 1.0 - agreement)


def lower_bound(n: int, k: int, risk: float) -> float | None:
    """The one-sided Clopper-Pearson lower bound on agreement at level 1 - risk, for n - k
    agreeing of n (None: n = 0): the smallest a with P(Binomial(n, 1 - a) <= k) > risk,
    found by bisection on the exact tail (monotone in a)."""
    if n == 0:
        return None
    if k == n:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if p_value(n, k, mid) <= risk:  # mid certified: the bound is above it
            low = mid
        else:
            high = mid
    return low


def certify(confidence: np.ndarray, agrees: np.ndarray, agreement: float,
            risk: float) -> Certified:
    """The threshold for a stage whose calibration rows have these confidences and agree
    (True) or not with the reference."""
    confidence = np.asarray(confidence, dtype=np.float64)
    agrees = np.asarray(agrees, dtype=bool)
    order = np.argsort(-confidence, kind="stable")
    c, disagree = confidence[order], np.cumsum(~agrees[order])
    distinct = np.unique(c)[::-1]
    kept = np.searchsorted(-c, -distinct, side="right")  # rows with confidence >= each
    chosen = Certified(None, 0, 0, None, 0)
    minimum, tried = fewest(agreement, risk), 0
    for threshold, n in zip(distinct, kept):
        if n < minimum:
            continue  # no test could pass: not in the sequence
        k = int(disagree[n - 1])
        tried += 1
        if p_value(int(n), k, agreement) > risk:
            break
        chosen = Certified(float(threshold), int(n), k, None, tried)
    bound = lower_bound(chosen.n, chosen.k, risk)
    return Certified(chosen.threshold, chosen.n, chosen.k, bound, tried)
