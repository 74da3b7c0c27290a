"""Numbers with error bars (issue 32): every interval and p-value against an independent
computation — statsmodels' Wilson interval, exact McNemar test and Holm adjustment,
scipy.stats.bootstrap within Monte-Carlo tolerance — and the compare gate end to end."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

import checkllm_batch as cb
from checkllm_batch.analysis import stats
from checkllm_batch.cli import main
from checkllm_batch.store.views import wilson_sql

LABEL_SUITE = 'defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n'
SCORE_SUITE = """defaultTest:
  assert:
    - {type: rouge-n, value: "{{ref}}", threshold: 0.5, metric: overlap}
    - {type: equals, value: "{{ref}}", metric: exact, weight: 2}
    - {type: icontains, value: "{{key}}", metric: tp, weight: 0}
    - {type: not-icontains, value: "{{key}}", metric: fn, weight: 0}
    - {type: icontains, value: "zz", metric: fp, weight: 0}
derivedMetrics:
  - {name: f1, value: "2 * tp / (2 * tp + fp + fn)"}
  - {name: share, sql: "tp / __count"}
"""

# (passed, n): n = 0, n = 1, all pass, all fail, and between
WILSON = [(0, 0), (0, 1), (1, 1), (0, 10), (10, 10), (7, 10), (1, 3), (999, 1000),
          (50, 1000), (123456, 200000)]


@pytest.mark.parametrize("passed, n", WILSON)
def test_wilson_interval_matches_statsmodels(passed, n):
    low, high = wilson_sql(str(passed), str(n))
    got = duckdb.sql(f"SELECT {low}, {high}").fetchall()[0]
    if n == 0:
        assert got == (None, None)
        return
    expected = proportion_confint(passed, n, alpha=0.05, method="wilson")
    assert got == pytest.approx(expected, abs=1e-12)


def _run(tmp_path, suite: str, frame: pl.DataFrame, db="r.duckdb") -> cb.Run:
    path = tmp_path / "suite.yaml"
    path.write_text(suite)
    return cb.evaluate(path, frame, db=tmp_path / db)


def test_pass_rate_views_carry_wilson_intervals_with_errors_and_skips(tmp_path):
    """Provider p: 3 pass and 2 fail (one on a null output), provider q one pass; each
    view's interval is Wilson's on its own denominator."""
    suite = ('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n'
             '      metric: acc\n')
    frame = pl.DataFrame({"provider": ["p"] * 5 + ["q"], "label": ["a"] * 6,
                          "output": ["a", "a", "a", "b", None, "a"]})
    run = _run(tmp_path, suite, frame)
    res = cb.Results(run.con)
    for by, n_column in ((None, "cases"), ("type", "results"), ("metric", "results")):
        for row in res.pass_rates(run.run_id, by=by).iter_rows(named=True):
            n = row["passed"] + row["failed"] + row["errors"] if by else row[n_column]
            expected = proportion_confint(row["passed"], n, method="wilson")
            assert (row["pass_rate_low"], row["pass_rate_high"]) == pytest.approx(expected)
    summary = run.summary().row(0, named=True)
    assert summary["pass_rate_low"] == pytest.approx(
        proportion_confint(3, 5, method="wilson")[0], abs=1e-4)


def test_a_rate_with_no_verdicts_is_null_and_says_so_everywhere(tmp_path):
    """Every graded assertion errored (no judge): each view's rate and interval are NULL,
    not 0 %; the summary, eval's line and compare say "no verdicts (N errors)"."""
    suite = tmp_path / "s.yaml"
    suite.write_text("defaultTest:\n  assert:\n    - {type: llm-rubric, value: polite, "
                     "metric: polite}\n")
    frame = pl.DataFrame({"provider": ["p"] * 3, "output": ["a", "b", "c"]})
    db = tmp_path / "n.duckdb"
    for i in range(2):
        result = invoke("eval", suite, "--outputs", _write(tmp_path / f"{i}.parquet", frame),
                        "--db", db)
        assert "(no verdicts (3 errors))" in result.output, result.output
    res = cb.Results(db)
    run = res.run("last")
    for by in (None, "type", "metric"):
        row = res.pass_rates(run.run_id, by=by).row(0, named=True)
        assert (row["pass_rate"], row["pass_rate_low"], row["pass_rate_high"]) == (None,) * 3
    assert run.summary()["pass_rate"][0] is None
    text = invoke("compare", "--db", db, "previous", "last")
    assert "p no verdicts (3 errors) → no verdicts (3 errors)" in text.output, text.output
    assert "no test" in text.output and text.exit_code == 0
    row = res.compare("previous", "last").pass_rates.row(0, named=True)
    assert row["p_value"] is None and not row["significant"]


