"""A judge cascade's record: the calibration cases of a run and each stage's certified
threshold per graded assertion (`cascade_calibration`, `cascade_thresholds`), written once
before the run's first batch is judged and read back by a resume, which never calibrates
again."""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

THRESHOLD_COLUMNS = ["run_id", "key", "type", "metric", "stage", "models", "confidence",
                     "threshold", "n", "k", "bound", "tried", "calibrated", "agreement",
                     "risk", "reference"]


def recorded(con: duckdb.DuckDBPyConnection, run_id: str
             ) -> dict[tuple[int, int], float | None] | None:
    """The run's thresholds by (planned key, stage index), None when it has none yet."""
    rows = con.execute("SELECT key, stage, threshold FROM cascade_thresholds WHERE run_id = ?",
                       [run_id]).fetchall()
    return {(key, stage - 1): threshold for key, stage, threshold in rows} if rows else None


def record(con: duckdb.DuckDBPyConnection, run_id: str, calibration: pl.Series,
           thresholds: list[dict[str, Any]]) -> None:
    """The calibration cases and the thresholds, in one transaction."""
    drawn = pl.DataFrame({"run_id": run_id, "case_id": calibration.unique().sort()},  # noqa: F841
                         schema={"run_id": pl.String, "case_id": pl.Int64})
    certified = pl.DataFrame([{**t, "run_id": run_id} for t in thresholds],  # noqa: F841
                        schema={"run_id": pl.String, "key": pl.Int32, "type": pl.String,
                                "metric": pl.String, "stage": pl.Int32,
                                "models": pl.List(pl.String), "confidence": pl.String,
                                "threshold": pl.Float64, "n": pl.Int64, "k": pl.Int64,
                                "bound": pl.Float64, "tried": pl.Int32,
                                "calibrated": pl.Int64, "agreement": pl.Float64,
                                "risk": pl.Float64, "reference": pl.String})
    con.execute("BEGIN")
    try:
        con.execute("INSERT INTO cascade_calibration SELECT run_id, case_id FROM drawn")
        con.execute(f"INSERT INTO cascade_thresholds ({', '.join(THRESHOLD_COLUMNS)}) "
                    f"SELECT {', '.join(THRESHOLD_COLUMNS)} FROM certified")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


# per run x stage of a judge cascade (stage NULL: the abstained results, left for a person):
# what it decided, what it cost, against judging every case with the last stage
SUMMARY_COMMENT = ("a judge cascade per run x stage: results decided (and their share), "
                   "certified or not, calls and cost, its thresholds and certified bound; "
                   "every_case_calls / every_case_cost: judging every case with the last "
                   "stage alone; the row with stage NULL: results abstained, for a person")
SUMMARY = """
WITH results AS (
    SELECT run_id, case_id, cascade_stage AS stage, status, certified
    FROM assertion_results WHERE cascade_stage IS NOT NULL OR status = 'abstain'),
stages AS (
    SELECT run_id, stage, any_value(models) AS models, any_value(confidence) AS confidence,
           list(threshold ORDER BY key) AS thresholds, min(bound) AS bound,
           any_value(agreement) AS agreement, any_value(risk) AS risk,
           any_value(reference) AS reference
    FROM cascade_thresholds GROUP BY ALL),
last AS (SELECT run_id, max(stage) AS stage FROM stages GROUP BY ALL),
models AS (SELECT DISTINCT run_id, stage, unnest(models) AS model FROM cascade_thresholds),
calls AS (
    SELECT m.run_id, m.stage, count(*) AS calls, sum(j.cost) AS cost
    FROM models m JOIN judge_calls j ON j.run_id = m.run_id AND j.model = m.model
    GROUP BY ALL),
decided AS (
    SELECT run_id, stage, count(*) AS decided, count(*) FILTER (certified) AS certified,
           count(*) FILTER (status = 'error') AS errors
    FROM results GROUP BY ALL),
shares AS (
    SELECT *, decided / sum(decided) OVER (PARTITION BY run_id) AS share FROM decided),
reached AS (  -- the cases the last stage graded: all it decided, the abstained, calibration
    SELECT r.run_id, count(DISTINCT r.case_id) AS graded
    FROM results r JOIN last l ON l.run_id = r.run_id
    LEFT JOIN cascade_calibration k ON k.run_id = r.run_id AND k.case_id = r.case_id
    WHERE r.stage = l.stage OR r.stage IS NULL OR k.case_id IS NOT NULL GROUP BY ALL),
every AS (
    SELECT c.run_id, c.calls / NULLIF(g.graded, 0) * t.total AS every_case_calls,
           c.cost / NULLIF(g.graded, 0) * t.total AS every_case_cost
    FROM calls c JOIN last l ON l.run_id = c.run_id AND l.stage = c.stage
    JOIN reached g ON g.run_id = c.run_id
    JOIN (SELECT run_id, count(*) AS total FROM results GROUP BY ALL) t ON t.run_id = c.run_id)
SELECT d.run_id, d.stage, s.models, s.confidence, d.decided, d.share, d.certified, d.errors,
       COALESCE(c.calls, 0) AS calls, c.cost, s.thresholds, s.bound, s.agreement, s.risk,
       s.reference, e.every_case_calls, e.every_case_cost
FROM shares d LEFT JOIN stages s USING (run_id, stage) LEFT JOIN calls c USING (run_id, stage)
LEFT JOIN every e USING (run_id)
ORDER BY d.run_id, d.stage NULLS LAST"""
