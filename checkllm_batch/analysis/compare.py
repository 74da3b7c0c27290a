"""Run comparison: which cases regressed or improved from run A to run B, how each pass
rate and metric moved, and whether that is more than noise (analysis/significance.py).

Cases are matched by (test_id, provider, prompt, vars) — the case's identity, not its row
position, so reordered or filtered outputs still line up — and, when that key repeats within
a run (the same test asked twice), by occurrence order (case_id) within the key. A case
regressed when its test passed in A and did not pass (fail or error) in B; improved the other
way round; cases present in only one run are 'added' / 'removed', never regressions.

The gate (`Comparison.gate`): `significant` fails when a pass rate dropped with a
Holm-adjusted McNemar p-value under alpha and by at least `min_effect` points; `any` when
any case regressed (the rule before intervals); `none` never.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from .export import json_rows
from .significance import bootstrap_tests, metric_differences, pass_rate_table, replicates_needed
from .stats import REPLICATES, SEED

if TYPE_CHECKING:
    from .database import Results

# vars as values: a key whose value is null is no key (JSON Merge Patch drops it, nested
# too), and keys in name order, so a JSON row without a key and a frame's null match
_PATCHED = "json_merge_patch('{}', COALESCE(c.vars, '{}'))"
_VARS = (f"'{{' || array_to_string(list_transform(list_sort(json_keys({_PATCHED})), lambda k: "
         f"to_json(k)::VARCHAR || ':' || ({_PATCHED} -> k)::VARCHAR), ',') || '}}'")

_SIDE = f"""
    SELECT c.case_id, c.test_id, c.provider, c.prompt, {_VARS} AS vars,
           c.output, t.status, t.score, t.reason,
           row_number() OVER (PARTITION BY c.test_id, c.provider, c.prompt,
                              {_VARS} ORDER BY c.case_id) AS occurrence
    FROM cases c JOIN test_results t USING (run_id, case_id) WHERE c.run_id = {{run}}"""

_KEY = ("test_id", "provider", "prompt", "vars", "occurrence")

CASES_SQL = f"""
    WITH a AS ({_SIDE.replace("{run}", "$a")}), b AS ({_SIDE.replace("{run}", "$b")})
    SELECT {", ".join(f"COALESCE(a.{k}, b.{k}) AS {k}" for k in _KEY)},
           CASE WHEN a.case_id IS NULL THEN 'added' WHEN b.case_id IS NULL THEN 'removed'
                WHEN a.status = 'pass' AND b.status <> 'pass' THEN 'regressed'
                WHEN a.status <> 'pass' AND b.status = 'pass' THEN 'improved'
                ELSE 'unchanged' END AS change,
           a.status AS status_a, b.status AS status_b, a.score AS score_a, b.score AS score_b,
           a.case_id AS case_a, b.case_id AS case_b, a.output AS output_a,
           b.output AS output_b, b.reason AS reason_b
    FROM a FULL JOIN b ON {" AND ".join(f"a.{k} IS NOT DISTINCT FROM b.{k}" for k in _KEY)}
    ORDER BY COALESCE(a.case_id, b.case_id), b.case_id"""

_METRICS_SIDE = """
    SELECT provider, prompt, 'pass_rate' AS metric, 'test' AS kind, pass_rate AS value
    FROM pass_rates WHERE run_id = {run}
    UNION ALL
    SELECT provider, prompt, metric, kind, value FROM metric_summary WHERE run_id = {run}"""

_METRIC_KEY = ("provider", "prompt", "metric", "kind")

METRICS_SQL = f"""
    WITH a AS ({_METRICS_SIDE.replace("{run}", "$a")}), b AS ({_METRICS_SIDE.replace("{run}", "$b")})
    SELECT {", ".join(f"COALESCE(a.{k}, b.{k}) AS {k}" for k in _METRIC_KEY)},
           a.value AS value_a, b.value AS value_b, b.value - a.value AS diff
    FROM a FULL JOIN b ON {" AND ".join(f"a.{k} IS NOT DISTINCT FROM b.{k}"
                                        for k in _METRIC_KEY)}
    ORDER BY kind DESC, metric, provider NULLS FIRST, prompt NULLS FIRST"""


GATES = ("significant", "any", "none")


@dataclass(frozen=True)
class Gate:
    """A gate's decision: `failed` (exit 1) and why, in words."""

    rule: str
    alpha: float
    min_effect: float  # points
    failed: bool
    reason: str