def _write(path, frame: pl.DataFrame) -> str:
    frame.write_parquet(path)
    return str(path)


MCNEMAR = [(0, 0), (1, 0), (0, 1), (5, 5), (14, 3), (3, 14), (0, 25), (100, 130),
           (3000, 3200)]


@pytest.mark.parametrize("b, c", MCNEMAR)
def test_exact_mcnemar_matches_statsmodels(b, c):
    expected = mcnemar([[40, b], [c, 7]], exact=True).pvalue
    assert stats.mcnemar_exact(np.array([b]), np.array([c]))[0] == pytest.approx(
        expected, rel=1e-9)


HOLM = [[0.01], [0.01, 0.04, 0.03, 0.5, 0.002], [0.2, 0.2, 0.2], [0.0, 1.0, 0.049],
        [0.9, 0.001, 0.01, 0.011, 0.02, 0.5]]


@pytest.mark.parametrize("p", HOLM)
def test_holm_matches_statsmodels(p):
    assert stats.holm(np.array(p)) == pytest.approx(multipletests(p, method="holm")[1])
    with_nan = stats.holm(np.array(p + [np.nan]))  # no test: not a comparison
    assert np.isnan(with_nan[-1]) and with_nan[:-1] == pytest.approx(
        multipletests(p, method="holm")[1])


def test_poisson_weights_follow_poisson():
    weights = stats.poisson_weights(np.random.default_rng(3), np.array([1.0] * 500 + [4.0]),
                                    4000)
    ones = weights[:, :500].ravel().astype(int)
    observed = np.bincount(ones, minlength=8)[:8]
    expected = sps.poisson.pmf(np.arange(8), 1) * ones.size
    assert sps.chisquare(observed[:6], expected[:6] * observed[:6].sum()
                         / expected[:6].sum()).pvalue > 1e-4
    assert weights[:, 500].mean() == pytest.approx(4, abs=0.15)


# --- the bootstrap of one run, against scipy.stats.bootstrap ----------------------------

REPLICATES = 4000


