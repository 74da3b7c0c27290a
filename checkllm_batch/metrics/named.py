"""Named metrics (SPEC §3): per run x provider x prompt, the sum of each metric's scores
(weighted; metric-only counters count 1; an assert-set's members times the set's weight,
and not under the set's own metric) over the results of the cases that did not error, with
the weight and the count; then the derived metrics over those sums. All in SQL, once every
batch is stored."""

from __future__ import annotations

import duckdb

from ..suites.model import Suite
from .derived import derived_query


def compute(con: duckdb.DuckDBPyConnection, run_id: str, suite: Suite) -> None:
    """Insert the run's named_metrics and derived_metrics rows."""
    con.execute("""
        INSERT INTO named_metrics
        WITH r AS (  -- an assert-set member counts with its weight times its set's (§10.2)
            SELECT a.run_id, a.case_id, a.metric, a.score, a.named_scores, a.status,
                   CASE WHEN a.metric_only THEN 1 ELSE a.weight END
                   * COALESCE(CASE WHEN s.metric_only THEN 1 ELSE s.weight END, 1) AS w,
                   s.metric AS set_metric
            FROM assertion_results a LEFT JOIN assertion_results s
              ON s.run_id = a.run_id AND s.case_id = a.case_id AND s.parent_index IS NULL
             AND s.assertion_index = a.parent_index
            WHERE a.run_id = $run)
        SELECT a.run_id, c.provider, c.prompt, a.metric, SUM(a.score * a.w), SUM(a.w), COUNT(*)
        FROM (SELECT run_id, case_id, metric, score, w, status, set_metric FROM r
              UNION ALL  -- each named score of a result (a GradingResult's namedScores)
              SELECT run_id, case_id, n.metric, n.score, w, status, set_metric
              FROM (SELECT *, unnest(named_scores) AS n FROM r WHERE named_scores IS NOT NULL)
              WHERE n.metric IS DISTINCT FROM metric) a
        JOIN case_rows c USING (run_id, case_id)
        JOIN test_results t USING (run_id, case_id)
        WHERE a.metric <> '' AND a.status IN ('pass', 'fail')  -- '': rendered to nothing
          AND a.metric IS DISTINCT FROM a.set_metric  -- the set's own score stands for it
          AND t.status <> 'error'  -- promptfoo: an erroring test feeds no metric
        GROUP BY ALL""", {"run": run_id})
    if suite.derived_metrics:
        con.execute(f"INSERT INTO derived_metrics SELECT $run, * FROM ({derived_query(suite)})",
                    {"run": run_id})
