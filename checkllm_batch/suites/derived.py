"""derivedMetrics expressions: promptfoo's mathjs over named-metric sums, as DuckDB SQL.

`value: tp / (tp + fp)` is translated token by token to SQL (`^` power, `min`/`max`/`log` as
in mathjs); `sql:` takes one DuckDB scalar expression over the same columns instead,
checked with sqlglot before it runs (never a statement, a subquery or a table). Checked when
the suite loads; metrics/derived.py runs them.
"""

from __future__ import annotations

import re

import duckdb

from ..errors import did_you_mean
from .model import DerivedMetric, Suite

_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|([A-Za-z_][A-Za-z0-9_]*)"
                    r"|(<=|>=|==|!=|[-+*/^%(),<>]))")
_FUNCTIONS = {"min": "least", "max": "greatest", "log": "ln", "sqrt": "sqrt", "abs": "abs",
              "exp": "exp", "round": "round", "floor": "floor", "ceil": "ceil", "pow": "pow"}
_WORDS = {"and": "AND", "or": "OR", "not": "NOT", "true": "TRUE", "false": "FALSE"}
_OPERATORS = {"==": "=", "!=": "<>", "%": "%"}
COUNT = "__count"


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def to_sql(expression: str, names: set[str]) -> str:
    """SQL for a mathjs-style expression; ValueError names what cannot be translated."""
    out = []
    tokens = list(_tokens(expression))
    for i, (number, ident, op) in enumerate(tokens):
        if number:
            out.append(number)
        elif ident:
            calls = i + 1 < len(tokens) and tokens[i + 1][2] == "("
            if calls and ident in _FUNCTIONS:
                out.append(_FUNCTIONS[ident])
            elif ident in _WORDS:
                out.append(_WORDS[ident])
            elif ident in names:
                out.append(quote(ident))
            else:
                raise ValueError(f'unknown name "{ident}" in {expression!r}'
                                 + did_you_mean(ident, names | set(_FUNCTIONS)))
        else:
            out.append(_OPERATORS.get(op, op))
    return " ".join(out)


def _tokens(expression: str):
    pos = 0
    while pos < len(expression.rstrip()):
        m = _TOKEN.match(expression, pos)
        if not m or m.end() == pos:
            bad = expression[pos:].strip()[:10]
            hint = " (write conditionals with `sql:` and CASE WHEN)" if bad[:1] in "?:" else ""
            raise ValueError(f"cannot read {bad!r} in {expression!r}{hint}")
        yield m.groups()
        pos = m.end()


def column_sql(metric: DerivedMetric, names: set[str]) -> str:
    if metric.sql is not None:
        sql = scalar_sql(metric.sql)
    elif metric.value is not None:
        sql = to_sql(metric.value, names)
    else:  # the suite's schema requires one of them; a metric built in code may lack both
        raise ValueError(f'derived metric "{metric.name}" needs `value` or `sql`')
    return f"CAST(({sql}) AS DOUBLE)"


def scalar_sql(text: str) -> str:
    """`text` as ONE DuckDB scalar expression (parsed by sqlglot as a condition, then
    regenerated), before it runs anywhere; ValueError for a statement, several, a subquery
    or a table."""
    import sqlglot  # here, not at the top: only a derived metric's `sql:` needs it (~0.1 s)
    from sqlglot import exp

    # nodes that would make `sql:` more than arithmetic over the metric columns
    not_scalar = (exp.Query, exp.Subquery, exp.Table, exp.Star)
    try:
        expression = sqlglot.parse_one(text, read="duckdb", into=exp.Condition)
    except sqlglot.errors.SqlglotError:
        raise ValueError(f"sql: must be one scalar expression over the metric columns (no "
                         f"statement, no `;`), got {text!r}") from None
    bad = next((n for n in expression.walk() if isinstance(n, not_scalar)), None)
    if bad is not None:
        raise ValueError(f"sql: must be one scalar expression over the metric columns, not a "
                         f"{type(bad).__name__.lower()} ({bad.sql(dialect='duckdb')[:40]!r})")
    return expression.sql(dialect="duckdb")


def check_expressions(suite: Suite) -> list[str]:
    """Problems with the suite's derived metrics, found by binding them in DuckDB (a
    connection costs ~15 ms: none is opened for a suite without derived metrics)."""
    if not suite.derived_metrics:
        return []
    names = set(suite.metrics) | {COUNT}
    problems = []
    con = duckdb.connect()
    for d in suite.derived_metrics:
        columns = ", ".join(f"0.0 AS {quote(n)}" for n in sorted(names))
        try:
            con.execute(f"SELECT {column_sql(d, names)} FROM (SELECT {columns})")
        except ValueError as e:
            problems.append(f'derived metric "{d.name}": {e}')
        except duckdb.Error as e:
            problems.append(f'derived metric "{d.name}": {str(e).splitlines()[0]}')
        names.add(d.name)
    return problems
