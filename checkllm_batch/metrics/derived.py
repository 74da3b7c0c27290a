"""derivedMetrics: run every derived metric in one query over the run x provider x prompt
sums of named metrics and `__count` (the number of cases), in list order so a derived metric
can use earlier ones. x/0, 0/0 and other non-finite results are NULL. The expressions are
translated by suites/derived.py.
"""

from __future__ import annotations

from ..suites.derived import COUNT, column_sql, quote
from ..suites.model import Suite


def derived_query(suite: Suite) -> str:
    """A query with parameter $run giving (provider, prompt, name, value) for each derived metric."""
    metrics = sorted(suite.metrics)
    sums = ", ".join(
        f"COALESCE(SUM(n.sum) FILTER (WHERE n.metric = '{m.replace(chr(39), chr(39) * 2)}'), 0)"
        f" AS {quote(m)}" for m in metrics)
    steps = [f"""base AS (
        SELECT g.provider, g.prompt, g.{COUNT}{', ' + sums if sums else ''}
        FROM (SELECT provider, prompt, COUNT(*)::DOUBLE AS {COUNT} FROM case_rows
              WHERE run_id = $run GROUP BY ALL) g
        LEFT JOIN named_metrics n ON n.run_id = $run
             AND n.provider IS NOT DISTINCT FROM g.provider AND n.prompt IS NOT DISTINCT FROM g.prompt
        GROUP BY g.provider, g.prompt, g.{COUNT})"""]
    names, previous = set(metrics) | {COUNT}, "base"
    for i, d in enumerate(suite.derived_metrics):
        column = f"{column_sql(d, names)} AS {quote(d.name)}"
        select = f"* REPLACE ({column})" if d.name in names else f"*, {column}"
        steps.append(f"d{i} AS (SELECT {select} FROM {previous})")
        names.add(d.name)
        previous = f"d{i}"
    derived = ", ".join(quote(d.name) for d in suite.derived_metrics)
    return (f"WITH {', '.join(steps)} "
            f"SELECT provider, prompt, name, CASE WHEN isfinite(value) THEN value END AS value "
            f"FROM (SELECT provider, prompt, {derived} FROM {previous}) "
            f"UNPIVOT INCLUDE NULLS (value FOR name IN ({derived}))")
