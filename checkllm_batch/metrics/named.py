"""Named metrics (a metric named by assertions' `metric:`): per run x provider x prompt, the sum of each metric's scores
(weighted; metric-only counters count 1; an assert-set's members times the set's weight,
and not under the set's own metric) over the results of the cases that did not error, with
the weight and the count; then the derived metrics over those sums. All in SQL, once every
batch is stored. `case_metrics_sql` gives the same sums per case, which the readers'
bootstrap resamples (analysis/intervals.py)."""

from __future__ import annotations

import duckdb

from ..suites.model import Suite
from .derived import derived_query

# the results of run $run feeding a named metric, as `a` (run_id, case_id, metric, score, w,
# status, set_metric) after its WITH clause; `_FEEDS` keeps those that count, given the
# case's test result `t`
_RESULTS = """
    WITH r AS (  -- an assert-set member counts with its weight times its set's
        SELECT a.run_id, a.case_id, a.metric, a.score, a.named_scores, a.status,
               CASE WHEN a.metric_only THEN 1 ELSE a.weight END
               * COALESCE(CASE WHEN s.metric_only THEN 1 ELSE s.weight END, 1) AS w,
               s.metric AS set_metric
        FROM assertion_results a LEFT JOIN (  -- only the sets: no hash table of every row
            SELECT case_id, assertion_index, metric, weight, metric_only
            FROM assertion_results
            WHERE run_id = $run AND parent_index IS NULL AND (case_id, assertion_index) IN (
                SELECT (case_id, parent_index) FROM assertion_results
                WHERE run_id = $run AND parent_index IS NOT NULL)) s
          ON s.case_id = a.case_id AND s.assertion_index = a.parent_index
        WHERE a.run_id = $run)
    SELECT {columns}
    FROM (SELECT run_id, case_id, metric, score, w, status, set_metric FROM r
          UNION ALL  -- each named score of a result (a GradingResult's namedScores)
          SELECT run_id, case_id, n.metric, n.score, w, status, set_metric
          FROM (SELECT *, unnest(named_scores) AS n FROM r WHERE named_scores IS NOT NULL)
          WHERE n.metric IS DISTINCT FROM metric) a
    {joins}
    WHERE a.metric <> '' AND a.status IN ('pass', 'fail')  -- '': rendered to nothing
      AND a.metric IS DISTINCT FROM a.set_metric  -- the set's own score stands for it
      AND t.status <> 'error'  -- promptfoo: an erroring test feeds no metric
    GROUP BY ALL
"""


def case_metrics_sql() -> str:
    """Per case of run $run and named metric: case_id, metric, sum, weight (what
    named_metrics adds up per provider x prompt)."""
    return _RESULTS.format(
        columns="a.case_id, a.metric, SUM(a.score * a.w) AS sum, SUM(a.w) AS weight",
        joins="JOIN test_results t USING (run_id, case_id)")


def compute(con: duckdb.DuckDBPyConnection, run_id: str, suite: Suite) -> None:
    """Insert the run's named_metrics and derived_metrics rows."""
    con.execute("INSERT INTO named_metrics " + _RESULTS.format(
        columns="a.run_id, c.provider, c.prompt, a.metric, SUM(a.score * a.w), SUM(a.w), "
                "COUNT(*)",
        joins="JOIN case_rows c USING (run_id, case_id)\n"
              "    JOIN test_results t USING (run_id, case_id)"), {"run": run_id})
    if suite.derived_metrics:
        con.execute(f"INSERT INTO derived_metrics SELECT $run, * FROM ({derived_query(suite)})",
                    {"run": run_id})