def _scored_frame(n: int, seed: int, repeats: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"])
    tests = n // repeats
    refs = [" ".join(rng.choice(words, 4)) for _ in range(tests)]
    quality = rng.random(tests)  # repeats of a test share its quality: they correlate
    rows = []
    for t in range(tests):
        for _ in range(repeats):
            keep = rng.random(4) < quality[t]
            out = [w if k else str(rng.choice(words)) for w, k in zip(refs[t].split(), keep)]
            rows.append({"test_id": f"t{t}" if repeats > 1 else None, "ref": refs[t],
                         "key": refs[t].split()[0], "output": " ".join(out)})
    return pl.DataFrame(rows)


def _scipy_interval(data: tuple, statistic, paired: bool = True, level: float = 0.95
                    ) -> tuple[float, float, float]:
    result = sps.bootstrap(data, statistic, paired=paired, vectorized=False,
                           n_resamples=REPLICATES, method="percentile", confidence_level=level,
                           random_state=np.random.default_rng(7))
    ci = result.confidence_interval
    return ci.low, ci.high, result.standard_error


def _close(ours: tuple[float, float], theirs: tuple[float, float, float]) -> None:
    tolerance = 0.3 * theirs[2] + 1e-9  # Monte-Carlo error of two 4000-resample estimates
    assert ours[0] == pytest.approx(theirs[0], abs=tolerance)
    assert ours[1] == pytest.approx(theirs[1], abs=tolerance)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scored")
    run = _run(tmp, SCORE_SUITE, _scored_frame(300, 1))
    cases = run.con.sql("""
        SELECT t.case_id, t.score,
               (SELECT sum(a.score * a.weight) FROM assertion_results a
                WHERE a.run_id = t.run_id AND a.case_id = t.case_id AND metric = 'overlap') AS o,
               (SELECT sum(a.score) FROM assertion_results a WHERE a.run_id = t.run_id
                AND a.case_id = t.case_id AND metric = 'tp') AS tp,
               (SELECT sum(a.score) FROM assertion_results a WHERE a.run_id = t.run_id
                AND a.case_id = t.case_id AND metric = 'fn') AS fn,
               (SELECT sum(a.score) FROM assertion_results a WHERE a.run_id = t.run_id
                AND a.case_id = t.case_id AND metric = 'fp') AS fp
        FROM test_results t ORDER BY case_id""").pl()
    intervals = cb.Results(run.con).intervals(run.run_id, replicates=REPLICATES)
    return cases, intervals


def _ours(intervals: pl.DataFrame, metric: str) -> tuple[float, float]:
    return intervals.filter(metric=metric).select("value_low", "value_high").row(0)


def test_bootstrap_mean_score_matches_scipy(scored):
    cases, intervals = scored
    _close(_ours(intervals, "mean_score"),
           _scipy_interval((cases["score"].to_numpy(),), np.mean, paired=False))


def test_bootstrap_named_metric_matches_scipy(scored):
    cases, intervals = scored
    _close(_ours(intervals, "overlap"),
           _scipy_interval((cases["o"].to_numpy(),), np.mean, paired=False))


def test_bootstrap_derived_metrics_match_scipy(scored):
    cases, intervals = scored
    tp, fp, fn = (cases[c].to_numpy() for c in ("tp", "fp", "fn"))
    _close(_ours(intervals, "f1"), _scipy_interval(
        (tp, fp, fn), lambda a, b, c: 2 * a.sum() / (2 * a.sum() + b.sum() + c.sum())))
    _close(_ours(intervals, "share"), _scipy_interval((tp,), np.mean, paired=False))


def test_bootstrap_is_seeded_and_contains_the_estimate(scored, tmp_path):
    run = _run(tmp_path, SCORE_SUITE, _scored_frame(60, 2))
    res = cb.Results(run.con)
    first = res.intervals(run.run_id, replicates=300, seed=5)
    again = cb.Results(run.con).intervals(run.run_id, replicates=300, seed=5)
    assert first.equals(again)
    metrics = res.metrics(run.run_id)
    inside = metrics.filter((pl.col("value") < pl.col("value_low") - 1e-6)
                            | (pl.col("value") > pl.col("value_high") + 1e-6))
    assert inside.is_empty(), inside
    assert metrics["value_low"].null_count() == 0


def test_bootstrap_resamples_tests_not_cases(tmp_path):
    """Ten repeats of each of 40 tests: the interval is the one of a bootstrap over tests,
    and wider than the one over cases."""
    frame = _scored_frame(400, 4, repeats=10)
    run = _run(tmp_path, SCORE_SUITE, frame)
    scores = run.con.sql("SELECT c.test_id, t.score FROM cases c JOIN test_results t "
                         "USING (run_id, case_id) ORDER BY case_id").pl()
    by_test = scores.group_by("test_id", maintain_order=True).agg(
        s=pl.col("score").sum(), n=pl.len())
    s, n = by_test["s"].to_numpy(), by_test["n"].to_numpy()
    ours = _ours(cb.Results(run.con).intervals(run.run_id, replicates=REPLICATES),
                 "mean_score")
    _close(ours, _scipy_interval((s, n), lambda a, b: a.sum() / b.sum()))
    naive = _scipy_interval((scores["score"].to_numpy(),), np.mean, paired=False)
    assert ours[1] - ours[0] > 1.5 * (naive[1] - naive[0])


EDGE_CASES = [  # outputs of one provider; label "a"
    ["a"],                      # n = 1
    ["a", "a", "a"],            # all pass
    ["b", "b", None],           # all fail, with a null output
]


@pytest.mark.parametrize("outputs", EDGE_CASES)
def test_intervals_of_degenerate_runs(tmp_path, outputs):
    frame = pl.DataFrame({"label": ["a"] * len(outputs), "output": outputs})
    run = _run(tmp_path, LABEL_SUITE, frame)
    rates = cb.Results(run.con).pass_rates(run.run_id).row(0, named=True)
    passed = sum(o == "a" for o in outputs)
    assert (rates["pass_rate_low"], rates["pass_rate_high"]) == pytest.approx(
        proportion_confint(passed, len(outputs), method="wilson"))
    assert rates["mean_score_low"] == rates["mean_score_high"] == rates["mean_score"]


# --- compare ------------------------------------------------------------------------------


def _label_runs(tmp_path, before: list[bool], after: list[bool], provider="p",
                extra_b: int = 0) -> tuple[str, str, str]:
    """Two runs of the label suite: case i passes in A when before[i], in B when after[i];
    B has `extra_b` more (unmatched) passing cases."""
    n = len(before)
    labels = [f"l{i}" for i in range(n)]
    a = pl.DataFrame({"provider": [provider] * n, "label": labels,
                      "output": [x if ok else "wrong" for x, ok in zip(labels, before)]})
    extra = [f"x{i}" for i in range(extra_b)]
    b = pl.DataFrame({"provider": [provider] * (n + extra_b), "label": labels + extra,
                      "output": [x if ok else "wrong" for x, ok in zip(labels, after)] + extra})
    path = tmp_path / "suite.yaml"
    path.write_text(LABEL_SUITE)
    db = tmp_path / "cmp.duckdb"
    run_a = cb.evaluate(path, a, db=db)
    run_a.con.close()
    run_b = cb.evaluate(path, b, db=db)
    run_b.con.close()
    return str(db), run_a.run_id, run_b.run_id


def _flips(n: int, pass_a: int, regress: int, improve: int) -> tuple[list[bool], list[bool]]:
    before = [i < pass_a for i in range(n)]
    after = list(before)
    for i in range(regress):
        after[i] = False
    for i in range(improve):
        after[n - 1 - i] = True
    return before, after


def test_compare_pass_rate_statistics_match_statsmodels_and_scipy(tmp_path):
    before, after = _flips(300, 250, 30, 8)
    db, run_a, run_b = _label_runs(tmp_path, before, after)
    comparison = cb.Results(db).compare(run_a, run_b, replicates=REPLICATES)
    row = comparison.pass_rates.row(0, named=True)
    assert (row["regressed"], row["improved"]) == (30, 8)
    assert row["p_value"] == pytest.approx(mcnemar([[220, 30], [8, 42]], exact=True).pvalue)
    assert row["diff"] == pytest.approx((250 - 30 + 8) / 300 - 250 / 300)
    # the exact conditional interval: Clopper-Pearson on the 8 of 38 discordant pairs that
    # improved, scaled to a difference over the 300 matched cases
    low, high = proportion_confint(8, 38, alpha=0.05, method="beta")
    assert (row["diff_low"], row["diff_high"]) == pytest.approx(
        (38 / 300 * (2 * low - 1), 38 / 300 * (2 * high - 1)))
    assert row["level"] == pytest.approx(0.95)  # one comparison: Holm tests it at alpha
    assert row["significant"] and row["p_adjusted"] == row["p_value"]


def test_compare_holm_across_providers_and_unmatched_cases(tmp_path):
    """Three providers; B also has cases A lacks (added), which McNemar leaves out but the
    pass rate of B counts."""
    frames = {}
    for provider, (r, i) in {"p": (12, 2), "q": (6, 5), "r": (0, 0)}.items():
        frames[provider] = _flips(80, 60, r, i)
    n = 80
    labels = [f"l{i}" for i in range(n)]
    rows_a, rows_b = [], []
    for provider, (before, after) in frames.items():
        rows_a += [(provider, x, x if ok else "no") for x, ok in zip(labels, before)]
        rows_b += [(provider, x, x if ok else "no") for x, ok in zip(labels, after)]
    rows_b += [("p", "new", "no"), ("p", "new2", "new2")]  # added in B
    schema = ["provider", "label", "output"]
    path = tmp_path / "suite.yaml"
    path.write_text(LABEL_SUITE)
    db = tmp_path / "h.duckdb"
    runs = [cb.evaluate(path, pl.DataFrame(rows, schema=schema, orient="row"), db=db)
            for rows in (rows_a, rows_b)]
    for run in runs:
        run.con.close()
    comparison = cb.Results(db).compare(runs[0].run_id, runs[1].run_id)
    rates = comparison.pass_rates.sort("provider")
    expected = [mcnemar([[0, r], [i, 0]], exact=True).pvalue for r, i in
                [(12, 2), (6, 5), (0, 0)]]
    assert rates["p_value"].to_list() == pytest.approx(expected)
    assert rates["p_adjusted"].to_list() == pytest.approx(
        multipletests(expected, method="holm")[1])
    assert rates.filter(provider="p")["cases_b"][0] == 82
    assert comparison.counts()["added"] == 2
    assert rates.filter(provider="p")["pass_rate_b"][0] == pytest.approx((60 - 12 + 2 + 1) / 82)


def test_compare_metric_differences_match_a_paired_scipy_bootstrap(tmp_path):
    frame_a, frame_b = _scored_frame(200, 8), _scored_frame(200, 9)
    frame_b = frame_b.with_columns(frame_a["ref"], frame_a["key"])  # the same cases
    path = tmp_path / "suite.yaml"
    path.write_text(SCORE_SUITE)
    db = tmp_path / "m.duckdb"
    runs = [cb.evaluate(path, f, db=db) for f in (frame_a, frame_b)]
    for run in runs:
        run.con.close()
    res = cb.Results(db)
    comparison = res.compare(runs[0].run_id, runs[1].run_id, replicates=REPLICATES)
    overlap = {r: res.query(
        "SELECT a.score FROM assertion_results a JOIN test_results t USING (run_id, case_id) "
        "WHERE a.run_id = ? AND a.metric = 'overlap' ORDER BY case_id", [r])["score"].to_numpy()
        for r in (runs[0].run_id, runs[1].run_id)}
    row = comparison.metrics.filter(metric="overlap").row(0, named=True)
    x, y = overlap[runs[0].run_id], overlap[runs[1].run_id]
    assert row["diff"] == pytest.approx(y.mean() - x.mean())
    _close((row["diff_low"], row["diff_high"]),  # at the level Holm tested the row at
           _scipy_interval((x, y), lambda a, b: b.mean() - a.mean(), level=row["level"]))
    named = comparison.metrics.filter(pl.col("metric") != "pass_rate")
    assert named["p_adjusted"].to_list() == pytest.approx(
        multipletests(named["p_value"].to_list(), method="holm")[1])


def test_compare_with_no_discordant_pairs_and_with_errors(tmp_path):
    """The same verdicts in both runs: p = 1, diff 0 [0, 0]; errors count as not passing."""
    suite = tmp_path / "s.yaml"
    suite.write_text("defaultTest:\n  assert:\n    - type: is-json\n")
    frame = pl.DataFrame({"output": ['{"a": 1}', None, "x", "[]"]})
    db = tmp_path / "e.duckdb"
    runs = [cb.evaluate(suite, frame, db=db) for _ in range(2)]
    for run in runs:
        run.con.close()
    row = cb.Results(db).compare(runs[0].run_id, runs[1].run_id).pass_rates.row(0, named=True)
    assert (row["regressed"], row["improved"], row["p_value"]) == (0, 0, 1.0)
    assert (row["diff"], row["diff_low"], row["diff_high"]) == (0.0, 0.0, 0.0)
    assert not row["significant"]


# --- the gate, end to end -------------------------------------------------------------


def invoke(*args) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def noise_and_drop(tmp_path_factory):
    """(db, A, noise-only B, dropped C): B flips 12 cases each way, C regresses 40."""
    tmp = tmp_path_factory.mktemp("gate")
    before, noisy = _flips(400, 340, 12, 12)
    _, dropped = _flips(400, 340, 40, 3)
    labels = [f"l{i}" for i in range(400)]
    path = tmp / "suite.yaml"
    path.write_text(LABEL_SUITE)
    db = tmp / "g.duckdb"
    ids = []
    for verdicts in (before, noisy, dropped):
        frame = pl.DataFrame({"provider": ["openai:gpt-4o-mini"] * 400, "label": labels,
                              "output": [x if ok else "no" for x, ok in zip(labels, verdicts)]})
        run = cb.evaluate(path, frame, db=db)
        run.con.close()
        ids.append(run.run_id)
    return db, *ids


def test_noise_passes_the_default_gate_and_fails_gate_any(noise_and_drop):
    db, a, noisy, _ = noise_and_drop
    default = invoke("compare", "--db", db, a, noisy)
    assert default.exit_code == 0, default.output
    assert "openai:gpt-4o-mini 85.0 % → 85.0 %, +0.0 points" in default.output
    assert "p = 1: not significant" in default.output
    assert invoke("compare", "--db", db, a, noisy, "--gate", "any").exit_code == 1
    as_json = invoke("compare", "--db", db, a, noisy, "--format", "json")
    assert as_json.exit_code == 0
    assert json.loads(as_json.output)["gate"]["failed"] is False


def test_a_real_drop_fails_the_gate_in_text_and_json(noise_and_drop):
    db, a, _, dropped = noise_and_drop
    text = invoke("compare", "--db", db, a, dropped)
    assert text.exit_code == 1, text.output
    assert "openai:gpt-4o-mini 85.0 % → 75.8 %, −9.2 points [" in text.output
    assert "] (95 %), p < 0.001: significant" in text.output
    assert "p < 0.001: significant" in text.output and "gate significant: fail" in text.output
    as_json = invoke("compare", "--db", db, a, dropped, "--format", "json")
    assert as_json.exit_code == 1
    document = json.loads(as_json.output)
    [row] = document["pass_rates"]
    for key in ("provider", "prompt", "pass_rate_a", "pass_rate_b", "diff", "diff_low",
                "diff_high", "p_value", "p_adjusted", "significant"):
        assert key in row
    assert row["significant"] and row["diff_high"] < 0
    assert row["p_value"] == pytest.approx(mcnemar([[0, 40], [3, 0]], exact=True).pvalue)
    assert document["gate"] == {**document["gate"], "rule": "significant", "failed": True}
    assert isinstance(document["metrics"], list)
    as_csv = invoke("compare", "--db", db, a, dropped, "--format", "csv")
    assert as_csv.exit_code == 1 and as_csv.output.startswith("provider,prompt,metric")


@pytest.mark.parametrize("args, code", [
    (["--gate", "none"], 0),
    (["--min-effect", "20"], 0),   # a 9.25-point drop is under 20 points
    (["--min-effect", "5"], 1),
    (["--alpha", "1e-12"], 0),     # not significant at that level
])
def test_gate_options(noise_and_drop, args, code):
    db, a, _, dropped = noise_and_drop
    result = invoke("compare", "--db", db, a, dropped, *args)
    assert result.exit_code == code, result.output


# --- how many cases -----------------------------------------------------------------------


def _exact_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """Power of the exact two-sided McNemar test with n pairs (scipy's binomial)."""
    discordant = np.arange(n + 1)
    weights = sps.binom.pmf(discordant, n, p10 + p01)
    power = 0.0
    for d, w in zip(discordant, weights):
        if w < 1e-12 or d == 0:
            continue
        k = np.arange(d + 1)
        p = np.minimum(1, 2 * sps.binom.cdf(np.minimum(k, d - k), d, 0.5))
        power += w * sps.binom.pmf(k, d, p10 / (p10 + p01))[p <= alpha].sum()
    return power


@pytest.mark.parametrize("rate, drop, flips", [(0.9, 0.05, 0.1), (0.8, 0.1, None),
                                               (0.6, 0.15, 0.25)])
def test_sample_size_gives_the_power_asked(rate, drop, flips):
    n = stats.sample_size(rate, drop, power=0.8, alpha=0.05, flip_rate=flips)
    psi = flips + drop if flips is not None else stats.paired_flip_rate(rate, drop)
    p10, p01 = (psi + drop) / 2, (psi - drop) / 2
    assert 0.74 <= _exact_power(n, p10, p01, 0.05) <= 0.86
    assert _exact_power(n // 2, p10, p01, 0.05) < 0.7
    assert stats.detectable_drop(n, rate, flip_rate=flips) == pytest.approx(drop, abs=0.005)


def test_power_command(noise_and_drop):
    db, a, noisy, _ = noise_and_drop
    result = invoke("power", "--pass-rate", "0.9", "--drop", "0.05", "--flip-rate", "0.1")
    assert result.exit_code == 0 and str(stats.sample_size(0.9, 0.05, flip_rate=0.1)) \
        in result.output
    per_run = invoke("power", "--db", db, "--run", noisy, "--against", a)
    assert per_run.exit_code == 0 and "openai:gpt-4o-mini" in per_run.output
    assert invoke("power", "--pass-rate", "0.9", "--drop", "0.95").exit_code == 2
    # one unit in the CLI and in Python: fractions; a percent is refused, never misread
    refused = invoke("power", "--pass-rate", "90", "--drop", "5")
    assert refused.exit_code == 2 and "90 is not a fraction" in refused.output
    with pytest.raises(cb.InputError, match="5 is not a fraction"):
        cb.Results(db).sample_size(0.9, 5)


def _f1(actual: np.ndarray, predicted: np.ndarray, label: str) -> float:
    tp = np.sum((actual == label) & (predicted == label))
    return 2 * tp / (np.sum(actual == label) + np.sum(predicted == label))


def test_classification_intervals_match_scipy(tmp_path):
    rng = np.random.default_rng(11)
    classes = np.array(["a", "b", "c"])
    gold = classes[rng.integers(0, 3, 300)]
    predicted = np.where(rng.random(300) < 0.75, gold, classes[rng.integers(0, 3, 300)])
    run = _run(tmp_path, LABEL_SUITE, pl.DataFrame({"label": gold, "output": predicted}))
    report = cb.Results(run.con).classification("label", replicates=REPLICATES).per_class
    codes = {c: i for i, c in enumerate(classes)}
    actual_i = np.array([codes[x] for x in gold])
    predicted_i = np.array([codes[x] for x in predicted])
    for label, statistic in [
            ("a", lambda x, y: _f1(x, y, 0)),
            ("micro avg", lambda x, y: np.mean(x == y)),
            ("macro avg", lambda x, y: np.mean([_f1(x, y, k) for k in range(3)]))]:
        row = report.filter(**{"class": label}).row(0, named=True)
        _close((row["f1_low"], row["f1_high"]),
               _scipy_interval((actual_i, predicted_i), statistic))


def test_eval_and_metrics_summaries_show_intervals(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(SCORE_SUITE)
    data = tmp_path / "outputs.jsonl"
    _scored_frame(40, 3).write_ndjson(data)
    db = tmp_path / "s.duckdb"
    evaluated = invoke("eval", path, "--outputs", data, "--db", db)
    assert evaluated.exit_code in (0, 1), evaluated.output
    for result in (evaluated, invoke("metrics", "--db", db)):
        assert "pass_rate_low" in result.output and "pass_rate_high" in result.output
        assert "95 % bootstrap interval" in result.output
    document = json.loads(invoke("metrics", "--db", db, "--format", "json").output)
    low = {(r["metric"], r["kind"]): r["value_low"] for r in document["intervals"]}
    assert ("f1", "derived") in low and ("overlap", "named") in low
    assert {"pass_rate_low", "pass_rate_high"} <= set(document["summary"][0])


def test_report_draws_error_bars_and_a_comparison_section(noise_and_drop, tmp_path):
    db, a, _, dropped = noise_and_drop
    path = tmp_path / "r.html"
    result = invoke("report", "--db", db, "--run", dropped, "--against", a, "-o", path)
    assert result.exit_code == 0, result.output
    html = path.read_text(encoding="utf-8")
    low, high = proportion_confint(303, 400, method="wilson")
    assert f"openai:gpt-4o-mini: 75.8% [{100 * low:.1f}%, {100 * high:.1f}%]" in html
    assert html.count('class="error-bar"') >= 1
    # the first screen: the rate with its interval as people read it, the mean score's too
    assert f"<td class=\"num rate\">75.8 % [{100 * low:.1f}, {100 * high:.1f}]</td>" in html
    assert "<th>mean score</th>" in html
    assert f"What changed since run {a}" in html
    assert ('<tr class="significant"><td>openai:gpt-4o-mini</td><td>pass rate</td>'
            '<td class="num">85.0 % → 75.8 %</td>') in html
    plain = tmp_path / "plain.html"
    assert invoke("report", "--db", db, "-o", plain).exit_code == 0
    assert "What changed" not in plain.read_text(encoding="utf-8")


def test_compare_a_provider_found_in_one_run_only(tmp_path):
    """n = 0 on one side: no rate, no difference, never significant, never gated."""
    path = tmp_path / "suite.yaml"
    path.write_text(LABEL_SUITE)
    db = tmp_path / "one-sided.duckdb"
    a = pl.DataFrame({"provider": ["p", "p"], "label": ["x", "y"], "output": ["x", "y"]})
    b = pl.DataFrame({"provider": ["p", "p", "new"], "label": ["x", "y", "z"],
                      "output": ["x", "y", "no"]})
    runs = [cb.evaluate(path, f, db=db) for f in (a, b)]
    for run in runs:
        run.con.close()
    comparison = cb.Results(db).compare(runs[0].run_id, runs[1].run_id)
    new = comparison.pass_rates.filter(provider="new").row(0, named=True)
    assert (new["cases_a"], new["pass_rate_a"], new["diff"], new["significant"]) == (
        0, None, None, False)
    assert not comparison.gate().failed
