"""Juries and repeats: several gradings of one assertion made one verdict.

Each juror (judge `models`, or the one model) grades every request `repeat` times. A juror's
verdict is the majority of its repeats (a tie fails) and its score their mean; the jury's
follows the `vote`: majority (a tie fails), all, any, or mean (mean score against the
threshold). Gradings that errored do not vote; with no vote left the verdict is an error.
Every grading is kept on the result row (`votes`: juror, repeat, pass, score, reason, as
the assertion reads them, `not-` applied), so the views show the odd juror out, and how
often the repeats agreed.
"""

from __future__ import annotations

import polars as pl

from ...suites.judge import JudgeConfig

VOTE = pl.Struct({"juror": pl.String, "repeat": pl.Int32, "pass": pl.Boolean,
                  "score": pl.Float64, "reason": pl.String})
VOTES = pl.List(VOTE)
MEAN_THRESHOLD = 0.5  # vote: mean, for an assertion with no threshold of its own


def panel(config: JudgeConfig, model: str | None) -> list[tuple[str, int]]:
    """(juror, repeat) of each grading: the jury (an assertion's or test's own provider
    replaces it with that one model), each juror `repeat` times."""
    jurors = (model,) if model else (config.jurors or ("",))
    return [(juror, r) for juror in jurors for r in range(config.repeat)]


def combine(gradings: list[tuple[str, int, pl.DataFrame]], vote: str,
            threshold: float | None, negate: bool) -> pl.DataFrame:
    """One outcome per case (case_id, test_index, passed, score, reason, cost, votes) from
    each grading's outcomes (case_id, test_index, passed, score, reason[, cost])."""
    stacked = pl.concat([_tagged(frame, juror, r) for juror, r, frame in gradings],
                        how="diagonal_relaxed")
    jurors = stacked.select("case_id", "juror", "passed", "score", "reason")
    if len({r for _, r, _ in gradings}) > 1:
        jurors = _vote(stacked, ["case_id", "juror"], "majority", MEAN_THRESHOLD, "repeats")
    verdict = jurors.drop("juror") if len({j for j, _, _ in gradings}) == 1 else _vote(
        jurors, ["case_id"], vote, MEAN_THRESHOLD if threshold is None else threshold, "jurors")
    read = _as_read(pl.col("passed"), pl.col("score"), negate)
    votes = stacked.group_by("case_id", maintain_order=True).agg(
        votes=pl.struct("juror", "repeat", read["pass"].alias("pass"),
                        read["score"].alias("score"), "reason"),
        cost=pl.col("cost").sum(), test_index=pl.col("test_index").first())
    return votes.join(verdict, on="case_id", maintain_order="left").select(
        "case_id", "test_index", "passed", "score", "reason", "cost",
        pl.col("votes").cast(VOTES))


def _tagged(frame: pl.DataFrame, juror: str, repeat: int) -> pl.DataFrame:
    cost = pl.col("cost") if "cost" in frame.columns else pl.lit(0.0)
    return frame.select("case_id", "test_index", "passed", "score", "reason",
                        cost.cast(pl.Float64).fill_null(0.0).alias("cost"),
                        juror=pl.lit(juror), repeat=pl.lit(repeat, pl.Int32))


def _as_read(passed: pl.Expr, score: pl.Expr, negate: bool) -> dict[str, pl.Expr]:
    """A grading's pass and score as the assertion reads them (`not-`: flipped, the score
    1 - score clipped to [0, 1], as evaluate/outcome.py does for judge scores)."""
    if negate:
        passed, score = ~passed, (1.0 - score).clip(0.0, 1.0)
    return {"pass": passed, "score": pl.when(passed.is_not_null()).then(score)}


def _vote(voters: pl.DataFrame, keys: list[str], vote: str, threshold: float, noun: str
          ) -> pl.DataFrame:
    """The verdict per `keys` (keys, passed, score, reason) from its voters' (a juror's
    repeats, or the jurors): the reason counts those passing, then gives the first voter's
    reason on the verdict's side."""
    passed, ok = pl.col("passed"), pl.col("passed").is_not_null()
    passes, fails, errors = passed.sum(), (~passed).sum(), (~ok).sum()
    score = pl.col("score").filter(ok).mean()
    rule = {
        "majority": pl.when(passes + fails > 0).then(passes > fails),  # a tie fails
        "all": pl.when(fails > 0).then(False).when(errors > 0).then(None).otherwise(True),
        "any": pl.when(passes > 0).then(True).when(errors > 0).then(None).otherwise(False),
        "mean": pl.when(score.is_not_null()).then(score >= threshold),
    }[vote]
    per = voters.sort([*keys, *(["repeat"] if "repeat" in voters.columns else [])]).group_by(
        keys, maintain_order=True).agg(verdict=rule, score=score, n=pl.len(), passes=passes,
                                       errors=errors, reasons=pl.struct("passed", "reason"))
    label = vote if noun == "jurors" else ""  # a juror's repeats: always the majority
    errors_said = pl.format(", {} errors" if label else "{} errors", pl.col("errors"))
    note = pl.concat_str(pl.lit(label), pl.when(pl.col("errors") > 0).then(errors_said)
                         .otherwise(pl.lit("")))
    tally = pl.concat_str(
        pl.format("{} of {} {} passed", pl.col("passes"), pl.col("n"), pl.lit(noun)),
        pl.when(note != "").then(pl.format(" ({})", note)).otherwise(pl.lit("")), pl.lit(": "))
    return _said(per, keys).select(
        *keys, passed="verdict", score="score",
        reason=pl.concat_str(tally, pl.col("said").fill_null("")))


def _said(per: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`per` (keys, verdict, reasons: a list of (passed, reason)) with `said`: the first
    reason whose verdict is `verdict`, else the first (an error says why)."""
    rows = per.with_row_index("_row")
    flat = rows.select("_row", "verdict", "reasons").explode("reasons").unnest("reasons")
    side = flat.filter(pl.col("passed") == pl.col("verdict")).group_by("_row").agg(
        side=pl.col("reason").first())
    first = flat.group_by("_row").agg(first=pl.col("reason").first())
    return (rows.join(side, on="_row", how="left").join(first, on="_row", how="left")
            .sort("_row").with_columns(said=pl.coalesce("side", "first"))
            .drop("_row", "side", "first", "reasons"))
