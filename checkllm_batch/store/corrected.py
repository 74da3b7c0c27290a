"""Rates corrected by people's labels: prediction-powered inference (PPI++) in SQL.

Each estimate is reduced to sums, so one query corrects any number of groups over any
number of judged cases. A *cell* is one group (run x judge model x type x metric x
provider, or a slice) within one sampling stratum; its labelled cases give the sums
`n, a, ay, af, a2, a2y, a2f, a2yy, a2ff, a2yf` (a = 1 / inclusion probability; y the
person, f the judge; sums of a, a y, ..., a^2 y f) and `y, yy, fl, ffl` (unweighted sums of
y, y^2, f, f^2), its judged cases
without a label `nu, u, uu` (their count and the judge's sum and sum of squares).
`CELL_SQL` turns a cell's sums into the PPI++ mean (Angelopoulos, Duchi & Zrnic 2023) as
ppi_py 0.2.3 computes it: weights a normalised to mean 1 (ppi_py's `w`), lambda tuned around
the plain-PPI estimate and clipped to [0, 1], variance var0(lam f~) / N + var0(w (y - lam f))
/ n; a judge that never varies gives lambda 0 (ppi_py returns NaN there). `GROUP_SQL` adds
the cells of a group as stratified PPI (Fisch et al. 2024): shares W_h of the judged cases,
estimate sum W_h theta_h, variance sum W_h^2 V_h; the labels-only estimate the same way,
with Wilson's interval at its effective size, and the judge-only rate over every case.
"""

from __future__ import annotations

import re

from .agreement import _GIVEN, HUMAN, Z95
from .views import wilson_sql  # views.create_views imports this module in its body


def cells_sql(rows: str, keys: list[str]) -> str:
    """Each cell's sums (the keys and `stratum`): the labelled ones over the rows with a
    label only (y not null), the judged-only ones as the cell's totals less the labelled
    ones, so the million unlabelled rows are read for three sums."""
    terms = {"a": "a", "ay": "a * y", "af": "a * f", "a2": "a * a", "a2y": "a * a * y",
             "a2f": "a * a * f", "a2yy": "a * a * y * y", "a2ff": "a * a * f * f",
             "a2yf": "a * a * y * f", "y": "y", "yy": "y * y", "fl": "f", "ffl": "f * f"}
    listed = _qualified("r", [*keys, "stratum"])
    labelled = ", ".join(f"SUM(({t})::DOUBLE) AS {k}" for k, t in terms.items())
    on = " AND ".join(f"t.{k} IS NOT DISTINCT FROM l.{k}" for k in [*keys, "stratum"])
    return f"""
        SELECT t.*, COALESCE(l.n, 0) AS n,
               {", ".join(f"COALESCE(l.{k}, 0) AS {k}" for k in terms)},
               t.total - COALESCE(l.n, 0) AS nu, t.f_sum - COALESCE(l.fl, 0) AS u,
               t.ff_sum - COALESCE(l.ffl, 0) AS uu
        FROM (SELECT {listed}, SUM(m) AS total, SUM(m * f::DOUBLE) AS f_sum,
                     SUM(m * f::DOUBLE * f) AS ff_sum FROM {rows} r GROUP BY ALL) t
        LEFT JOIN (SELECT {listed}, COUNT(*) AS n, {labelled}
                   FROM {rows} r WHERE y IS NOT NULL GROUP BY ALL) l ON {on}"""


def _qualified(alias: str, keys: list[str]) -> str:
    """The keys as columns of `alias`: inside a table macro an unqualified `type` or
    `metric` would be the macro's parameter."""
    return ", ".join(f'{alias}."{k}"' for k in keys)


# From a cell's sums: k scales a to w (mean 1 over the labelled), then ppi_py's steps.
_WEIGHTED = """SELECT *, ay * k AS sy, af * k AS sf, a2 * k * k AS q, a2y * k * k AS qy,
                      a2f * k * k AS qf, a2yy * k * k AS qyy, a2ff * k * k AS qff,
                      a2yf * k * k AS qyf
               FROM (SELECT *, n / NULLIF(a, 0) AS k FROM {cells})"""
