"""The judge against people: graded verdicts beside a person's label, and how well they agree.

`graded_verdicts` has one row per case x model-graded assertion x judge model: the verdict
the run stored, the model that gave it and the threshold a score label is read against. The
judge model is the assertion's own (`provider:` / `model:`, as the judge hook resolves it),
else the run's judge (`runs.config`: its chat model, or its embedding model for `similar`).
A jury's result (assertion_results.votes, several jurors) is a row per juror (the juror's
verdict: the majority of its repeats) and a row of the jury's verdict, whose judge_model
names the vote and the jurors (`jury (majority): a, b, c`): each is set against the labels.

`judge_labels(label_var)` reads a person's verdict from the labels given after the run under
that name (the `case_labels` table), else from the var of that name of each case: pass/fail,
true/false, yes/no, 1/0 in any case, a JSON boolean, or a score, passing at the assertion's
threshold (its own, else its type's default, else 0.5). An empty or null label is no label;
any other text is counted apart as a bad label. `judge_agreement(label_var)` counts the
2 x 2 table (a pass is the positive class: tp = both pass, fn = the judge failed what the
person passed) per run x judge model x type x metric x provider, with Cohen's kappa and its
asymptotic 95 % interval (the standard error statsmodels' `cohens_kappa` computes, Fleiss,
Cohen & Everitt 1969), clipped to [-1, 1]. Errored verdicts count in `errors`, never in n;
skipped ones (not in the judge sample) are left out.
"""

from __future__ import annotations

from ..assertions.graded.similar import EMBEDDING_TYPES
from ..assertions.registry import REGISTRY, Kind

Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile: a two-sided 95 % interval


def graded_types() -> list[str]:
    """Every model-graded type's name (the stored `type` is it, or `not-` it)."""
    return sorted(n for n, t in REGISTRY.items() if t.kind is Kind.JUDGE)


def _quoted(names: list[str]) -> str:
    return ", ".join("'" + n.replace("'", "''") + "'" for n in names)


def _default_thresholds() -> str:
    """A CASE over the base type giving its registered default threshold."""
    arms = " ".join(f"WHEN '{n}' THEN {t.default_threshold!r}"
                    for n, t in REGISTRY.items()
                    if t.kind is Kind.JUDGE and t.default_threshold is not None)
    return f"CASE regexp_replace(a.type, '^not-', '') {arms} END" if arms else "NULL"


# the assertion's spec: a top-level one's, or an assert-set member's inside its set's
_SPEC = ("CASE WHEN {parent} IS NULL THEN s.spec "
         "ELSE json_extract(s.spec, '$.children[' || a.assertion_index || ']') END")
# the assertion's own judge: provider (an id, or an object's id / text id), else model
_PROVIDER = """
    regexp_replace(CASE
        WHEN json_type(x.spec, '$.args.provider') = 'VARCHAR'
            THEN json_extract_string(x.spec, '$.args.provider')
        WHEN json_type(x.spec, '$.args.provider.text') = 'VARCHAR'
            THEN json_extract_string(x.spec, '$.args.provider.text')
        WHEN json_type(x.spec, '$.args.provider.text.id') = 'VARCHAR'
            THEN json_extract_string(x.spec, '$.args.provider.text.id')
        WHEN json_type(x.spec, '$.args.provider.id') = 'VARCHAR'
            THEN json_extract_string(x.spec, '$.args.provider.id')
        WHEN json_type(x.spec, '$.args.model') = 'VARCHAR'
            THEN json_extract_string(x.spec, '$.args.model')
    END, '^openai:(chat:|completion:|embedding:)?', '')"""


def _run_judge(embedding: str) -> str:
    """The run's judge of a verdict row `x`: its model (or a one-model jury's), or its
    embedding model for the embedding types."""
    return f"""CASE WHEN regexp_replace(x.type, '^not-', '') IN ({embedding})
                    THEN json_extract_string(x.config, '$.judge.embedding_model')
                    ELSE COALESCE(json_extract_string(x.config, '$.judge.model'),
                                  json_extract_string(x.config, '$.judge.models[0]')) END"""


# a jury's verdict row is its own judge, named by its vote and jurors; one model graded
# several times (repeats) is that model
_JURY = """CASE WHEN len(x.jurors) > 1
                THEN 'jury (' || COALESCE(json_extract_string(x.config, '$.judge.vote'),
                                          'majority') || '): ' || array_to_string(x.jurors, ', ')
                WHEN len(x.jurors) = 1 THEN x.jurors[1] END"""

