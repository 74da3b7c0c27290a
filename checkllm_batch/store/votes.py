"""Views over a jury's and repeats' gradings (assertion_results.votes: one struct per juror x
repeat, as the assertion reads them, `not-` applied; evaluate/judging/jury.py makes them).

judge_votes is each grading; juror_verdicts each juror's verdict per case x assertion (the
majority of its repeats, a tie failing, as jury.py decides) with the share of its repeats
that agreed (self-consistency: 0.5 is a coin flip); juror_summary each juror's pass rate,
agreement with the verdict and self-consistency; jury_agreement Fleiss' kappa of the
jurors, juror_pairs Cohen's kappa of each pair. Created by store/views.py's create_views.
"""

from __future__ import annotations

import duckdb

from .cases import sql_string

_ASSERTION = "run_id, type, metric"  # what the agreement figures are per
_SUBJECT = "run_id, case_id, assertion_index, parent_index"  # one graded result

# Fleiss' kappa over subjects graded by every juror (n of them), p of whom passed each:
# per subject P_i = (p^2 + (n-p)^2 - n) / (n (n-1)); P = mean P_i; P_e = q^2 + (1-q)^2 with
# q the share of passing verdicts; kappa = (P - P_e) / (1 - P_e), NULL when P_e = 1
_FLEISS = f"""
    WITH v AS (SELECT {_ASSERTION}, {_SUBJECT}, COUNT(*) AS n,
                      COUNT(*) FILTER (pass) AS p, COUNT(pass) AS valid
               FROM juror_verdicts GROUP BY ALL),
    s AS (SELECT *, (p * p + (n - p) * (n - p) - n) / (n * (n - 1)) AS agree
          FROM v WHERE valid = n AND n > 1),
    k AS (SELECT {_ASSERTION}, any_value(n) AS jurors, COUNT(*) AS cases,
                 AVG(agree) AS agreement, AVG((p = 0 OR p = n)::INT) AS unanimous,
                 SUM(p) / SUM(n) AS q
          FROM s GROUP BY ALL)
    SELECT k.run_id, k.type, k.metric, k.jurors, k.cases,
           COALESCE(e.skipped, 0) AS skipped, k.agreement, k.unanimous,
           (k.agreement - (k.q * k.q + (1 - k.q) * (1 - k.q)))
             / NULLIF(1 - (k.q * k.q + (1 - k.q) * (1 - k.q)), 0) AS kappa
    FROM k LEFT JOIN (SELECT {_ASSERTION}, COUNT(*) AS skipped FROM v
                      WHERE valid < n GROUP BY ALL) e
      ON k.run_id = e.run_id AND k.type = e.type AND k.metric IS NOT DISTINCT FROM e.metric"""

# Cohen's kappa of two jurors over the subjects both gave a verdict: p_o the share agreeing,
# p_e = a b + (1-a)(1-b) with a, b each one's pass share; kappa = (p_o - p_e) / (1 - p_e)
_COHEN = """
    SELECT x.run_id, x.type, x.metric, x.juror AS juror_a, y.juror AS juror_b,
           COUNT(*) AS cases, AVG((x.pass = y.pass)::INT) AS agreement,
           (AVG((x.pass = y.pass)::INT) - (AVG(x.pass::INT) * AVG(y.pass::INT)
              + (1 - AVG(x.pass::INT)) * (1 - AVG(y.pass::INT))))
             / NULLIF(1 - (AVG(x.pass::INT) * AVG(y.pass::INT)
                           + (1 - AVG(x.pass::INT)) * (1 - AVG(y.pass::INT))), 0) AS kappa
    FROM juror_verdicts x JOIN juror_verdicts y
      ON x.run_id = y.run_id AND x.case_id = y.case_id
     AND x.assertion_index = y.assertion_index
     AND x.parent_index IS NOT DISTINCT FROM y.parent_index AND x.juror < y.juror
    WHERE x.pass IS NOT NULL AND y.pass IS NOT NULL
    GROUP BY ALL"""

VOTE_VIEWS: dict[str, tuple[str, str]] = {
    "judge_votes": (("each grading of a jury or repeated judge: one row per case x assertion "
                     "x juror x repeat, with the assertion's verdict"), """
        SELECT a.run_id, a.case_id, c.provider, c.prompt, c.test_id, a.assertion_index,
               a.parent_index, a.type, a.metric, a.verdict, v.juror, v.repeat, v.pass,
               v.score, v.reason
        FROM (SELECT run_id, case_id, assertion_index, parent_index, type, metric,
                     pass AS verdict, unnest(votes) AS v
              FROM assertion_results WHERE votes IS NOT NULL) a
        JOIN case_rows c USING (run_id, case_id)"""),
    "juror_verdicts": (("each juror's verdict per case x assertion (the majority of its "
                        "repeats; a tie fails), mean score, and consistency: the share of its "
                        "repeats with the majority (0.5: a coin flip)"), """
        SELECT * EXCLUDE (pass_reason, fail_reason, first_reason),
               CASE WHEN passes + fails > 0 THEN passes > fails END AS pass,
               greatest(passes, fails) / NULLIF(passes + fails, 0) AS consistency,
               CASE WHEN passes + fails = 0 THEN first_reason
                    WHEN passes > fails THEN pass_reason ELSE fail_reason END AS reason
        FROM (SELECT run_id, case_id, provider, prompt, test_id, assertion_index,
                     parent_index, type, metric, verdict, juror, COUNT(*) AS repeats,
                     COUNT(*) FILTER (pass) AS passes, COUNT(*) FILTER (NOT pass) AS fails,
                     COUNT(*) FILTER (pass IS NULL) AS errors, AVG(score) AS score,
                     arg_min(reason, repeat) FILTER (pass) AS pass_reason,
                     arg_min(reason, repeat) FILTER (NOT pass) AS fail_reason,
                     arg_min(reason, repeat) AS first_reason
              FROM judge_votes GROUP BY ALL)"""),
    "juror_summary": (("per run x assertion type x metric x juror: verdicts, pass rate, "
                       "errors, how often the juror agreed with the jury's verdict, and its "
                       "self-consistency over repeats"), """
        SELECT run_id, type, metric, juror, COUNT(*) AS results, COUNT(pass) AS verdicts,
               AVG(pass::INT) AS pass_rate, COUNT(*) - COUNT(pass) AS errors,
               AVG((pass = verdict)::INT) AS with_verdict,
               AVG(consistency) AS consistency,
               COUNT(*) FILTER (consistency < 1) AS split
        FROM juror_verdicts GROUP BY ALL"""),
    "jury_agreement": (("Fleiss' kappa of a jury per run x assertion type x metric, over the "
                        "results every juror gave a verdict (skipped: a juror errored), with "
                        "the observed agreement and the share of unanimous results"), _FLEISS),
    "juror_pairs": (("Cohen's kappa and agreement of each pair of jurors per run x assertion "
                     "type x metric, over the results both gave a verdict"), _COHEN),
}


def create_vote_views(con: duckdb.DuckDBPyConnection, stored: str) -> None:
    """(Re-)create the vote views over the stored cases table `stored`; none on a database
    migrated only part of the way, before `assertion_results.votes` (0009_judge_votes)."""
    if not con.execute("SELECT 1 FROM duckdb_columns() WHERE database_name = current_database() "
                       "AND table_name = 'assertion_results' AND column_name = 'votes'"
                       ).fetchall():
        return
    for name, (comment, query) in VOTE_VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {query.replace('case_rows', stored)}")
        con.execute(f"COMMENT ON VIEW {name} IS {sql_string(comment)}")
