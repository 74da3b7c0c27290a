"""promptfoo's METEOR as its source reads, one pair at a time (greedy alignment loops):
the test oracle for the package's join-based implementation (assertions/parsers/meteor.py)."""

from __future__ import annotations

import re

from checkllm_batch.assertions.parsers.meteor import stem, synonyms


def _match(cand: list[tuple[int, str]], ref: list[tuple[int, str]], same) -> tuple[list, list, list]:
    """promptfoo's greedy stage: candidates from the end, each takes the last matching ref."""
    matches, cand, ref = [], list(cand), list(ref)
    for i in range(len(cand) - 1, -1, -1):
        for j in range(len(ref) - 1, -1, -1):
            if same(cand[i][1], ref[j][1]):
                matches.append((cand[i][0], ref[j][0]))
                del cand[i], ref[j]
                break
    return matches, cand, ref


def _tokens(text: str) -> list[str]:
    return [re.sub(r"\.+$", "", w).lower() for w in re.split(r"\s+", text)]


def single_meteor(candidate: str, reference: str, alpha: float, beta: float, gamma: float
                  ) -> float:
    cand = list(enumerate(_tokens(candidate)))
    ref = list(enumerate(_tokens(reference)))
    exact, c1, r1 = _match(cand, ref, str.__eq__)
    stems, c2, r2 = _match([(i, stem(w)) for i, w in c1], [(i, stem(w)) for i, w in r1],
                           str.__eq__)
    syn, _, _ = _match(c2, r2, lambda c, r: r in synonyms(c))
    matches = sorted(exact + stems + syn)
    m = len(matches)
    if m == 0 or not cand or not ref:
        return 0.0
    p, r = m / len(cand), m / len(ref)
    denominator = alpha * p + (1 - alpha) * r
    if denominator == 0:
        return 0.0
    chunks = 1 + sum(1 for a, b in zip(matches, matches[1:])
                     if b[0] != a[0] + 1 or b[1] != a[1] + 1)
    return (1 - gamma * (chunks / m) ** beta) * (p * r / denominator)