# each juror of a jury as its own judge: the majority of its repeats (a tie fails), their
# mean score, its first repeat's reason, as store/votes.py's juror_verdicts (not read from
# it: its unqualified columns would take the agreement macros' `type` / `metric` parameters)
_JURORS = """
    SELECT y.run_id, y.case_id, y.provider, y.prompt, y.test_index, y.assertion_index,
           y.parent_index, y.type, y.metric,
           CASE WHEN y.passes > y.fails THEN 'pass' WHEN y.passes + y.fails > 0 THEN 'fail'
                ELSE 'error' END AS status,
           CASE WHEN y.passes + y.fails > 0 THEN y.passes > y.fails END AS pass,
           y.score, y.reason, y.juror AS judge_model, y.threshold
    FROM (SELECT g.run_id, g.case_id, g.provider, g.prompt, g.test_index, g.assertion_index,
                 g.parent_index, g.type, g.metric, g.threshold, u.v.juror AS juror,
                 COUNT(*) FILTER (u.v.pass) AS passes, COUNT(*) FILTER (NOT u.v.pass) AS fails,
                 AVG(u.v.score) AS score, arg_min(u.v.reason, u.v.repeat) AS reason
          FROM g, unnest(g.votes) u(v) WHERE len(g.jurors) > 1 GROUP BY ALL) y"""


def graded_verdicts_sql(columns: set[str] | None = None) -> str:
    """The graded_verdicts view's query (case_rows: the stored cases), over the
    assertion_results `columns` present (before migration 0003 no parent_index: every row
    is top-level; before 0009 no votes: no jury). A jury's result is a row per juror and a
    row of the jury's verdict."""
    columns = {"parent_index", "votes"} if columns is None else columns
    parent = "a.parent_index" if "parent_index" in columns else "NULL::INTEGER"
    votes = "a.votes" if "votes" in columns else "NULL::STRUCT(juror VARCHAR)[]"
    embedding = _quoted(list(EMBEDDING_TYPES))
    verdicts = f"""
        SELECT x.run_id, x.case_id, x.provider, x.prompt, x.test_index, x.assertion_index,
               x.parent_index, x.type, x.metric, x.status, x.pass, x.score, x.reason,
               COALESCE({_PROVIDER}, {_JURY}, {_run_judge(embedding)}) AS judge_model,
               COALESCE(TRY_CAST(json_extract(x.spec, '$.threshold') AS DOUBLE),
                        x.default_threshold) AS threshold, x.votes, x.jurors
        FROM (SELECT a.run_id, a.case_id, c.provider, c.prompt, c.test_index,
                     a.assertion_index, {parent} AS parent_index, a.type, a.metric, a.status,
                     a.pass, a.score, a.reason, r.config, {_SPEC.format(parent=parent)} AS spec,
                     {_default_thresholds()} AS default_threshold, {votes} AS votes,
                     list_sort(list_distinct(list_transform({votes}, lambda v: v.juror)))
                       AS jurors
              FROM assertion_results a
              JOIN case_rows c USING (run_id, case_id)
              JOIN runs r ON r.run_id = a.run_id
              LEFT JOIN assertions s ON s.run_id = a.run_id AND s.test_index = c.test_index
                   AND s.assertion_index = COALESCE({parent}, a.assertion_index)
              WHERE regexp_replace(a.type, '^not-', '') IN ({_quoted(graded_types())})) x"""
    if "votes" not in columns:
        return f"SELECT g.* EXCLUDE (votes, jurors) FROM ({verdicts}) g"
    return (f"WITH g AS ({verdicts}) SELECT g.* EXCLUDE (votes, jurors) FROM g "
            f"UNION ALL BY NAME {_JURORS}")


_TRUE, _FALSE = "'pass', 'true', 'yes', '1'", "'fail', 'false', 'no', '0'"
# the person's verdict from a label's lowered, trimmed text {t}: a spelling, 0 / 1, or a
# score passing at the assertion's {threshold} (none: 0.5); anything else NULL
HUMAN = f"""CASE WHEN {{t}} IN ({_TRUE}) THEN true WHEN {{t}} IN ({_FALSE}) THEN false
                WHEN TRY_CAST({{t}} AS DOUBLE) IN (0, 1) THEN TRY_CAST({{t}} AS DOUBLE) = 1
                WHEN isfinite(TRY_CAST({{t}} AS DOUBLE))
                     THEN TRY_CAST({{t}} AS DOUBLE) >= COALESCE({{threshold}}, 0.5) END"""

# a label given after the run (the labels table): the last one per case x assertion, where
# assertion_index NULL labels each graded assertion of the case; an assertion's own wins
_GIVEN = """(SELECT run_id, case_id, assertion_index, arg_max(value, labelled_at) AS value
            FROM case_labels WHERE label = label_var GROUP BY ALL)"""

