"""`Results`: a results database opened for questions; every answer is a Polars frame.
`Results.run` finds one run and hands it out as a `Run` (analysis/run.py), which reads the
run's tables with the same query and orderings."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from .. import arguments
from ..errors import InputError
from ..store import runs as store
from ..store.cases import create_cases_view
from ..store.views import catalog
from .charts import Svg
from .classify import Classification, classification
from .compare import Comparison, compare
from .intervals import run_intervals
from .run import ASSERTION_ORDER, Run, rows_sql
from .stats import LEVEL, REPLICATES, SEED

RECENT = {"last": 0, "latest": 0, "previous": 1}  # run names promptfoo users type


def warn_changed_sources(con: duckdb.DuckDBPyConnection, stacklevel: int = 2) -> None:
    """`cases` resolved again on `con`, and one warning line for each run whose cases' text
    is in a file or folder that is gone, changed or damaged (store/cases.py)."""
    for unreadable in create_cases_view(con):
        warnings.warn(str(unreadable), stacklevel=stacklevel)


class Results:
    """A results database. Methods taking `run` default to the last run started."""

    def __init__(self, db: str | Path | duckdb.DuckDBPyConnection):
        arguments.database(db)
        self.con = db if isinstance(db, duckdb.DuckDBPyConnection) else store.connect(
            db, create=False)
        self._path = None if isinstance(db, duckdb.DuckDBPyConnection) else db
        if not self.con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'runs' "
                                "AND database_name = current_database()").fetchall():
            raise InputError("db: the connection given holds no results database (no runs "
                             "table): evaluate into it first")
        warn_changed_sources(self.con, stacklevel=3)  # also resolves a connection given
        self._intervals: dict[tuple, pl.DataFrame] = {}

    def query(self, sql: str, params: list | dict | None = None) -> pl.DataFrame:
        """Any SQL over the tables, views and macros (see `catalog()`), as a frame."""
        try:
            return store.frame(self.con, sql, params)
        except duckdb.Error as e:
            raise InputError(f"query failed: {str(e).splitlines()[0]}") from None

    def catalog(self) -> pl.DataFrame:
        """Tables, views and table macros with a one-line description each."""
        return pl.DataFrame(catalog(self.con), schema=["name", "kind", "description"],
                            orient="row")

    def run_id(self, run: str | None = None) -> str:
        """`run` checked to exist (a unique prefix is enough), or the last finished run;
        `last` and `previous` name the last finished run and the one before it, as in
        promptfoo. An interrupted or failed run is only read when named."""
        if run in RECENT:
            return self._recent(run)
        rows = self.con.sql(
            "SELECT run_id FROM runs WHERE (? IS NULL AND status = 'finished') "
            "OR starts_with(run_id, ?) ORDER BY started_at DESC", params=[run, run]).fetchall()
        exact = [r[0] for r in rows if r[0] == run]
        if exact or (rows and (run is None or len(rows) == 1)):
            return exact[0] if exact else rows[0][0]
        if not rows:
            raise InputError(f"no run {run!r} in the database" if run
                             else "the database has no finished run (name an interrupted or failed one)")
        raise InputError(f"run id prefix {run!r} matches {len(rows)} runs")

    def run(self, run: str | None = None) -> Run:
        """The run named `run` (as `run_id` finds it), its tables as frames."""
        return Run(self.con, self.run_id(run))

    def _recent(self, which: str) -> str:
        rows = self.con.sql("SELECT run_id FROM runs WHERE status = 'finished' "
                            "ORDER BY started_at DESC LIMIT 2").fetchall()
        if len(rows) <= RECENT[which]:
            raise InputError(f"no {which!r} run: the database has {len(rows)} finished "
                             "run(s) (name an interrupted or failed one by its id)")
        return rows[RECENT[which]][0]

    def _of_run(self, view: str, run: str | None, order: str) -> pl.DataFrame:
        return self.query(rows_sql(view, order), [self.run_id(run)])

    def runs(self) -> pl.DataFrame:
        """One row per run: when, status, cases, pass rate, number of providers."""
        return self.query("SELECT * FROM run_overview ORDER BY started_at")

    def cases(self, run: str | None = None) -> pl.DataFrame:
        """One row per case with its test verdict (status, score, reason)."""
        return self._of_run("case_results", run, "case_id")

    def results(self, run: str | None = None) -> pl.DataFrame:
        """One row per case x assertion, each assert-set followed by its members."""
        return self._of_run("assertion_results", run, ASSERTION_ORDER)

    def failures(self, run: str | None = None) -> pl.DataFrame:
        """Failed and errored assertions with their reasons (metric-only counters left out)."""
        return self._of_run("failures", run, "provider NULLS FIRST, case_id, assertion_index")

    def pass_rates(self, run: str | None = None, by: str | None = None,
                   intervals: bool = True) -> pl.DataFrame:
        """Pass rate per provider x prompt with its 95 % Wilson interval (pass_rate_low,
        pass_rate_high); `by="type"` or `by="metric"` per assertion type or named metric
        instead. Per provider x prompt, `intervals` adds the mean score's bootstrap
        interval (mean_score_low, mean_score_high; see `intervals`)."""
        views = {None: "pass_rates", "type": "pass_rates_by_type",
                 "metric": "pass_rates_by_metric"}
        if by not in views:
            raise InputError(f"by={by!r}: expected one of None, 'type', 'metric'")
        rates = self._of_run(views[by], run, "ALL NULLS FIRST")
        if by is not None or not intervals:
            return rates
        means = self.intervals(run).filter(metric="mean_score").select(
            "provider", "prompt", mean_score_low="value_low", mean_score_high="value_high")
        return rates.join(means, on=["provider", "prompt"], how="left", nulls_equal=True)

    def intervals(self, run: str | None = None, replicates: int = REPLICATES,
                  seed: int = SEED, level: float = LEVEL) -> pl.DataFrame:
        """Bootstrap intervals per provider x prompt (provider, prompt, metric, kind,
        value_low, value_high) of the mean score (metric `mean_score`), every named metric
        and every derived metric: `replicates` resamples of the run's tests (a test's
        repeats together), seeded, so the same call gives the same interval; percentile
        interval at `level`. Computed when asked (a second or so per million cases of
        pass/fail results), kept for this Results."""
        key = (self.run_id(run), replicates, seed, level)
        if key not in self._intervals:
            self._intervals[key] = run_intervals(self.con, *key)
        return self._intervals[key]

    def metrics(self, run: str | None = None, intervals: bool = True) -> pl.DataFrame:
        """Named metrics (mean = sum / weight) and derived metrics, long format; with
        `intervals`, each value's bootstrap interval (value_low, value_high)."""
        values = self._of_run("metric_summary", run, "kind DESC, metric, provider NULLS "
                              "FIRST, prompt NULLS FIRST")
        if not intervals:
            return values
        keys = ["provider", "prompt", "metric", "kind"]
        bounds = self.intervals(run).filter(pl.col("kind") != "test")
        return values.join(bounds, on=keys, how="left", nulls_equal=True,
                           maintain_order="left").select(
            *keys, "value", "value_low", "value_high", pl.exclude(*keys, "value", "value_low",
                                                                   "value_high"))

    def metrics_wide(self, run: str | None = None) -> pl.DataFrame:
        """One row per provider x prompt, one column per named or derived metric."""
        long = self.metrics(run, intervals=False)
        if long.is_empty():
            return pl.DataFrame(schema={"provider": pl.String, "prompt": pl.String})
        return long.pivot("metric", index=["provider", "prompt"], values="value",
                          aggregate_function="first").sort("provider", nulls_last=False)

    def scores(self, run: str | None = None) -> pl.DataFrame:
        """Histogram of assertion scores in [0, 1], 10 bins, per provider x type."""
        return self._of_run("score_distribution", run, "provider NULLS FIRST, type, bin_start")

    def judge_costs(self, run: str | None = None) -> pl.DataFrame:
        """Judge calls, errors, tokens and cost per judge model."""
        return self._of_run("judge_costs", run, "model NULLS FIRST")

    def judge_agreement(self, label: str, metric: str | None = None, type: str | None = None,
                        *, run: str | None = None) -> pl.DataFrame:
        """The judge against a person's labels (the var `label`: pass/fail, true/false,
        yes/no, 1/0, a boolean, or a score against the assertion's threshold), per judge
        model x graded assertion (type, metric) x provider: n, agreement, Cohen's kappa with
        its 95 % asymptotic interval (kappa_low, kappa_high), tpr / tnr of the judge (a pass
        is positive), the 2 x 2 counts tp / fn / fp / tn; `errors` (the judge errored) and
        `bad_labels` (unreadable) apart, never in n."""
        from .agreement import agreement

        return agreement(self, self.run_id(run), label, metric, type)

    def judge_disagreements(self, label: str, metric: str | None = None,
                            type: str | None = None, *, run: str | None = None,
                            limit: int | None = None) -> pl.DataFrame:
        """The labelled cases where the judge's verdict differs from the person's: output,
        the judge's status, score and reason, and the label, side by side."""
        from .agreement import disagreements

        return disagreements(self, self.run_id(run), label, metric, type, limit)

    def add_labels(self, frame: Any, label: str = "human", *, run: str | None = None,
                   key: list[str] | None = None, labelled_by: str | None = None,
                   source: str = "frame", anchor: bool = False) -> dict:
        """Store people's labels given after the run: `frame` (Polars or pandas) has a
        column `label` (the same spellings as a label var: pass/fail, true/false, yes/no,
        1/0, a score) and `case_id`, or the dataset's own id columns (vars; or `key`), and
        optionally `assertion_index` and `labelled_by`. Every row must match a case.
        Returns the counts stored; judge_agreement and the corrected rates read them.
        `anchor`: freeze them too as the anchor set of `label`, which `judge_drift` follows
        in every run that judges the same outputs and vars again."""
        from .labels import add_labels

        rows = frame if isinstance(frame, pl.DataFrame) else pl.from_pandas(frame)
        return add_labels(self._writable(), self.run_id(run), rows, label, keys=key,
                          labelled_by=labelled_by, source=source, anchor=anchor)

    def judge_drift(self, label: str = "human", *, alpha: float = 0.05,
                    metric: str | None = None, type: str | None = None) -> pl.DataFrame:
        """The judge on the anchor set of `label` (frozen by add_labels(anchor=True)) run
        over run: per run x judge x graded assertion, its agreement, tpr, tnr and pass
        rate on the anchors, and against the previous run the anchors it now gets wrong
        (worse) or right (better) with the exact McNemar p-value; `moved` below alpha."""
        from .labels import drift

        return drift(self.con, label, alpha, metric, type)

    def sample_labels(self, n: int, by: list[str] | None = None, seed: int | None = None,
                      *, run: str | None = None, label: str = "human",
                      type_: str | None = None, metric: str | None = None,
                      judge_model: str | None = None, allocation: str = "proportional"
                      ) -> pl.DataFrame:
        """Draw n judged cases to label, uniformly or by strata (`by`: provider, prompt,
        verdict, type, metric, judge_model or a var; labels split in proportion, or evenly
        with allocation="equal"), record every candidate's
        inclusion probability, and return the drawn ones to label: case, output, vars,
        the judge's verdict, score and reason, and an empty `label` column. type_, metric,
        judge_model: which graded verdict, when cases have several."""
        from .labels import draw, record_sample

        run_id, by = self.run_id(run), list(by or [])
        drawn, seed = draw(self.con, run_id, n, by, seed, type_=type_, metric=metric,
                           judge_model=judge_model, allocation=allocation)
        record_sample(self._writable(), run_id, drawn, by, seed)
        return drawn.filter("sampled").select(
            "case_id", "provider", "prompt", "output", "vars",
            pl.col("status").alias("verdict"), "score", "reason", "stratum",
            "inclusion_prob", pl.lit(None, pl.String).alias(label)).with_columns(
            pl.lit(seed).alias("seed"))

    def corrected_pass_rates(self, label: str = "human", *, run: str | None = None,
                             labels_random: bool = False, slice: str | None = None,
                             metric: str | None = None, type: str | None = None,
                             scores: bool = False) -> pl.DataFrame:
        """The judge's pass rates (mean scores with `scores`) corrected by people's labels
        (PPI++), per judge model x graded assertion x provider (x the var `slice`): the
        judge-only and labels-only rates and the corrected one, each with its 95 %
        interval, n_labelled, n_judged, lam and n_effective (the labels as precise without
        the judge). Labels must come from `sample_labels` (stratified estimates by its
        strata), or be declared a uniform random sample (`labels_random`)."""
        from .corrected import corrected

        return corrected(self, self.run_id(run), label, scores=scores,
                         labels_random=labels_random, slice=slice, metric=metric, type_=type)

    def labels_plan(self, half_width: float | None = None, label: str = "human", *,
                    run: str | None = None, tpr: float | None = None,
                    tnr: float | None = None, drop: float | None = None,
                    power: float = 0.8, alpha: float = 0.05) -> pl.DataFrame:
        """How many labels a 95 % interval of +- half_width (a fraction) needs, alone and
        with the judge, from the labels so far or an assumed tpr / tnr. With `drop`
        instead: the labels each group (provider, or run) needs for two groups' corrected
        pass rates to detect a difference of `drop` with `power` at `alpha`."""
        from .corrected import difference_half_width, plan
        from .power import fractions

        if (half_width is None) == (drop is None):
            raise InputError("give a half-width or a drop to detect, not both")
        if drop is not None:
            fractions(drop=drop)
        width = difference_half_width(drop, power, alpha) if drop is not None else half_width
        assert width is not None  # one of the two was given
        return plan(self, self.run_id(run), label, width, tpr, tnr)

    def corrected_sample_size(self, drop: float, pass_rate: float, *, tpr: float = 0.9,
                              tnr: float | None = None, judged: int | None = None,
                              power: float = 0.8, alpha: float = 0.05) -> tuple[int, int]:
        """(labels alone, labels with the judge) each of two groups needs for their
        corrected pass rates' difference to detect `drop` from the people's `pass_rate`
        with `power` at `alpha`, the judge assumed to have `tpr` / `tnr` (tnr: tpr's),
        on `judged` cases per group (None: as many as wanted). As sample_size, for labels."""
        from .corrected import corrected_sample_size

        return corrected_sample_size(drop, pass_rate, tpr, tnr, judged, power, alpha)

    def compare_corrected(self, run_a: str, run_b: str, label: str = "human",
                          labels_random: bool = False) -> pl.DataFrame:
        """B - A of the corrected pass rates, with a 95 % interval (see corrected.py)."""
        from .corrected import compare_corrected

        return compare_corrected(self, self.run_id(run_a), self.run_id(run_b), label,
                                 labels_random)

    def _writable(self) -> duckdb.DuckDBPyConnection:
        """The connection, reopened to write where it was opened read-only from a path."""
        if self._path is not None:
            self.con.close()
            self.con, self._path = store.connect(self._path), None
        return self.con

    def fscore(self, tp: str = "tp", fp: str = "fp", fn: str = "fn",
               run: str | None = None) -> pl.DataFrame:
        """Precision, recall and F1 from the F-score recipe's counter metrics."""
        return self.query("SELECT * EXCLUDE (run_id) FROM fscore(?, ?, ?) WHERE run_id = ? "
                          "ORDER BY ALL NULLS FIRST", [tp, fp, fn, self.run_id(run)])

    def classification(self, gold: str, predicted: str | None = None, *,
                       run: str | None = None, normalize: bool = True,
                       intervals: bool = True, replicates: int = REPLICATES,
                       seed: int = SEED, level: float = LEVEL) -> Classification:
        """Precision / recall / F1 per class, macro and micro, and the confusion matrix, per
        provider; gold labels from var `gold`, predictions from the output (or the JSON path
        `predicted` into it, e.g. '$.label'). With `intervals`, each figure's bootstrap
        interval (precision_low, precision_high, ...: tests resampled, seeded)."""
        settings = {"replicates": replicates, "seed": seed, "level": level}
        return classification(self, self.run_id(run), gold, predicted, normalize,
                              settings if intervals else None)

    def compare(self, run_a: str, run_b: str, partial: bool = False, alpha: float = 0.05,
                replicates: int = REPLICATES, seed: int = SEED,
                metrics: list[str] | None = None) -> Comparison:
        """Cases that regressed or improved from run A to run B; per provider x prompt the
        pass rates, their difference over the matched cases with McNemar's exact test and
        the exact conditional interval that inverts it; each metric's change with a paired
        bootstrap test and its percentile interval. Holm's procedure within each family
        (significant below `alpha`); each interval at the level Holm tested its row at
        (column `level`), so it excludes 0 exactly when the row is significant. `metrics`:
        test only these (Holm counts them alone). `replicates` is raised to what the
        metric rows need. A run that did not finish is refused unless `partial`: its
        missing cases would read as removed."""
        runs = self.run_id(run_a), self.run_id(run_b)
        for run in runs:
            status = self.status(run)
            if status != "finished" and not partial:
                raise InputError(f"run {run} is {status}: its results are partial; resume it "
                                 "first, or compare it anyway with --partial")
        return compare(self, *runs, alpha=alpha, replicates=replicates, seed=seed,
                       metrics=metrics)

    def sample_size(self, pass_rate: float, drop: float, power: float = 0.8,
                    alpha: float = 0.05, flip_rate: float | None = None) -> int:
        """Matched cases two runs need for `compare` to detect a pass rate dropping by
        `drop` from `pass_rate` (fractions) with `power` at `alpha`; `flip_rate` is the
        share of cases whose verdict changes between runs (default: independent runs,
        the cautious figure)."""
        from .power import sample_size

        return sample_size(pass_rate, drop, power, alpha, flip_rate)

    def detectable(self, run: str | None = None, against: str | None = None,
                   power: float = 0.8, alpha: float = 0.05) -> pl.DataFrame:
        """Per provider x prompt of `run`: the smallest pass-rate drop (detectable_drop,
        a fraction) a paired comparison of its size detects; with `against` (another
        run of the same cases) the flip rate measured between them."""
        from .power import detectable

        return detectable(self, run, against, power, alpha)

    def status(self, run: str | None = None) -> str:
        """`finished`, or `running`, `interrupted`, `failed`: a run with partial results."""
        return self.run(run).status

    def pass_rate_chart(self, run: str | None = None) -> Svg:
        """Test pass rate per provider (x prompt) as an inline SVG bar chart."""
        from .report import pass_rate_chart

        return pass_rate_chart(self.pass_rates(run))

    def metric_chart(self, metric: str, run: str | None = None) -> Svg:
        """One named or derived metric per provider (x prompt) as an SVG bar chart."""
        from .report import metric_charts

        rows = self.metrics(run).filter(pl.col("metric") == metric)
        if rows.is_empty():
            raise InputError(f"no metric {metric!r} in run {self.run_id(run)}")
        return metric_charts(rows)[0]

    def export(self, directory: str | Path, run: str | None = None) -> list[Path]:
        """Write one Parquet file per table of the run into `directory`."""
        from .export import export_run

        return export_run(self.con, self.run_id(run), Path(directory))

    def report(self, path: str | Path, run: str | None = None,
               against: str | None = None, label: str | None = None,
               by: str | list[str] | tuple[str, ...] = ()) -> Path:
        """Write a self-contained HTML report of the run; with `against` (an earlier run),
        a section saying which pass rates and metrics changed significantly; with `label`
        (the var holding a person's verdicts), the judge's agreement with them and the
        cases where they disagree; `by` names vars whose values are slices of "where it
        fails"."""
        from .report import write_report

        return write_report(self, self.run_id(run), Path(path), against, label,
                            (by,) if isinstance(by, str) else tuple(by))

    def _repr_html_(self) -> str:
        """Jupyter shows a database as its last finished run's pass rates per provider."""
        from .html_summary import results_html

        return results_html(self)