@dataclass
class Comparison:
    run_a: str
    run_b: str
    cases: pl.DataFrame       # every matched case with `change`
    pass_rates: pl.DataFrame  # per provider x prompt: rates, diff [low, high], McNemar p
    metrics: pl.DataFrame     # provider, prompt, metric, kind, value_a, value_b, diff, ...
    alpha: float = 0.05
    replicates: int = REPLICATES  # the metric tests' bootstrap replicates, as drawn

    @property
    def regressed(self) -> pl.DataFrame:
        return self.cases.filter(pl.col("change") == "regressed")

    @property
    def improved(self) -> pl.DataFrame:
        return self.cases.filter(pl.col("change") == "improved")

    def counts(self) -> dict[str, int]:
        """Cases per change: regressed, improved, unchanged, added, removed."""
        counted = dict(self.cases["change"].value_counts().iter_rows())
        return {k: int(counted.get(k, 0))
                for k in ("regressed", "improved", "unchanged", "added", "removed")}

    def drops(self, min_effect: float = 0.0) -> pl.DataFrame:
        """The pass rates that dropped significantly, by at least `min_effect` points."""
        return self.pass_rates.filter(pl.col("significant") & (pl.col("diff") < 0)
                                      & (-100 * pl.col("diff") >= min_effect))

    def gate(self, rule: str = "significant", min_effect: float = 0.0) -> Gate:
        """Whether this comparison should fail a release, under `rule` (GATES)."""
        if rule == "any":
            n = self.counts()["regressed"]
            return Gate(rule, self.alpha, min_effect, n > 0, f"{n} case(s) regressed")
        if rule == "none":
            return Gate(rule, self.alpha, min_effect, False, "not gated")
        drops = self.drops(min_effect).height
        return Gate(rule, self.alpha, min_effect, drops > 0,
                    f"{drops} pass rate(s) dropped significantly (Holm-adjusted p < "
                    f"{self.alpha:g}, by at least {min_effect:g} points)")


def compare(results: Results, run_a: str, run_b: str, alpha: float = 0.05,
            replicates: int = REPLICATES, seed: int = SEED,
            metrics: list[str] | None = None) -> Comparison:
    """Compare run A with run B. `metrics`: only these metrics are tested (Holm counts
    them alone); the pass rates always are. `replicates` is raised to what the metric
    rows tested need (significance.replicates_needed)."""
    _same_suite(results, run_a, run_b)
    params = {"a": run_a, "b": run_b}
    cases = results.query(CASES_SQL, params)
    _enough_in_common(cases, run_a, run_b)
    values = results.query(METRICS_SQL, params)
    asked = _asked(values, metrics)
    diffs = _metric_diffs(results, cases, run_a, run_b, replicates, seed, asked)
    drawn = replicates
    if diffs.height and replicates < (needed := replicates_needed(diffs.height, alpha)):
        diffs, drawn = _metric_diffs(results, cases, run_a, run_b, needed, seed, asked), needed
    keys = ["provider", "prompt", "metric", "kind"]
    tested = values.filter(pl.col("metric") != "pass_rate", pl.col("metric").is_in(asked)
                           ).join(bootstrap_tests(diffs, alpha), on=keys, how="left",
                                  nulls_equal=True, maintain_order="left")
    rates = pass_rate_table(cases, alpha)
    of_rates = values.filter(metric="pass_rate").drop("diff").join(
        rates.drop("cases_a", "cases_b", "errors_a", "errors_b", "matched", "pass_rate_a",
                   "pass_rate_b", "regressed", "improved"), on=keys[:2], how="left", nulls_equal=True,
        maintain_order="left")
    return Comparison(run_a, run_b, cases, rates,
                      pl.concat([of_rates, tested], how="diagonal_relaxed"), alpha, drawn)


