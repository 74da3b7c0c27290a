"""Analysis views and table macros over the public tables, each with a one-line comment.

Views are derived, not data: `create_views` re-creates them (CREATE OR REPLACE) whenever a
migration is applied, so they always match the tables present — `judge_costs` reads the
judge's `judge_calls` table once a migration has added it, and is empty (same columns) before.
Comments are stored in the database; `checkllm-batch sql --list` prints them.
"""

from __future__ import annotations

import duckdb

from . import agreement
from .agreement import Z95  # the two-sided 95 % quantile, once for both intervals
from .cases import create_cases_view, sql_string
from .votes import create_vote_views

TABLES = {
    "runs": "one row per evaluation run: status, suite, outputs, config, case count",
    "assertions": "each assertion's spec per run: test, index, type, metric, weight",
    "case_rows": "the stored part of `cases`: output and vars left null where a run reads "
                 "them from its source file (case_sources) or its parts (case_parts)",
    "case_sources": "the Parquet file each run reads its cases' output and vars from, with "
                    "its size and modification time when scored",
    "case_parts": "the folder of Parquet parts (case_id, output, vars) each run of a "
                  "dataframe reads its cases' text from, beside the database",
    "assertion_results": "one row per case x assertion: status, pass, score, reason",
    "test_results": "one row per case: test status, pass, weighted score, reason",
    "named_metrics": "named-metric sums, weights and counts per run x provider x prompt",
    "derived_metrics": "derivedMetrics values per run x provider x prompt",
    "run_batches": "each batch of a run committed so far: first case, rows (resume continues "
                   "after the last)",
    "case_labels": "people's labels given after a run: case (and assertion, or NULL for each of "
              "its graded assertions), label name, value, who, when, from which file",
    "label_samples": "cases drawn for labelling (labels sample): each candidate case's "
                     "stratum and inclusion probability, and whether it was drawn",
    "cascade_calibration": "a judge cascade's calibration cases per run (graded by every "
                           "stage before the run's batches)",
    "cascade_thresholds": "a judge cascade's certified threshold per run x graded assertion x "
                          "stage: calibration cases kept (n), disagreeing (k), the exact bound",
    "anchor_labels": "the anchor set (labels import --anchor): labels frozen by their case's "
                     "output and vars (anchor_key), judged again by every run that holds them",
    "schema_migrations": "the schema migrations applied to this database",
}

_CASE = "c.run_id, c.case_id, c.provider, c.prompt, c.test_id, c.description"



def wilson_sql(passed: str, n: str) -> tuple[str, str]:
    """The Wilson score interval (95 %) of passed / n: two SQL expressions (low, high) over
    the column expressions `passed` and `n`, NULL when n is 0. Closed form, so it costs
    nothing; unlike the normal (Wald) interval it stays inside [0, 1] and is not empty at
    0 % or 100 %."""
    z2 = f"{Z95 ** 2!r}"
    passed, n = f"({passed})::DOUBLE", f"({n})::DOUBLE"  # passed * failed outgrows integers
    centre = f"(({passed}) + {z2} / 2) / (({n}) + {z2})"
    half = (f"{Z95!r} * sqrt(({passed}) * (({n}) - ({passed})) / ({n}) + {z2} / 4)"
            f" / (({n}) + {z2})")
    return (f"CASE WHEN ({n}) > 0 THEN greatest(0, {centre} - {half}) END",
            f"CASE WHEN ({n}) > 0 THEN least(1, {centre} + {half}) END")


def wilson_columns(passed: str, n: str) -> str:
    """`pass_rate_low, pass_rate_high` columns for a SELECT list."""
    low, high = wilson_sql(passed, n)
    return f"{low} AS pass_rate_low, {high} AS pass_rate_high"