_THETA1 = "SELECT *, u / NULLIF(nu, 0) + (sy - sf) / NULLIF(n, 0) AS t1 FROM w0"
_LAMBDA_PARTS = """
    SELECT *, ((qyf - t1 * qy - t1 * qf + t1 * t1 * q)
               - (sy - t1 * n) * (sf - t1 * n) / n) / n AS cov_,
              ((qff - 2 * t1 * qf + t1 * t1 * q) + (uu - 2 * t1 * u + nu * t1 * t1)
               - ((sf - t1 * n) + (u - nu * t1)) ** 2 / (n + nu)) / (n + nu - 1) AS pooled
    FROM w1"""
_LAMBDA = """
    SELECT *, CASE WHEN pooled > 0 AND nu > 0
                   THEN least(1, greatest(0, cov_ / ((1 + n / nu) * pooled)))
                   ELSE 0 END AS lam
    FROM w2"""
CELL_SQL = f"""
    WITH w0 AS ({_WEIGHTED}), w1 AS ({_THETA1}), w2 AS ({_LAMBDA_PARTS}), w3 AS ({_LAMBDA})
    SELECT * EXCLUDE (total, f_sum, ff_sum, k, sy, sf, q, qy, qf, qyy, qff, qyf, t1, cov_, pooled),
           CASE WHEN nu > 0 THEN lam * u / nu ELSE 0 END + (sy - lam * sf) / n AS theta,
           CASE WHEN nu > 0 THEN lam * lam * greatest(uu / nu - (u / nu) ** 2, 0) / nu
                ELSE 0 END
             + greatest((qyy - 2 * lam * qyf + lam * lam * qff) / n
                        - ((sy - lam * sf) / n) ** 2, 0) / n AS var_ppi,
           y / n AS mean_y, greatest(yy / n - (y / n) ** 2, 0) / n AS var_y
    FROM w3"""


def group_sql(cells: str, keys: str, pass_rate: bool) -> str:
    """Per group (`keys`, a column list, each qualified by `@`) over the `cells` relation (CELL_SQL's columns): the
    judge-only, labels-only and PPI++ estimates with 95 % intervals, n_labelled, n_judged,
    lambda (of the one cell; none when stratified) and n_effective: the variance of y over
    the cases (estimated by strata) over the PPI variance, the size of a simple random
    sample of labels whose mean is as precise without the judge."""
    z = repr(Z95)
    judge = ("SUM(fl + u) / SUM(n + nu)", "(SUM(ffl + uu) / SUM(n + nu)"
             " - (SUM(fl + u) / SUM(n + nu)) ** 2) / SUM(n + nu)")
    sums = f"""
        SELECT {keys.replace("@", "c")}, SUM(n)::BIGINT AS n_labelled, SUM(n + nu)::BIGINT AS n_judged,
               COUNT(*) AS strata, MIN(n) AS fewest, {judge[0]} AS judge_only,
               greatest({judge[1]}, 0) AS judge_var,
               SUM((n + nu) * theta) / SUM(n + nu) AS corrected,
               SUM((n + nu) ** 2 * var_ppi) / SUM(n + nu) ** 2 AS var_ppi,
               SUM((n + nu) * mean_y) / SUM(n + nu) AS labels_only,
               SUM((n + nu) ** 2 * var_y) / SUM(n + nu) ** 2 AS var_labels,
               SUM((n + nu) * yy / n) / SUM(n + nu) AS mean_yy,
               CASE WHEN COUNT(*) = 1 THEN MIN(lam) END AS lam
        FROM {cells} c GROUP BY ALL"""
    if pass_rate:
        eff = ("CASE WHEN var_labels > 0 THEN labels_only * (1 - labels_only) / var_labels "
               "ELSE n_labelled END")
        lab_low, lab_high = wilson_sql(f"labels_only * ({eff})", eff)
        judge_low, judge_high = wilson_sql("judge_only * n_judged", "n_judged")
    else:
        lab_low, lab_high = (f"labels_only {s} {z} * sqrt(var_labels)" for s in "-+")
        judge_low, judge_high = (f"judge_only {s} {z} * sqrt(judge_var)" for s in "-+")
    return f"""
        SELECT {keys.replace("@", "g")}, n_labelled, n_judged, strata,
               judge_only, {judge_low} AS judge_low, {judge_high} AS judge_high,
               labels_only, {lab_low} AS labels_low, {lab_high} AS labels_high,
               corrected, corrected - {z} * sqrt(var_ppi) AS corrected_low,
               corrected + {z} * sqrt(var_ppi) AS corrected_high, lam,
               CASE WHEN var_ppi > 0 THEN greatest(mean_yy - labels_only ** 2, 0) / var_ppi
               END AS n_effective, fewest
        FROM ({sums}) g"""


