"""`Results`: a results database opened for questions; every answer is a Polars frame.
`Results.run` finds one run and hands it out as a `Run` (analysis/run.py), which reads the
run's tables with the same query and orderings."""

from __future__ import annotations

import warnings
from pathlib import Path

import duckdb
import polars as pl

from ..errors import InputError
from ..store import results as store
from ..store.cases import changed_sources
from ..store.views import catalog
from .charts import Svg
from .classify import Classification, classification
from .compare import Comparison, compare
from .run import ASSERTION_ORDER, Run, rows_sql

RECENT = {"last": 0, "latest": 0, "previous": 1}  # run names promptfoo users type


def warn_changed_sources(con: duckdb.DuckDBPyConnection, stacklevel: int = 2) -> None:
    """A warning for each run whose cases' text is read from a file that is gone or changed."""
    for run_id, path in changed_sources(con):
        warnings.warn(f"run {run_id} reads its cases' output and vars from {path}, which "
                      "is gone or has changed since: they are not the text it scored "
                      "(evaluate with --copy-outputs to keep them in the database)",
                      stacklevel=stacklevel)


class Results:
    """A results database. Methods taking `run` default to the last run started."""

    def __init__(self, db: str | Path | duckdb.DuckDBPyConnection):
        self.con = db if isinstance(db, duckdb.DuckDBPyConnection) else store.connect(
            db, create=False)
        warn_changed_sources(self.con, stacklevel=3)

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

    def pass_rates(self, run: str | None = None, by: str | None = None) -> pl.DataFrame:
        """Pass rate per provider x prompt; `by="type"` or `by="metric"` per assertion type
        or named metric instead."""
        views = {None: "pass_rates", "type": "pass_rates_by_type",
                 "metric": "pass_rates_by_metric"}
        if by not in views:
            raise InputError(f"by={by!r}: expected one of None, 'type', 'metric'")
        return self._of_run(views[by], run, "ALL NULLS FIRST")

    def metrics(self, run: str | None = None) -> pl.DataFrame:
        """Named metrics (mean = sum / weight) and derived metrics, long format."""
        return self._of_run("metric_summary", run, "kind DESC, metric, provider NULLS FIRST, "
                            "prompt NULLS FIRST")

    def metrics_wide(self, run: str | None = None) -> pl.DataFrame:
        """One row per provider x prompt, one column per named or derived metric."""
        long = self.metrics(run)
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

    def fscore(self, tp: str = "tp", fp: str = "fp", fn: str = "fn",
               run: str | None = None) -> pl.DataFrame:
        """Precision, recall and F1 from the F-score recipe's counter metrics."""
        return self.query("SELECT * EXCLUDE (run_id) FROM fscore(?, ?, ?) WHERE run_id = ? "
                          "ORDER BY ALL NULLS FIRST", [tp, fp, fn, self.run_id(run)])

    def classification(self, gold: str, predicted: str | None = None, *,
                       run: str | None = None, normalize: bool = True) -> Classification:
        """Precision / recall / F1 per class, macro and micro, and the confusion matrix, per
        provider; gold labels from var `gold`, predictions from the output (or the JSON path
        `predicted` into it, e.g. '$.label')."""
        return classification(self, self.run_id(run), gold, predicted, normalize)

    def compare(self, run_a: str, run_b: str, partial: bool = False) -> Comparison:
        """Cases that regressed or improved from run A to run B, and each metric's change.
        A run that did not finish is refused unless `partial`: its missing cases would
        read as removed."""
        runs = self.run_id(run_a), self.run_id(run_b)
        for run in runs:
            status = self.status(run)
            if status != "finished" and not partial:
                raise InputError(f"run {run} is {status}: its results are partial; resume it "
                                 "first, or compare it anyway with --partial")
        return compare(self, *runs)

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

    def report(self, path: str | Path, run: str | None = None) -> Path:
        """Write a self-contained HTML report of the run."""
        from .report import write_report

        return write_report(self, self.run_id(run), Path(path))

    def _repr_html_(self) -> str:
        """Jupyter shows a database as its last finished run's pass rates per provider."""
        from .html_summary import results_html

        return results_html(self)