def wilson_fpc_sql(passed: str, n: str, population: str) -> tuple[str, str]:
    """Wilson's interval of passed / n for n cases drawn without replacement from
    `population` (a judge sample: run/sample.py), with the finite-population correction:
    the interval of the effective size n (N - 1) / (N - n), the size whose binomial variance
    equals the sample's (Kish's design effect (N - n) / (N - 1)). It narrows as the sample
    nears the whole run, to the rate itself when every case was judged."""
    n_, big = f"({n})::DOUBLE", f"({population})::DOUBLE"
    effective = f"({n_} * ({big} - 1) / NULLIF({big} - {n_}, 0))"
    low, high = wilson_sql(f"({passed}) * {effective} / NULLIF({n_}, 0)", effective)
    rate = f"({passed})::DOUBLE / NULLIF({n_}, 0)"
    census = f"({n_} > 0 AND {n_} >= {big})"
    return (f"CASE WHEN {census} THEN {rate} ELSE {low} END",
            f"CASE WHEN {census} THEN {rate} ELSE {high} END")


def with_verdicts(n: str, passed: str, failed: str) -> str:
    """The denominator `n` of a pass rate, or 0 where no case has a verdict (none passed,
    none failed: every one errored or was skipped): a rate with no verdicts is NULL, never
    0 %, and so is its interval."""
    return f"(CASE WHEN ({passed}) + ({failed}) > 0 THEN ({n}) ELSE 0 END)"


def rate_interval_sql(passed: str, n: str, population: str, sampled: str) -> tuple[str, str]:
    """(low, high): Wilson's interval, or where the rate is of a judge sample (`sampled`, an
    SQL condition: the group has skipped cases) its finite-population variant over the
    `population` of cases, so the interval estimates the whole run's rate. A group every
    case of which was judged (deterministic checks, a run without a sample) keeps Wilson's
    interval, as in a run without a sample."""
    low, high = wilson_sql(passed, n)
    fpc_low, fpc_high = wilson_fpc_sql(passed, n, population)
    return (f"CASE WHEN {sampled} THEN {fpc_low} ELSE {low} END",
            f"CASE WHEN {sampled} THEN {fpc_high} ELSE {high} END")


def rate_interval_columns(passed: str, n: str, population: str, sampled: str) -> str:
    """`pass_rate_low, pass_rate_high` columns (rate_interval_sql) for a SELECT list."""
    low, high = rate_interval_sql(passed, n, population, sampled)
    return f"{low} AS pass_rate_low, {high} AS pass_rate_high"


# the pass-rate views: counts per group in a subquery, then the rate and its interval over
# them by name (the interval's formula repeats its arguments: over names it stays short,
# and so does the catalog entry a file database rewrites)


def _interval(n: str, population: str) -> str:
    """The pass-rate views' interval columns over their count columns (a sample's where the
    group has skipped cases)."""
    return rate_interval_columns("passed", n, population, "skipped > 0")


_ASSERTION_COUNTS = """COUNT(*) AS results, COUNT(*) FILTER (a.status = 'pass') AS passed,
                     COUNT(*) FILTER (a.status = 'fail') AS failed,
                     COUNT(*) FILTER (a.status = 'error') AS errors,
                     COUNT(*) FILTER (a.status = 'skipped') AS skipped,
                     COUNT(*) FILTER (a.status = 'abstain') AS abstained,
                     COUNT(*) FILTER (a.status IN ('pass', 'fail', 'error')) AS graded,
                     AVG(a.score) AS mean_score"""

_VERDICTS = with_verdicts("{n}", "passed", "failed")  # over the views' count columns

