"""Certified judge cascades (issue 45): does the guarantee hold, and what does it save?

    .venv/bin/python benchmarks/cascade.py [DRAWS]    (default 500)

Two scripted worlds of 20,000 graded cases, a cheap judge and a strong one (the reference,
`reference: last`), target agreement 0.9 at risk 0.1, 300 calibration cases per draw:

- `repeats`: the cheap judge grades each case 5 times at a temperature above 0; its
  confidence is the share of repeats on the verdict's side (confidence.vote_confidence).
  On 80 % of cases it is sure and right (each repeat right with probability 0.995); on the
  rest each repeat is right with probability 0.45 (worse than a coin), so its accuracy
  rises with confidence, and over all cases (0.88) it misses the target.
- `logprobs`: a confidence c from Beta(5, 1) folded into [0.5, 1], the cheap judge right with
  probability c (a calibrated judge): the target is met only by keeping the sure cases.

Each draw takes 300 cases at random as the calibration set, certifies the cheap judge's
threshold on them (certify.certify, against the strong judge), and applies it to the other
19,700: the realised agreement among the held-out cases the cheap judge keeps must reach the
target in at least 1 - risk of the draws (a draw keeping nothing meets it vacuously and is
counted apart). Strong-judge calls: the calibration set plus every held-out case below the
threshold, against 20,000 for judging every case with the strong judge.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import polars as pl

from checkllm_batch.evaluate.judging.certify import certify
from checkllm_batch.evaluate.judging.confidence import vote_confidence
from checkllm_batch.evaluate.judging.jury import VOTES

CASES, CALIBRATION, REPEATS, AGREEMENT, RISK = 20_000, 300, 5, 0.9, 0.1


def repeats_world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the cheap judge's confidence, whether its verdict is the strong judge's)."""
    truth = rng.random(CASES) < 0.6
    sure = rng.random(CASES) < 0.8
    right = rng.random((CASES, REPEATS)) < np.where(sure, 0.995, 0.45)[:, None]
    votes = np.where(right, truth[:, None], ~truth[:, None])
    verdict = votes.sum(axis=1) * 2 > REPEATS
    frame = pl.DataFrame({
        "votes": [[{"juror": "cheap", "repeat": r, "pass": bool(v), "score": None,
                    "reason": ""} for r, v in enumerate(row)] for row in votes.tolist()],
        "pass": verdict}, schema={"votes": VOTES, "pass": pl.Boolean})
    confidence = frame.select(vote_confidence(pl.col("votes"), pl.col("pass"))).to_series()
    return confidence.to_numpy(), verdict == truth


def logprobs_world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    confidence = 0.5 + 0.5 * rng.beta(5, 1, CASES)
    return confidence, rng.random(CASES) < confidence


def simulate(world, draws: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    confidence, agrees = world(rng)
    met, empty, strong, kept, thresholds, realised = 0, 0, [], [], [], []
    for _ in range(draws):
        calib = np.zeros(CASES, bool)
        calib[rng.choice(CASES, CALIBRATION, replace=False)] = True
        chosen = certify(confidence[calib], agrees[calib], AGREEMENT, RISK)
        keep = ~calib & (confidence >= (np.inf if chosen.threshold is None
                                        else chosen.threshold))
        if keep.any():
            realised.append(agrees[keep].mean())
            met += realised[-1] >= AGREEMENT
        else:
            empty += 1
        strong.append(CALIBRATION + int((~calib & ~keep).sum()))
        kept.append(keep.sum() / (~calib).sum())
        thresholds.append(chosen.threshold if chosen.threshold is not None else np.nan)
    strong_calls = float(np.mean(strong))
    return {"draws": draws, "met_share": (met + empty) / draws, "kept_nothing": empty,
            "agreement_all_cheap": round(float(agrees.mean()), 4),
            "realised_agreement_mean": round(float(np.mean(realised)), 4),
            "realised_agreement_min": round(float(np.min(realised)), 4),
            "kept_share_mean": round(float(np.mean(kept)), 4),
            "threshold_median": float(np.nanmedian(thresholds)),
            "strong_calls_mean": round(strong_calls, 1),
            "strong_calls_fall": round(CASES / strong_calls, 2)}


def main() -> None:
    draws = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    out = {name: simulate(world, draws, seed) for name, world, seed in
           [("repeats", repeats_world, 45), ("logprobs", logprobs_world, 46)]}
    for name, figures in out.items():
        assert figures["met_share"] >= 1 - RISK, (name, figures)
    assert out["repeats"]["strong_calls_fall"] >= 3, out["repeats"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
