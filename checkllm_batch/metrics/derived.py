"""derivedMetrics: run every derived metric in one query over the run x provider x prompt
sums of named metrics and `__count` (the number of cases), in list order so a derived metric
can use earlier ones. x/0, 0/0 and other non-finite results are NULL. The expressions are
translated by suites/derived.py. The same steps run over bootstrap replicates of those sums
(`derived_over`), which is how derived metrics get their intervals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..suites.derived import COUNT, column_sql, quote
from ..suites.model import DerivedMetric, Suite


def derived_query(suite: Suite) -> str:
    """A query with parameter $run giving (provider, prompt, name, value) for each derived metric."""
    metrics = sorted(suite.metrics)
    sums = ", ".join(
        f"COALESCE(SUM(n.sum) FILTER (WHERE n.metric = '{m.replace(chr(39), chr(39) * 2)}'), 0)"
        f" AS {quote(m)}" for m in metrics)
    base = f"""
        SELECT g.provider, g.prompt, g.{COUNT}{', ' + sums if sums else ''}
        FROM (SELECT provider, prompt, COUNT(*)::DOUBLE AS {COUNT} FROM case_rows
              WHERE run_id = $run GROUP BY ALL) g
        LEFT JOIN named_metrics n ON n.run_id = $run
             AND n.provider IS NOT DISTINCT FROM g.provider AND n.prompt IS NOT DISTINCT FROM g.prompt
        GROUP BY g.provider, g.prompt, g.{COUNT}"""
    return derived_over(base, metrics, suite.derived_metrics, ("provider", "prompt"))


def derived_over(base: str, metrics: Iterable[str], derived: Sequence[DerivedMetric],
                 keys: Sequence[str]) -> str:
    """The derived metrics over `base`, a query with the `keys` columns, `__count` and a
    column per named metric's sum: one row per key x derived metric (keys, name, value)."""
    steps = [f"base AS ({base})"]
    names, previous = set(metrics) | {COUNT}, "base"
    for i, d in enumerate(derived):
        column = f"{column_sql(d, names)} AS {quote(d.name)}"
        select = f"* REPLACE ({column})" if d.name in names else f"*, {column}"
        steps.append(f"d{i} AS (SELECT {select} FROM {previous})")
        names.add(d.name)
        previous = f"d{i}"
    columns = ", ".join(quote(d.name) for d in derived)
    key_list = ", ".join(keys)
    return (f"WITH {', '.join(steps)} "
            f"SELECT {key_list}, name, CASE WHEN isfinite(value) THEN value END AS value "
            f"FROM (SELECT {key_list}, {columns} FROM {previous}) "
            f"UNPIVOT INCLUDE NULLS (value FOR name IN ({columns}))")