def _asked(values: pl.DataFrame, metrics: list[str] | None) -> list[str]:
    """The metrics to test: those named (each must be one of the runs'), or all."""
    names = sorted(set(values["metric"].to_list()) - {"pass_rate"})
    if metrics is None:
        return names
    unknown = [m for m in metrics if m not in names]
    if unknown:
        raise InputError(f"no metric {', '.join(map(repr, unknown))} in these runs (their "
                         f"metrics: {', '.join(names) or 'none'})")
    return list(metrics)


def _metric_diffs(results: Results, cases: pl.DataFrame, run_a: str, run_b: str,
                  replicates: int, seed: int, asked: list[str]) -> pl.DataFrame:
    """The replicate differences of the metrics asked, one row with a finite replicate
    each (a row with none has no test)."""
    diffs = metric_differences(results.con, cases, run_a, run_b, replicates, seed)
    return diffs.filter(pl.col("metric").is_in(asked),
                        pl.col("replicates").list.eval(pl.element().is_finite()).list.any())


def _same_suite(results: Results, run_a: str, run_b: str) -> None:
    """Runs of different suites are refused, naming the first difference."""
    hashes = dict(results.query("SELECT run_id, suite_hash FROM runs WHERE run_id IN (?, ?)",
                                [run_a, run_b]).rows())
    if None in hashes.values() or hashes[run_a] == hashes[run_b]:
        return
    specs = [results.query("SELECT test_index, test_id, assertion_index, spec::VARCHAR AS spec "
                           "FROM assertions WHERE run_id = ? ORDER BY ALL", [run]).rows()
             for run in (run_a, run_b)]
    differ = next((i for i, (x, y) in enumerate(zip(*specs)) if x != y), None)
    if differ is not None:
        (_, test, index, spec_a), (_, test_b, index_b, spec_b) = specs[0][differ], specs[1][differ]
        a, b = json.loads(spec_a), json.loads(spec_b)
        keys = [k for k in {**a, **b} if a.get(k) != b.get(k)]
        what = (f"test {test!r} assertion {index} in A, test {test_b!r} assertion {index_b} in "
                "B: " + ", ".join(f"{k} {a.get(k)!r} in A, {b.get(k)!r} in B" for k in keys))
    elif len(specs[0]) != len(specs[1]):
        what = f"{len(specs[0])} assertions in A, {len(specs[1])} in B"
    else:
        what = "the same assertions, other tests' vars, prompts or options"
    raise InputError(f"runs {run_a} (A) and {run_b} (B) ran different suites ({what}"[:400]
                     + "): compare two runs of one suite")


def _enough_in_common(cases: pl.DataFrame, run_a: str, run_b: str) -> None:
    """No case in common is an error; fewer than half of the larger run's, a warning."""
    matched = cases.filter(pl.col("case_a").is_not_null() & pl.col("case_b").is_not_null())
    sides = max(cases["case_a"].count(), cases["case_b"].count())
    if matched.height == 0:
        raise InputError(f"runs {run_a} and {run_b} have no case in common (cases match by "
                         "test, provider, prompt and vars): nothing to compare")
    if matched.height < sides / 2:
        warnings.warn(f"runs {run_a} and {run_b} have {matched.height} of {sides} cases in "
                      "common: the others are added or removed, not compared", stacklevel=4)


def document(comparison: Comparison, gate: Gate) -> dict:
    """The JSON of a comparison: runs, counts, pass_rates, metrics, gate, cases changed."""
    keys = ["test_id", "provider", "prompt", "vars", "status_a", "status_b", "score_a",
            "score_b", "reason_b"]
    return {"run_a": comparison.run_a, "run_b": comparison.run_b,
            "counts": comparison.counts(), "pass_rates": comparison.pass_rates,
            "metrics": comparison.metrics.filter(pl.col("metric") != "pass_rate"),
            "gate": {"rule": gate.rule, "alpha": gate.alpha, "min_effect": gate.min_effect,
                     "failed": gate.failed, "reason": gate.reason},
            "regressed": json_rows(comparison.regressed.select(keys)),
            "improved": json_rows(comparison.improved.select(keys))}