VIEWS: dict[str, tuple[str, str]] = {
    "case_results": (("one row per case with its test verdict: provider, prompt, vars, output, "
                     "status, score, reason"), f"""
        SELECT {_CASE}, c.vars, c.output, t.status, t.pass, t.score, t.reason,
               c.latency_ms, c.cost
        FROM cases c JOIN test_results t USING (run_id, case_id)"""),
    "pass_rates": (("test pass rate per run x provider x prompt with its 95 % Wilson interval "
                   "(pass_rate_low, pass_rate_high), fail/error counts and mean score; on a run "
                   "judged on a sample, over its judged cases (skipped: the others), the "
                   "interval with the finite-population correction; cases a judge cascade "
                   "abstained on (left for a person) counted apart"), f"""
        SELECT run_id, provider, prompt, cases, passed, failed, errors,
               passed / NULLIF({_VERDICTS.format(n="judged")}, 0) AS pass_rate,
               {_interval(_VERDICTS.format(n="judged"), "cases - abstained")},
               mean_score, skipped, abstained
        FROM (SELECT c.run_id, c.provider, c.prompt, COUNT(*) AS cases,
                     COUNT(*) FILTER (t.status = 'pass') AS passed,
                     COUNT(*) FILTER (t.status = 'fail') AS failed,
                     COUNT(*) FILTER (t.status = 'error') AS errors,
                     AVG(t.score) AS mean_score,
                     COUNT(*) FILTER (t.status = 'skipped') AS skipped,
                     COUNT(*) FILTER (t.status = 'abstain') AS abstained,
                     COUNT(*) FILTER (t.status NOT IN ('skipped', 'abstain')) AS judged
              FROM case_rows c JOIN test_results t USING (run_id, case_id)
              GROUP BY ALL)"""),
    "pass_rates_by_type": (("assertion pass rate per run x provider x assertion type, with "
                           "its 95 % Wilson interval (metric-only counters apart; errors and "
                           "skips counted apart)"), f"""
        SELECT run_id, provider, type, metric_only, results, passed, failed, errors, skipped,
               passed / NULLIF({_VERDICTS.format(n="graded")}, 0) AS pass_rate,
               {_interval(_VERDICTS.format(n="graded"), "graded + skipped")},
               mean_score, abstained
        FROM (SELECT c.run_id, c.provider, a.type,
                     COALESCE(a.metric_only, false) AS metric_only, {_ASSERTION_COUNTS}
              FROM case_rows c JOIN assertion_results a USING (run_id, case_id)
              GROUP BY ALL)"""),
    "pass_rates_by_metric": (("assertion pass rate per run x provider x named metric, with "
                             "its 95 % Wilson interval"), f"""
        SELECT run_id, provider, metric, results, passed, failed, errors,
               passed / NULLIF({_VERDICTS.format(n="graded")}, 0) AS pass_rate,
               {_interval(_VERDICTS.format(n="graded"), "graded + skipped")},
               mean_score, skipped, abstained
        FROM (SELECT c.run_id, c.provider, a.metric, {_ASSERTION_COUNTS}
              FROM case_rows c JOIN assertion_results a USING (run_id, case_id)
              WHERE a.metric IS NOT NULL
              GROUP BY ALL)"""),
    "metric_summary": (("named metrics (mean = sum / weight) and derived metrics, one row per "
                       "run x provider x prompt x metric"), """
        SELECT run_id, provider, prompt, metric, 'named' AS kind,
               sum / NULLIF(weight, 0) AS value, sum, weight, count
        FROM named_metrics
        UNION ALL BY NAME
        SELECT run_id, provider, prompt, name AS metric, 'derived' AS kind, value
        FROM derived_metrics"""),
    "failures": (("every failed or errored assertion with its reason, case, provider and output "
                 "(metric-only counters left out)"),
                 f"""
        SELECT {_CASE}, a.assertion_index, a.type, a.metric, a.status, a.score, a.reason,
               c.vars, c.output
        FROM cases c JOIN assertion_results a USING (run_id, case_id)
        WHERE a.status IN ('fail', 'error') AND NOT COALESCE(a.metric_only, false)"""),
    "score_distribution": (("histogram of assertion scores in [0, 1] (10 bins) per run x "
                           "provider x type"), """
        SELECT c.run_id, c.provider, a.type,
               LEAST(FLOOR(a.score * 10), 9) / 10 AS bin_start,
               LEAST(FLOOR(a.score * 10), 9) / 10 + 0.1 AS bin_end, COUNT(*) AS results
        FROM case_rows c JOIN assertion_results a USING (run_id, case_id)
        WHERE a.score BETWEEN 0 AND 1
        GROUP BY ALL"""),
    "run_overview": (("one row per run: when, status, cases, pass rate (over judged cases "
                      "when judged on a sample), providers, cases skipped"), """
        SELECT r.run_id, r.started_at, r.status, r.suite_path, r.outputs_path,
               COALESCE(r.cases, p.total) AS cases,
               p.passed, p.passed / NULLIF(p.judged, 0) AS pass_rate, p.providers,
               p.total - p.judged - p.abstained AS skipped, p.abstained
        FROM runs r LEFT JOIN (
            SELECT run_id, COUNT(*) AS total, COUNT(*) FILTER (status = 'pass') AS passed,
                   COUNT(*) FILTER (status NOT IN ('skipped', 'abstain')) AS judged,
                   COUNT(*) FILTER (status = 'abstain') AS abstained,
                   COUNT(DISTINCT provider) AS providers
            FROM case_rows JOIN test_results USING (run_id, case_id)
            GROUP BY run_id) p USING (run_id)"""),
}

