"""The judge's drift on an anchor set: labelled cases frozen by their content and judged
again in every run that holds them, so a change of the judge (its model, prompt or
settings) is told apart from a change of the judged model, whose outputs they are not.

`labels import --anchor` (Results.add_labels(anchor=True)) stores labels as usual and
freezes each one in `anchor_labels` (migration 0016) under its case's *anchor key*: a hash
of the output and of the vars (sorted, the label var left out). Any later run whose cases
have that output and those vars judges the anchor again, whatever their case ids.

`judge_drift(label_var)` gives per run x judge x graded assertion (type, metric) the
judge's agreement with the frozen labels on the anchors it judged, its tpr / tnr and pass
rate there, and against the previous run (by start time) that judged the same anchors:
the anchors matched, those it now gets wrong that it got right (worse) and the other way
round (better), and the exact McNemar test on those discordant pairs (two-sided binomial,
p = 1/2, as statsmodels' `mcnemar(exact=True)`), `moved` below `alpha`. A judge is paired
with the previous run's judge of the same assertion: the model when several judge it (a
jury's jurors), else whatever model judged it then (a replaced judge is a moved judge).
"""

from __future__ import annotations

from .agreement import HUMAN

# the vars as sorted JSON without the label var, hashed with the output
_VARS = ("to_json(map_from_entries(list_transform(list_sort(list_filter(json_keys({v}), "
         "lambda k: k <> {label})), lambda k: {{'k': k, 'v': json_extract({v}, "
         "'$.\"' || k || '\"')}})))")


def anchor_key_sql(output: str, vars_: str, label: str) -> str:
    """A case's anchor key: md5 of its output and its sorted vars less the label var."""
    canonical = _VARS.format(v=f"COALESCE({vars_}, '{{}}')::JSON", label=label)
    return f"md5(COALESCE({output}, '') || chr(0) || {canonical})"


# the frozen anchors of a label (a later freeze of the same anchor wins)
_ANCHORS = """(SELECT anchor_key, output_md5, assertion_index, arg_max(value, frozen_at) AS value
              FROM anchor_labels WHERE label = label_var GROUP BY ALL)"""

# each run's judged anchors: their cases found by the output's hash first (cheap), then the key
_ITEMS = f"""
    SELECT c.run_id, c.case_id, k.anchor_key, k.value
    FROM (SELECT run_id, case_id, output, vars FROM cases
          WHERE md5(COALESCE(output, '')) IN (SELECT output_md5 FROM anchor_labels
                                              WHERE label = label_var)) c
    JOIN {_ANCHORS} k ON k.anchor_key = {anchor_key_sql('c.output', 'c.vars', 'label_var')}"""

# per run x anchor x graded assertion x judge: the verdict, the person's and whether they agree
_VERDICTS = f"""
    SELECT g.run_id, r.started_at, i.anchor_key, g.test_index, g.assertion_index,
           g.parent_index, g.type, g.metric, g.judge_model,
           CASE WHEN count(DISTINCT g.judge_model) OVER (
                    PARTITION BY g.run_id, g.test_index, g.assertion_index, g.parent_index)
                    = 1 THEN '' ELSE g.judge_model END AS slot,
           arg_min(g.status, g.case_id) OVER w AS status,
           arg_min({HUMAN.format(t='lower(trim(i.value))', threshold='g.threshold')},
                   g.case_id) OVER w AS human,
           row_number() OVER w AS k
    FROM graded_verdicts g JOIN ({_ITEMS}) i USING (run_id, case_id)
    JOIN runs r ON r.run_id = g.run_id
    WHERE g.status IN ('pass', 'fail') AND (metric IS NULL OR g.metric = metric)
          AND (type IS NULL OR g.type = type)
    WINDOW w AS (PARTITION BY g.run_id, i.anchor_key, g.test_index, g.assertion_index,
                 g.parent_index, g.judge_model)"""

_PAIR_KEYS = ("anchor_key", "test_index", "assertion_index", "parent_index", "slot")


