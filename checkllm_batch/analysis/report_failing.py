"""The report's "where it fails": the slices with the lowest pass rates (by provider,
prompt, assertion type, metric and the vars a reader names), each with its 95 % interval,
and the failing assertions' most common reasons, each linked to an example case."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..store.views import rate_interval_sql
from .report_html import html_table, td
from .wording import number, rate_text

if TYPE_CHECKING:
    from .database import Results

MAX_SLICES, MAX_REASONS, REASON_CHARS = 12, 10, 240

_COUNTS = """COUNT(*) AS n, COUNT(*) FILTER (status = 'pass') AS passed,
             COUNT(*) FILTER (status = 'fail') AS failed,
             COUNT(*) FILTER (status = 'error') AS errors,
             COUNT(*) FILTER (status = 'skipped') AS skipped"""
_LOW, _HIGH = rate_interval_sql("passed", "n - skipped", "n", "skipped > 0")
_RATES = f"""SELECT *, passed / NULLIF(n - skipped, 0) AS pass_rate, {_LOW} AS low,
                    {_HIGH} AS high FROM ({{counts}})"""
# per case (a test's verdict) by a column of case_rows, or by a var of cases
_BY_CASE = """SELECT '{dimension}' AS dimension, {key}::VARCHAR AS slice, {counts}
              FROM {source} c JOIN test_results t USING (run_id, case_id)
              WHERE c.run_id = $run GROUP BY ALL"""
# per assertion result (metric-only counters apart)
_BY_ASSERTION = """SELECT '{dimension}' AS dimension, a.{key}::VARCHAR AS slice, {counts}
                   FROM assertion_results a WHERE a.run_id = $run
                        AND NOT COALESCE(a.metric_only, false) AND a.{key} IS NOT NULL
                   GROUP BY ALL"""
_REASONS = f"""
    SELECT a.type, a.status, left(a.reason, {REASON_CHARS}) AS reason, COUNT(*) AS n,
           min(a.case_id) AS example
    FROM assertion_results a
    WHERE a.run_id = $run AND a.status IN ('fail', 'error') AND NOT COALESCE(a.metric_only, false)
    GROUP BY ALL ORDER BY n DESC, example LIMIT {MAX_REASONS}"""


def _var(name: str) -> str:
    return "json_extract_string(c.vars, '$.\"" + name.replace("'", "''").replace('"', '') \
        + "\"')"


def slices(results: Results, run_id: str, by_vars: tuple[str, ...] = ()) -> pl.DataFrame:
    """Every slice's counts and pass rate with its interval, the lowest first (a slice with
    no verdict first of all)."""
    parts = [_BY_CASE.format(dimension="provider", key="c.provider", counts=_COUNTS,
                             source="case_rows"),
             _BY_CASE.format(dimension="prompt", key="c.prompt", counts=_COUNTS,
                             source="case_rows"),
             _BY_ASSERTION.format(dimension="type", key="type", counts=_COUNTS),
             _BY_ASSERTION.format(dimension="metric", key="metric", counts=_COUNTS)]
    parts += [_BY_CASE.format(dimension=f"var {v}", key=_var(v), counts=_COUNTS,
                              source="cases") for v in by_vars]
    sql = " UNION ALL ".join(_RATES.format(counts=p) for p in parts)
    return results.query(f"SELECT * FROM ({sql}) ORDER BY pass_rate NULLS FIRST, n DESC, "
                         "dimension, slice", {"run": run_id})


def reasons(results: Results, run_id: str) -> pl.DataFrame:
    """The failing and errored assertions' most common reasons, with an example case."""
    return results.query(_REASONS, {"run": run_id})


def failing_section(found: pl.DataFrame, common: pl.DataFrame) -> str:
    several = (pl.len().over("dimension") > 1) | pl.col("dimension").str.starts_with("var ")
    worst = found.filter(several & (pl.col("passed") < pl.col("n") - pl.col("skipped"))
                         ).head(MAX_SLICES)
    rows = [td(r["dimension"]) + td(r["slice"] if r["slice"] is not None else "(none)",
                                    "slice", title=r["slice"])
            + td(rate_text(r["pass_rate"], r["low"], r["high"], r["errors"]), "num rate")
            + "".join(td(number(r[k]), "num") for k in
                      ("n", "passed", "failed", "errors", "skipped"))
            for r in worst.iter_rows(named=True)]  # at most MAX_SLICES rows
    table = (html_table(["by", "slice", "pass rate [95 % interval]", "n", "pass", "fail",
                         "errors", "skipped"], rows, "slices")
             if rows else '<p class="note">every slice passes</p>')
    reason_rows = [td(r["type"]) + td(r["status"], "status " + r["status"])
                   + td(number(r["n"]), "num") + td(r["reason"] or "(no reason)", "reason")
                   + td(f'<button type="button" class="case-link" data-case="{r["example"]}">'
                        f'case {r["example"]}</button>', raw=True)
                   for r in common.iter_rows(named=True)]
    reasons_html = (html_table(["type", "status", "results", "reason", "example"],
                               reason_rows, "reasons")
                    if reason_rows else '<p class="note">no assertion failed</p>')
    return ('<section id="failing"><h2>Where it fails</h2>'
            '<p class="note">The slices with the lowest pass rates (of the dimensions with more '
            "than one value): by provider, prompt and var a case's verdict, by type and metric "
            "an assertion's (errors count as not passing; "
            "skipped apart).</p>" + table
            + "<h3>Most common reasons</h3>" + reasons_html + "</section>")