_JUDGE_EMPTY = """
    SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS model, 0::BIGINT AS calls,
           0::BIGINT AS errors, NULL::DOUBLE AS cost, NULL::BIGINT AS tokens
    WHERE false"""
_JUDGE_COMMENT = "judge calls, errors, tokens and cost per run x judge model"

# Table macros: classification metrics from a gold-label var and a predicted label.
# `predicted_path` is a JSON path into the output (e.g. '$.label'); NULL means the output itself
# (an output that is not JSON then has no prediction).
# Labels are trimmed and lower-cased unless `normalize_labels := false`.
_LABELS = """
    SELECT run_id, case_id, provider, prompt,
           CASE WHEN normalize_labels THEN lower(trim(g)) ELSE g END AS actual,
           CASE WHEN normalize_labels THEN lower(trim(p)) ELSE p END AS predicted
    FROM (SELECT run_id, case_id, provider, prompt,
                 json_extract_string(vars, '$."' || gold_var || '"') AS g,
                 CASE WHEN predicted_path IS NULL THEN output
                      WHEN json_valid(output) THEN json_extract_string(output, predicted_path)
                 END AS p
          FROM cases)
    WHERE g IS NOT NULL"""

_LABEL_PARAMS = "gold_var, predicted_path := NULL, normalize_labels := true"

def report_sql(counts: str, keys: tuple[str, ...]) -> str:
    """Precision / recall / F1 / support per class, then the 'macro avg' and 'micro avg'
    rows, per `keys`, from `counts`: a relation of (keys, actual, predicted, n) with n > 0.
    The classification_report macro runs it on the labels' counts; the bootstrap on each
    replicate's (analysis/classify.py)."""
    on = " AND ".join(f"l.{k} IS NOT DISTINCT FROM k.{k}" for k in keys)
    key_list, k_keys = ", ".join(keys), ", ".join(f"k.{k}" for k in keys)
    return f"""
        , classes AS (SELECT {key_list}, actual AS class FROM {counts} UNION
                      SELECT {key_list}, predicted FROM {counts} WHERE predicted IS NOT NULL),
        counted AS (
            SELECT {k_keys}, k.class,
                   COALESCE(SUM(l.n) FILTER (l.actual = k.class AND l.predicted = k.class), 0)
                     AS tp,
                   COALESCE(SUM(l.n) FILTER (l.actual <> k.class AND l.predicted = k.class), 0)
                     AS fp,
                   COALESCE(SUM(l.n) FILTER (l.actual = k.class
                                             AND l.predicted IS DISTINCT FROM k.class), 0) AS fn,
                   COALESCE(SUM(l.n) FILTER (l.actual = k.class), 0) AS support
            FROM classes k JOIN {counts} l ON {on}
            GROUP BY ALL),
        per_class AS (
            SELECT {key_list}, class, tp::BIGINT AS tp, fp::BIGINT AS fp, fn::BIGINT AS fn,
                   support::BIGINT AS support,
                   tp / NULLIF(tp + fp, 0) AS precision, tp / NULLIF(tp + fn, 0) AS recall,
                   2 * tp / NULLIF(2 * tp + fp + fn, 0) AS f1
            FROM counted)
        SELECT {key_list}, class, tp, fp, fn, support, precision, recall, f1
        FROM per_class
        UNION ALL
        SELECT {key_list}, 'macro avg', SUM(tp)::BIGINT, SUM(fp)::BIGINT, SUM(fn)::BIGINT,
               SUM(support)::BIGINT,
               AVG(COALESCE(precision, 0)), AVG(COALESCE(recall, 0)), AVG(COALESCE(f1, 0))
        FROM per_class GROUP BY ALL
        UNION ALL
        SELECT {key_list}, 'micro avg', SUM(tp)::BIGINT, SUM(fp)::BIGINT, SUM(fn)::BIGINT,
               SUM(support)::BIGINT,
               SUM(tp) / NULLIF(SUM(tp) + SUM(fp), 0), SUM(tp) / NULLIF(SUM(tp) + SUM(fn), 0),
               2 * SUM(tp) / NULLIF(2 * SUM(tp) + SUM(fp) + SUM(fn), 0)
        FROM per_class GROUP BY ALL"""


