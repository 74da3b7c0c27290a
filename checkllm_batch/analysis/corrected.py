"""Pass rates and mean scores corrected by people's labels (prediction-powered inference).

`estimate` corrects any frame of judged cases (a label or null per case, the judge's
outcome, a sampling stratum and inclusion probability) with the SQL of store/corrected.py,
as the `corrected_pass_rates` / `corrected_scores` macros do over a run (`corrected`
reads them for one run, refusing labels that were not drawn by a sample unless declared
random); `difference` / `paired_difference` correct a difference, `compare_corrected` two
runs; `labels_needed` and `plan` say how many labels an interval needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl

from ..errors import InputError
from ..store.corrected import corrected_sql

if TYPE_CHECKING:
    from .database import Results


def estimate(frame: pl.DataFrame, keys: Sequence[str] = (), pass_rate: bool = True
             ) -> pl.DataFrame:
    """Per group of `keys`: judge-only, labels-only and PPI++ estimates with intervals.
    `frame` has the keys, `y` (the person's outcome, null without a label), `f` (the
    judge's), and optionally `stratum` (default one), `a` (1 / inclusion probability,
    default 1) and `m` (the judged cases an unlabelled row stands for, default 1)."""
    defaults = {"stratum": pl.lit("all"), "a": pl.lit(1.0), "m": pl.lit(1)}
    if "m" in frame.columns and frame.filter(pl.col("y").is_not_null() & (pl.col("m") != 1)
                                             ).height:
        raise ValueError("a labelled row stands for one case (m = 1)")
    rows = frame.with_columns(
        *[value.alias(name) for name, value in defaults.items() if name not in frame.columns],
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


def difference_half_width(drop: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The 95 % half-width each of two independent groups' corrected estimates needs for
    their difference to detect `drop` with `power` by a two-sided z-test at `alpha`: the
    difference's variance, twice a group's, is drop^2 / (z_{1-alpha/2} + z_power)^2."""
    z = NormalDist().inv_cdf
    return drop * Z95 / ((z(1 - alpha / 2) + z(power)) * np.sqrt(2))


def labels_for_difference(drop: float, var_y: float, rho: float, n_judged: int | None,
                          power: float = 0.8, alpha: float = 0.05) -> tuple[int, int]:
    """(labels alone, with PPI++) per group for two groups' corrected difference to detect
    `drop` (n_judged: each group's judged cases; None: as many as wanted)."""
    big = n_judged if n_judged is not None else 10 ** 12
    return labels_needed(difference_half_width(drop, power, alpha), var_y, rho, big)


def corrected_sample_size(drop: float, pass_rate: float, tpr: float = 0.9,
                          tnr: float | None = None, judged: int | None = None,
                          power: float = 0.8, alpha: float = 0.05) -> tuple[int, int]:
    """(labels alone, with the judge) per group for two independent groups' corrected pass
    rates (two providers, or two runs each with its own labels) to detect a difference of
    `drop` around the people's `pass_rate`, the judge assumed to have `tpr` / `tnr`."""
    from .power import fractions

    tnr = tpr if tnr is None else tnr
    fractions(drop=drop, pass_rate=pass_rate, tpr=tpr, tnr=tnr)
    if not 0 < drop < 1 or not 0 < pass_rate < 1:
        raise InputError("the drop and the pass rate must be strictly between 0 and 1")
    if judged is not None and judged < 2:
        raise InputError(f"judged cases per group must be at least 2, got {judged}")
    var_y, rho = assumed_agreement(pass_rate, tpr, tnr)
    return labels_for_difference(drop, var_y, rho, judged, power, alpha)


def assumed_agreement(pass_rate: float, tpr: float, tnr: float) -> tuple[float, float]:
    """(var_y, rho) of a person's verdict and a judge's with the given TPR / TNR, where
    `pass_rate` is the people's: to plan before any label."""
    p, q = pass_rate, pass_rate * tpr + (1 - pass_rate) * (1 - tnr)
    cov = p * tpr - p * q
    denom = np.sqrt(p * (1 - p) * q * (1 - q))
    return p * (1 - p), float(cov / denom) if denom > 0 else 0.0


# Dorner, Nastl & Hardt (ICLR 2025): the caveat, printed beside every corrected figure
CAVEAT = ("n_effective: the labels that alone would give the corrected interval's width "
          "(judge_only is the judge's rate, not the people's). A judge no better than the "
          "model it grades saves at most about half the labels, x 2 (Dorner, Nastl & Hardt, "
          "ICLR 2025); x 1 means the judge added nothing.")
ORDER = "judge_model NULLS FIRST, type, metric NULLS FIRST, provider NULLS FIRST"
REFUSED = ("the labels in {label!r} of run {run} were not drawn by a sample of this "
           "product, so nothing says they are a random sample of the judged cases, and a "
           "correction from them could be biased. Draw one with `checkllm-batch labels "
           "sample --n 300 -o to_label.csv`, label it and `labels import` it; or, if these "
           "labels are a uniform random sample of the cases, say so with --labels-random "
           "(labels_random=True)")