# per case x graded verdict (skipped ones apart): the label's text (given after the run,
# else the case's var; NULL for none) and the person's verdict read from it
VERDICT_LABELS = f"""
    SELECT g.* EXCLUDE (output, t, vars), t AS label,
           {HUMAN.format(t='t', threshold='g.threshold')} AS human, output, vars
    FROM (SELECT g.*, v.output, v.vars,
                 NULLIF(lower(trim(COALESCE(own.value, whole.value, json_extract_string(
                     v.vars, '$."' || label_var || '"')))), '') AS t
          FROM graded_verdicts g
          JOIN (SELECT run_id, case_id, output, vars FROM cases) v USING (run_id, case_id)
          LEFT JOIN {_GIVEN} own ON own.run_id = g.run_id AND own.case_id = g.case_id
               AND own.assertion_index = g.assertion_index AND g.parent_index IS NULL
          LEFT JOIN {_GIVEN} whole ON whole.run_id = g.run_id
               AND whole.case_id = g.case_id AND whole.assertion_index IS NULL
          WHERE g.status <> 'skipped') g
    WHERE (metric IS NULL OR g.metric = metric) AND (type IS NULL OR g.type = type)"""

# the labelled ones, and whether judge and person agree
JUDGE_LABELS = f"""
    SELECT * EXCLUDE (vars), CASE WHEN status IN ('pass', 'fail') AND human IS NOT NULL
                                 THEN (status = 'pass') = human END AS agrees
    FROM ({VERDICT_LABELS}) WHERE label IS NOT NULL"""

_COUNTS = """
    SELECT j.run_id, j.judge_model, j.type, j.metric, j.provider,
           COUNT(*) FILTER (human AND status = 'pass')::DOUBLE AS tp,
           COUNT(*) FILTER (human AND status = 'fail')::DOUBLE AS fn,
           COUNT(*) FILTER (NOT human AND status = 'pass')::DOUBLE AS fp,
           COUNT(*) FILTER (NOT human AND status = 'fail')::DOUBLE AS tn,
           COUNT(*) FILTER (human IS NOT NULL AND status = 'error') AS errors,
           COUNT(*) FILTER (human IS NULL) AS bad_labels
    FROM judge_labels(label_var, metric := metric, type := type) j
    GROUP BY ALL"""


def _kappa_sql() -> str:
    """Cohen's kappa of the 2 x 2 table (rows: the person, pass then fail; columns: the
    judge), and its asymptotic variance as statsmodels' cohens_kappa computes it."""
    return """
        p AS (SELECT *, tp + fn + fp + tn AS n_,
                     (tp + fn) / NULLIF(tp + fn + fp + tn, 0) AS r1,
                     (fp + tn) / NULLIF(tp + fn + fp + tn, 0) AS r0,
                     (tp + fp) / NULLIF(tp + fn + fp + tn, 0) AS c1,
                     (fn + tn) / NULLIF(tp + fn + fp + tn, 0) AS c0
              FROM counts),
        e AS (SELECT *, (tp + tn) / NULLIF(n_, 0) AS po, r1 * c1 + r0 * c0 AS pe FROM p),
        k AS (SELECT *, (po - pe) / NULLIF(1 - pe, 0) AS kappa FROM e),
        v AS (SELECT *, ((tp / n_) * (1 - (r1 + c1) * (1 - kappa)) ** 2
                         + (tn / n_) * (1 - (r0 + c0) * (1 - kappa)) ** 2
                         + (1 - kappa) ** 2 * ((fn / n_) * (c1 + r0) ** 2
                                               + (fp / n_) * (c0 + r1) ** 2)
                         - (kappa - pe * (1 - kappa)) ** 2) / NULLIF(1 - pe, 0) ** 2 / n_ AS var
              FROM k)"""


JUDGE_AGREEMENT = f"""
    WITH counts AS ({_COUNTS}),
    {_kappa_sql()}
    SELECT v.run_id, v.judge_model, v.type, v.metric, v.provider, n_::BIGINT AS n,
           po AS agreement, kappa,
           CASE WHEN var IS NOT NULL
                THEN greatest(-1, kappa - {Z95!r} * sqrt(greatest(var, 0))) END AS kappa_low,
           CASE WHEN var IS NOT NULL
                THEN least(1, kappa + {Z95!r} * sqrt(greatest(var, 0))) END AS kappa_high,
           tp / NULLIF(tp + fn, 0) AS tpr, tn / NULLIF(tn + fp, 0) AS tnr,
           tp::BIGINT AS tp, fn::BIGINT AS fn, fp::BIGINT AS fp, tn::BIGINT AS tn,
           errors, bad_labels
    FROM v"""

LABEL_PARAMS = "label_var, metric := NULL, type := NULL"
MACROS: dict[str, tuple[str, str, str]] = {
    "judge_labels": (LABEL_PARAMS, (
        "judge_labels('label_var'): per case x graded assertion, the judge's verdict, the "
        "person's label (a var) read as pass/fail, and whether they agree"), JUDGE_LABELS),
    "judge_agreement": (LABEL_PARAMS, (
        "judge_agreement('label_var'): the judge against a person's labels per run x judge "
        "model x type x metric x provider: n, agreement, Cohen's kappa with its 95 % "
        "interval, tpr / tnr, the 2 x 2 counts; errors and bad labels apart"), JUDGE_AGREEMENT),
}
VIEW = ("graded_verdicts", (
    "one row per case x model-graded assertion x judge model: the verdict, the model that "
    "gave it and the threshold a score label is read against"))