MACROS: dict[str, tuple[str, str, str]] = {
    "labels": (_LABEL_PARAMS,
               ("labels('gold_var'): per case, the gold label (a var) and the predicted label "
               "(output or a JSON path)"), _LABELS),
    "confusion_matrix": (_LABEL_PARAMS,
                         ("confusion_matrix('gold_var'): counts per run x provider x actual x "
                         "predicted label"), """
        SELECT run_id, provider, actual, predicted, COUNT(*) AS n
        FROM labels(gold_var, predicted_path := predicted_path,
                     normalize_labels := normalize_labels) GROUP BY ALL"""),
    "classification_report": (
        _LABEL_PARAMS,
        ("classification_report('gold_var'): per class, plus macro and micro averages, precision "
        "/ recall / F1 / support per run x provider"), f"""
        WITH l AS (SELECT run_id, provider, actual, predicted, COUNT(*) AS n
                   FROM labels(gold_var, predicted_path := predicted_path,
                               normalize_labels := normalize_labels) GROUP BY ALL)
        {report_sql("l", ("run_id", "provider"))}"""),
    "fscore": ("tp_metric, fp_metric, fn_metric",
               ("fscore('tp', 'fp', 'fn'): precision, recall and F1 from the F-score recipe's "
               "counter metrics, per run x provider x prompt"), """
        SELECT *, n.tp / NULLIF(n.tp + n.fp, 0) AS precision,
               n.tp / NULLIF(n.tp + n.fn, 0) AS recall,
               2 * n.tp / NULLIF(2 * n.tp + n.fp + n.fn, 0) AS f1
        FROM (SELECT run_id, provider, prompt,
                     COALESCE(SUM(sum) FILTER (metric = tp_metric), 0) AS tp,
                     COALESCE(SUM(sum) FILTER (metric = fp_metric), 0) AS fp,
                     COALESCE(SUM(sum) FILTER (metric = fn_metric), 0) AS fn
              FROM named_metrics GROUP BY ALL) n"""),
    **agreement.MACROS,
}