def corrected(results: Results, run_id: str, label: str, *, scores: bool = False,
              labels_random: bool = False, slice: str | None = None,
              metric: str | None = None, type_: str | None = None) -> pl.DataFrame:
    """corrected_pass_rates (or corrected_scores) for one run, refused without a drawn
    sample unless the labels are declared random; `labels` says which they were."""
    if not labels_random and not results.query(
            "SELECT count(*) AS n FROM label_samples WHERE run_id = ?", [run_id])["n"][0]:
        from .agreement import agreement

        agreement(results, run_id, label, metric, type_)  # the label checked to exist
        raise InputError(REFUSED.format(label=label, run=run_id))
    macro = "corrected_scores" if scores else "corrected_pass_rates"
    frame = results.query(
        f"SELECT * EXCLUDE (run_id{'' if slice else ', slice'}) FROM {macro}(?, "
        "labels_random := ?, slice := ?, metric := ?, type := ?) WHERE run_id = ? "
        f"ORDER BY {ORDER}{', slice NULLS FIRST' if slice else ''}",
        [label, labels_random, slice, metric, type_, run_id])
    source = "declared a uniform random sample" if labels_random else "a drawn sample"
    return frame.with_columns(labels=pl.lit(source))


def plan(results: Results, run_id: str, label: str, half_width: float,
         tpr: float | None = None, tnr: float | None = None) -> pl.DataFrame:
    """Per graded assertion x provider: the labels a 95 % interval of +- half_width needs
    alone and with the judge (PPI++), from the labels so far (their variance and the
    judge's correlation with them), or from an assumed TPR / TNR when given or when there
    are none (the people's rate then read back from the judge's through them). For a
    difference of two groups, half_width is difference_half_width's."""
    judged = results.query(
        "SELECT judge_model, type, metric, provider, count(*) AS n_judged, "
        "avg((status = 'pass')::INTEGER) AS judge_rate FROM graded_verdicts "
        f"WHERE run_id = ? AND status IN ('pass', 'fail') GROUP BY ALL ORDER BY {ORDER}",
        [run_id])
    if judged.is_empty():
        raise InputError(f"run {run_id} has no judged model-graded verdict to plan for")
    so_far = results.query(
        "SELECT judge_model, type, metric, provider, count(*) AS n_labelled, "
        "var_pop(human::INTEGER) AS var_y, corr(human::INTEGER, (status = 'pass')::INTEGER)"
        " AS rho FROM judge_labels(?) WHERE run_id = ? AND human IS NOT NULL "
        "AND status IN ('pass', 'fail') GROUP BY ALL", [label, run_id])
    keys = ["judge_model", "type", "metric", "provider"]
    rows = judged.join(so_far, on=keys, how="left", nulls_equal=True).to_dicts()
    return pl.DataFrame([_plan_row(r, half_width, tpr, tnr) for r in rows])  # per group


def _plan_row(row: dict, half_width: float, tpr: float | None, tnr: float | None) -> dict:
    assumed = tpr is not None or not row["n_labelled"] or row["n_labelled"] < 2
    if assumed:
        tpr, tnr = (0.9, 0.9) if tpr is None else (tpr, tnr if tnr is not None else tpr)
        if tpr + tnr <= 1:
            raise InputError(f"an assumed judge with tpr {tpr} + tnr {tnr} <= 1 is no "
                             "better than a coin: nothing to plan from")
        people = float(np.clip((row["judge_rate"] - 1 + tnr) / (tpr + tnr - 1), 0.01, 0.99))
        var_y, rho = assumed_agreement(people, tpr, tnr)
        source = f"assumed tpr {tpr:g}, tnr {tnr:g}"
    else:
        var_y, rho = row["var_y"], row["rho"] if row["rho"] is not None else 0.0
        source = f"{row['n_labelled']} labels so far"
    try:
        alone, with_judge = labels_needed(half_width, var_y, rho, row["n_judged"])
    except ValueError as e:
        raise InputError(str(e)) from None
    return {**{k: row[k] for k in ("judge_model", "type", "metric", "provider",
                                   "n_judged")},
            "n_labelled": row["n_labelled"] or 0, "rho": rho, "labels_alone": alone,
            "labels_with_judge": with_judge, "from": source,
            "note": "more than the judged cases: label them all" if with_judge >= row[
                "n_judged"] else ("labels alone would need more than the judged cases"
                                  if alone >= row["n_judged"] else None)}


def compare_corrected(results: Results, run_a: str, run_b: str, label: str,
                      labels_random: bool = False) -> pl.DataFrame:
    """Run B - run A of the corrected pass rates per judge model x graded assertion x
    provider, with a 95 % interval. Each run's estimate uses its own labels; the two are
    taken as independent, which over-states the interval when both runs judged the same
    cases (their errors then move together)."""
    keys = ["judge_model", "type", "metric", "provider"]
    a, b = (corrected(results, run, label, labels_random=labels_random)
            for run in (run_a, run_b))
    rows = a.join(b, on=keys, suffix="_b", nulls_equal=True).to_dicts()
    out = [{**{k: r[k] for k in keys}, "corrected_a": r["corrected"],
            "corrected_b": r["corrected_b"],
            **(difference({k[:-2]: v for k, v in r.items() if k.endswith("_b")}, r)
               if r["corrected"] is not None and r["corrected_b"] is not None
               else {"difference": None, "low": None, "high": None,
                     "judge_difference": None})} for r in rows]  # one per group
    return pl.DataFrame(out, schema_overrides={"difference": pl.Float64, "low": pl.Float64,
                                               "high": pl.Float64})