def _exact_mcnemar(worse: str, better: str) -> str:
    """Twice the binomial(worse + better, 1/2) tail at the smaller count, at most 1."""
    n, k = f"({worse} + {better})", f"least({worse}, {better})"
    term = (f"exp(lgamma({n} + 1) - lgamma(j + 1) - lgamma({n} - j + 1) - {n} * ln(2))")
    return (f"CASE WHEN {n} = 0 THEN 1.0 ELSE least(1.0, 2 * list_sum(list_transform("
            f"range(0, {k} + 1), lambda j: {term}))) END")


def _same(alias: str) -> str:
    """`alias` is the same run x judge slot x assertion as `r`."""
    return " AND ".join(f"{alias}.{k} IS NOT DISTINCT FROM r.{k}"
                        for k in ("run_id", "slot", "type", "metric"))


JUDGE_DRIFT = f"""
    WITH v AS (SELECT x.* EXCLUDE (k), (x.status = 'pass') = x.human AS agrees
               FROM ({_VERDICTS}) x WHERE x.k = 1 AND x.human IS NOT NULL),
    runs_ AS (SELECT DISTINCT v.run_id, v.started_at, v.slot, v.type, v.metric FROM v),
    prev AS (SELECT q.*, lag(q.run_id) OVER (PARTITION BY q.slot, q.type, q.metric
                                             ORDER BY q.started_at, q.run_id) AS previous_run
             FROM runs_ q),
    per_run AS (
        SELECT v.run_id, v.slot, v.type, v.metric,
               string_agg(DISTINCT v.judge_model, ', ') AS judge_model,
               count(*) AS anchors, avg(v.agrees::INTEGER) AS agreement,
               avg(v.agrees::INTEGER) FILTER (v.human) AS tpr,
               avg(v.agrees::INTEGER) FILTER (NOT v.human) AS tnr,
               avg((v.status = 'pass')::INTEGER) AS judge_pass_rate
        FROM v GROUP BY v.run_id, v.slot, v.type, v.metric),
    pairs AS (
        SELECT p.run_id, p.slot, p.type, p.metric, p.previous_run,
               string_agg(DISTINCT a.judge_model, ', ') AS previous_judge_model,
               count(b.anchor_key) AS matched,
               count(*) FILTER (a.agrees AND NOT b.agrees) AS worse,
               count(*) FILTER (NOT a.agrees AND b.agrees) AS better,
               count(*) FILTER (a.status <> b.status) AS verdicts_changed,
               avg(a.agrees::INTEGER) AS previous_agreement
        FROM prev p
        JOIN v b ON b.run_id = p.run_id AND b.slot = p.slot AND b.type = p.type
             AND b.metric IS NOT DISTINCT FROM p.metric
        JOIN v a ON a.run_id = p.previous_run AND a.type = b.type
             AND a.metric IS NOT DISTINCT FROM b.metric
             AND {' AND '.join(f'a.{k} IS NOT DISTINCT FROM b.{k}' for k in _PAIR_KEYS)}
        GROUP BY p.run_id, p.slot, p.type, p.metric, p.previous_run)
    SELECT r.run_id, p.started_at, r.judge_model, r.type, r.metric, r.anchors, r.agreement,
           r.tpr, r.tnr, r.judge_pass_rate, p.previous_run, s.previous_judge_model,
           COALESCE(s.matched, 0) AS matched, s.previous_agreement,
           COALESCE(s.worse, 0) AS worse, COALESCE(s.better, 0) AS better,
           COALESCE(s.verdicts_changed, 0) AS verdicts_changed,
           CASE WHEN s.matched > 0 THEN {_exact_mcnemar('s.worse', 's.better')} END AS p_value,
           CASE WHEN s.matched > 0 THEN {_exact_mcnemar('s.worse', 's.better')} < alpha
           END AS moved
    FROM per_run r JOIN prev p ON {_same('p')}
    LEFT JOIN pairs s ON {_same('s')}"""

MACROS: dict[str, tuple[str, str, str]] = {
    "judge_drift": ("label_var, alpha := 0.05, metric := NULL, type := NULL", (
        "judge_drift('label_var'): the judge on the anchor set (labels frozen by `labels "
        "import --anchor`) per run x judge x graded assertion: agreement, tpr / tnr, and "
        "against the previous run the anchors it now gets wrong / right, with the exact "
        "McNemar test (moved: p below alpha)"), JUDGE_DRIFT),
}