def corrected_sql(rows: str, keys: list[str], pass_rate: bool) -> str:
    """The corrected estimates per group of `keys` over `rows` (columns: the keys,
    `stratum`, `y` the person's outcome or NULL without a label, `f` the judge's, `a` the
    inverse inclusion probability, `m` how many judged cases the row stands for: 1, or
    more for an unlabelled row that counts identical judged-only cases at once). A group with a stratum of fewer than two labels has
    no estimate (its variance is unknown), and its `note` says so."""
    if not keys:
        rows, keys = f"(SELECT *, NULL AS _all FROM {rows})", ["_all"]
    cells = f"({cells_sql('corrected_rows_', keys)})"  # reads the rows twice: materialised
    wanted = _qualified("@", keys)
    estimates = group_sql(f"({CELL_SQL.replace('{cells}', cells)})", wanted, pass_rate)
    low = "CASE WHEN fewest >= 2 THEN {} END"
    return f"""
        WITH corrected_rows_ AS MATERIALIZED (SELECT * FROM {rows})
        SELECT * EXCLUDE (corrected, corrected_low, corrected_high, lam, n_effective,
                          fewest{', _all' if keys == ['_all'] else ''}),
               {low.format('corrected')} AS corrected,
               {low.format('corrected_low')} AS corrected_low,
               {low.format('corrected_high')} AS corrected_high,
               {low.format('lam')} AS lam, {low.format('n_effective')} AS n_effective,
               CASE WHEN fewest < 2 THEN 'a stratum has ' || fewest::VARCHAR
                    || ' label(s): label at least 2 in each (labels sample --by)' END AS note
        FROM ({estimates})"""


# the judged cases of each graded assertion with the person's outcome y where labelled and
# usable: drawn by the run's latest sample (its stratum and inclusion probability), or any
# label when the caller declares the labels a uniform random sample (labels_random)
_SAMPLE = """(SELECT * FROM label_samples
             QUALIFY sample_id = arg_max(sample_id, drawn_at) OVER (PARTITION BY run_id))"""
_F = {"pass": "(g.status = 'pass')::INTEGER", "score": "g.score"}
# the label's text: an imported label (the assertion's own, else the case's), else the var
_TEXT = ("NULLIF(lower(trim(COALESCE(own.value, whole.value, json_extract_string(v.vars, "
         "'$.\"' || label_var || '\"')))), '')")
_HUMAN = HUMAN.format(t=_TEXT, threshold="g.threshold")
_Y = {"pass": f"({_HUMAN})::INTEGER",
      "score": f"COALESCE(TRY_CAST({_TEXT} AS DOUBLE), ({_HUMAN})::INTEGER::DOUBLE)"}
KEYS = ["run_id", "judge_model", "type", "metric", "provider", "slice"]