def judge_costs_sql(con: duckdb.DuckDBPyConnection) -> str:
    """The judge_costs query for the judge_calls columns present (none: an empty view)."""
    columns = {r[0] for r in con.sql(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'judge_calls'"
        " AND table_schema = current_schema()").fetchall()}
    if "run_id" not in columns:
        return _JUDGE_EMPTY
    model = "model" if "model" in columns else "NULL::VARCHAR"
    errors = ("COUNT(*) FILTER (status NOT IN ('ok', 'success', 'pass', 'cached'))"
              if "status" in columns else "0::BIGINT")
    cost = "SUM(cost)::DOUBLE" if "cost" in columns else "NULL::DOUBLE"
    token_columns = sorted(c for c in columns if c == "tokens" or c.endswith("_tokens"))
    if "tokens" in token_columns:
        token_columns = ["tokens"]
    tokens = (f"SUM({' + '.join(f'COALESCE({c}, 0)' for c in token_columns)})::BIGINT"
              if token_columns else "NULL::BIGINT")
    return (f"SELECT run_id, {model} AS model, COUNT(*) AS calls, {errors} AS errors, "
            f"{cost} AS cost, {tokens} AS tokens FROM judge_calls GROUP BY ALL")


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re-)create `cases`, every analysis view and macro, with its comment. Before
    migration 0007 the stored cases are the `cases` table itself: the views read that."""
    tables = {r[0] for r in con.sql(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() "
        "AND database_name = current_database()").fetchall()}
    stored = "case_rows" if "case_rows" in tables else "cases"
    if stored == "case_rows":
        create_cases_view(con)
    for name, comment in TABLES.items():
        if name in tables:
            con.execute(f"COMMENT ON TABLE {name} IS {sql_string(comment)}")
    for name, (comment, query) in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {query.replace('case_rows', stored)}")
        con.execute(f"COMMENT ON VIEW {name} IS {sql_string(comment)}")
    con.execute(f"CREATE OR REPLACE VIEW judge_costs AS {judge_costs_sql(con)}")
    con.execute(f"COMMENT ON VIEW judge_costs IS {sql_string(_JUDGE_COMMENT)}")
    # juries and repeats: their own block (store/votes.py)
    create_vote_views(con, stored)
    _create_graded_verdicts(con, stored)
    from . import anchors, cascade, corrected  # corrected builds on this module's wilson_sql

    if {"cascade_thresholds", "judge_calls"} <= tables:  # a judge cascade's (0017)
        con.execute(f"CREATE OR REPLACE VIEW cascade_summary AS {cascade.SUMMARY}")
        con.execute(f"COMMENT ON VIEW cascade_summary IS {sql_string(cascade.SUMMARY_COMMENT)}")

    for name, (params, comment, query) in {**MACROS, **corrected.MACROS,
                                           **anchors.MACROS}.items():
        query = corrected.without_tables(query, tables)
        con.execute(f"CREATE OR REPLACE MACRO {name}({params}) AS TABLE {query}")
        con.execute(f"COMMENT ON MACRO TABLE {name} IS {sql_string(comment)}")


def _create_graded_verdicts(con: duckdb.DuckDBPyConnection, stored: str) -> None:
    """graded_verdicts (store/agreement.py), over the assertion_results columns present."""
    name, comment = agreement.VIEW
    columns = {r[0] for r in con.sql(
        "SELECT column_name FROM information_schema.columns WHERE table_name = "
        "'assertion_results' AND table_schema = current_schema()").fetchall()}
    query = agreement.graded_verdicts_sql(columns).replace('case_rows', stored)
    con.execute(f"CREATE OR REPLACE VIEW {name} AS {query}")
    con.execute(f"COMMENT ON VIEW {name} IS {sql_string(comment)}")


def catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(name, kind, description) of every public table, view and table macro."""
    return con.sql("""
        SELECT table_name, 'table', COALESCE(comment, '') FROM duckdb_tables()
        WHERE schema_name = current_schema() AND database_name = current_database()
        UNION ALL
        SELECT view_name, 'view', COALESCE(comment, '') FROM duckdb_views()
        WHERE NOT internal AND schema_name = current_schema()
              AND database_name = current_database()
        UNION ALL
        SELECT DISTINCT function_name, 'macro', COALESCE(comment, '') FROM duckdb_functions()
        WHERE function_type = 'table_macro' AND schema_name = current_schema()
              AND database_name = current_database() AND NOT internal
        ORDER BY 2, 1""").fetchall()
