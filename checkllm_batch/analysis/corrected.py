"""Pass rates and mean scores corrected by people's labels (prediction-powered inference).

`estimate` corrects any frame of judged cases (a label or null per case, the judge's
outcome, a sampling stratum and inclusion probability) with the SQL of store/corrected.py,
as the `corrected_estimates` macro does over a run; `plan` says how many labels an
interval needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import polars as pl

from ..store.corrected import corrected_sql


def estimate(frame: pl.DataFrame, keys: Sequence[str] = (), pass_rate: bool = True
             ) -> pl.DataFrame:
    """Per group of `keys`: judge-only, labels-only and PPI++ estimates with intervals.
    `frame` has the keys, `y` (the person's outcome, null without a label), `f` (the
    judge's), and optionally `stratum` (default one) and `a` (1 / inclusion probability,
    default 1)."""
    rows = frame.with_columns(
        *([] if "stratum" in frame.columns else [pl.lit("all").alias("stratum")]),
        *([] if "a" in frame.columns else [pl.lit(1.0).alias("a")]),
        pl.col("y").cast(pl.Float64), pl.col("f").cast(pl.Float64))
    con = duckdb.connect()
    con.register("corrected_rows", rows.to_arrow())
    return con.sql(corrected_sql("corrected_rows", list(keys), pass_rate)).pl()


def ppi_mean(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray,
             a: np.ndarray | None = None, pass_rate: bool = False) -> dict:
    """The PPI++ mean of labelled pairs (y, f) and judged-only f_unlabelled, ppi_py's
    arguments (Y, Yhat, Yhat_unlabeled, w=a): one row of `estimate` as a dict."""
    n, big = len(y), len(f_unlabelled)
    frame = pl.DataFrame({
        "y": np.concatenate([np.asarray(y, float), np.full(big, np.nan)]),
        "f": np.concatenate([f, f_unlabelled]).astype(float),
        "a": np.concatenate([np.ones(n) if a is None else np.asarray(a, float),
                             np.ones(big)])}).with_columns(pl.col("y").fill_nan(None))
    return estimate(frame, pass_rate=pass_rate).row(0, named=True)


Z95 = 1.959963984540054


def standard_error(row: dict) -> float:
    """The PPI++ estimate's standard error, from its 95 % interval."""
    return (row["corrected_high"] - row["corrected_low"]) / (2 * Z95)


def difference(a: dict, b: dict) -> dict:
    """The corrected difference a - b of two groups estimated from disjoint cases (two
    providers' outputs): the estimates are independent, so the variances add."""
    diff = a["corrected"] - b["corrected"]
    half = Z95 * float(np.hypot(standard_error(a), standard_error(b)))
    return {"difference": diff, "low": diff - half, "high": diff + half,
            "judge_difference": a["judge_only"] - b["judge_only"]}


def paired_difference(a: pl.DataFrame, b: pl.DataFrame, on: str = "case_id") -> dict:
    """The corrected mean difference a - b of two runs on the same cases (frames with `on`,
    `y`, `f`): the per-case differences y_a - y_b (where both are labelled) and f_a - f_b
    corrected as one mean, so the pairing narrows the interval."""
    both = a.join(b, on=on, suffix="_b")
    frame = both.select(y=pl.col("y") - pl.col("y_b"), f=pl.col("f") - pl.col("f_b"))
    row = estimate(frame, pass_rate=False).row(0, named=True)
    return {"difference": row["corrected"], "low": row["corrected_low"],
            "high": row["corrected_high"], "judge_difference": row["judge_only"],
            "n_labelled": row["n_labelled"], "n_judged": row["n_judged"]}


def labels_needed(half_width: float, var_y: float, rho: float, n_judged: int
                  ) -> tuple[int, int]:
    """(labels alone, with PPI++): the labels a 95 % interval of +- half_width needs. Alone:
    z^2 var_y / h^2. With the judge on n_judged cases, at the tuned lambda the variance is
    var_y / n (1 - rho^2 N / (N + n)) (lambda left unclipped), solved for n."""
    if not 0 < half_width < 1:
        raise ValueError(f"the half-width must be a fraction in (0, 1), got {half_width}")
    t = (half_width / Z95) ** 2
    alone = int(np.ceil(var_y / t))
    r2, big = min(rho * rho, 1.0), float(n_judged)
    b = t * big - var_y
    with_judge = (-b + np.sqrt(b * b + 4 * t * var_y * big * (1 - r2))) / (2 * t)
    return alone, int(np.ceil(max(with_judge, 2)))


def assumed_agreement(pass_rate: float, tpr: float, tnr: float) -> tuple[float, float]:
    """(var_y, rho) of a person's verdict and a judge's with the given TPR / TNR, where
    `pass_rate` is the people's: to plan before any label."""
    p, q = pass_rate, pass_rate * tpr + (1 - pass_rate) * (1 - tnr)
    cov = p * tpr - p * q
    denom = np.sqrt(p * (1 - p) * q * (1 - q))
    return p * (1 - p), float(cov / denom) if denom > 0 else 0.0