def rows_sql(measure: str) -> str:
    """The rows corrected_sql reads: every judged graded verdict, its stratum and weight in
    the run's latest sample, and the person's outcome y where it counts (an imported label,
    the assertion's own else the case's, else the case's var: as verdict_labels reads it).
    A case's vars are read only where needed: for the drawn cases, unless the labels are
    declared random or a slice is asked (then every case's), so a million judged-only rows
    are read without their text."""
    return f"""
        (SELECT g.run_id, g.judge_model, g.type, g.metric, g.provider,
                json_extract_string(v.vars, '$."' || slice || '"') AS slice,
                CASE WHEN labels_random THEN 'all' ELSE s.stratum END AS stratum,
                CASE WHEN labels_random THEN 1 ELSE 1 / s.inclusion_prob END AS a, 1 AS m,
                {_F[measure]} AS f,
                CASE WHEN labels_random OR s.sampled THEN {_Y[measure]} END AS y
         FROM graded_verdicts g
         LEFT JOIN {_SAMPLE} s ON s.run_id = g.run_id AND s.case_id = g.case_id
         LEFT JOIN (SELECT c.run_id, c.case_id, c.vars FROM cases c
                    WHERE labels_random OR slice IS NOT NULL OR EXISTS (
                        SELECT 1 FROM label_samples d WHERE d.sampled
                        AND d.run_id = c.run_id AND d.case_id = c.case_id)) v
              ON v.run_id = g.run_id AND v.case_id = g.case_id
         LEFT JOIN {_GIVEN} own ON own.run_id = g.run_id AND own.case_id = g.case_id
              AND own.assertion_index = g.assertion_index AND g.parent_index IS NULL
         LEFT JOIN {_GIVEN} whole ON whole.run_id = g.run_id AND whole.case_id = g.case_id
              AND whole.assertion_index IS NULL
         WHERE g.status IN ('pass', 'fail') AND {_F[measure]} IS NOT NULL
               AND (metric IS NULL OR g.metric = metric) AND (type IS NULL OR g.type = type))"""


# what the macros read in a database from before migration 0012 (0016 for anchors) (views are created after
# each migration, and a test migrates an old database step by step): no labels, no sample
STAND_INS = {
    "case_labels": "(SELECT NULL::VARCHAR AS run_id, NULL::BIGINT AS case_id, NULL::INTEGER "
                   "AS assertion_index, NULL::VARCHAR AS label, NULL::VARCHAR AS value, "
                   "NULL::TIMESTAMP AS labelled_at WHERE false)",
    "label_samples": "(SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS sample_id, "
                     "NULL::BIGINT AS case_id, NULL::VARCHAR AS stratum, NULL::DOUBLE AS "
                     "inclusion_prob, NULL::BOOLEAN AS sampled, NULL::TIMESTAMP AS drawn_at "
                     "WHERE false)",
    "anchor_labels": "(SELECT NULL::VARCHAR AS label, NULL::VARCHAR AS anchor_key, NULL::VARCHAR "
                     "AS output_md5, NULL::INTEGER AS assertion_index, NULL::VARCHAR AS value, "
                     "NULL::TIMESTAMP AS frozen_at WHERE false)"}


def without_tables(query: str, tables: set[str]) -> str:
    """`query` reading a stand-in for each label table the database does not have yet."""
    for name, stand_in in STAND_INS.items():
        if name not in tables:
            query = re.sub(rf"\bFROM {name}\b", f"FROM {stand_in}", query)
    return query


PARAMS = ("label_var, labels_random := false, slice := NULL, metric := NULL, "
          "type := NULL")
MACROS: dict[str, tuple[str, str, str]] = {
    "corrected_pass_rates": (PARAMS, (
        "corrected_pass_rates('label_var'): the judge's pass rate corrected by people's "
        "labels (PPI++) per run x judge model x type x metric x provider (x a var: slice), "
        "beside the judge-only and labels-only rates, with 95 % intervals, n_labelled, "
        "n_judged and n_effective (the labels as precise without the judge)"),
        corrected_sql(rows_sql("pass"), KEYS, pass_rate=True)),
    "corrected_scores": (PARAMS, (
        "corrected_scores('label_var'): the judge's mean score corrected by people's "
        "scores (PPI++), as corrected_pass_rates"),
        corrected_sql(rows_sql("score"), KEYS, pass_rate=False)),
}
