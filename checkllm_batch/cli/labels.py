"""The `labels` commands (import, sample, plan, drift) and the corrected estimates as printed
beside `agreement --corrected` and `compare --corrected`."""

from __future__ import annotations

from pathlib import Path

import click
import polars as pl

from ..analysis.compare import Gate
from ..analysis.corrected import CAVEAT
from ..analysis.database import Results
from ..analysis.labels import read_label_file
from ..errors import InputError
from .support import FORMATS, emit, show, user_errors

RUN_HELP = "Run id, a unique prefix, 'last' or 'previous' (default: the last run)."


@click.group("labels")
def labels_group() -> None:
    """People's labels after a run: draw the cases to label (sample), store the labels
    (import), plan how many an interval needs (plan), and follow the judge on a frozen
    anchor set run over run (drift)."""


@labels_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--label", default="human", show_default=True,
              help="The name the labels are stored under, and the file's column holding "
              "them: pass/fail, true/false, yes/no, 1/0, or a score.")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help=RUN_HELP)
@click.option("--key", help="Comma-separated columns matching the cases' vars (default: "
              "case_id, else the file's columns that are vars of the run).")
@click.option("--by", "labelled_by", help="Who labelled (unless a labelled_by column says).")
@click.option("--anchor", is_flag=True, help="Freeze these labels as the anchor set of "
              "--label: every later run holding the same outputs and vars judges them "
              "again, and `labels drift` follows the judge on them.")
@user_errors
def import_command(file: str, label: str, db: str, run_id: str | None, key: str | None,
                   labelled_by: str | None, anchor: bool) -> None:
    """Store the labels in FILE (CSV, JSONL or Parquet) for a run's cases. Each row is
    matched by case_id or by the dataset's own id columns; a row matching no case is an
    error, an empty label is skipped. A later import of the same case replaces its label."""
    frame = read_label_file(file)
    keys = key.split(",") if key else None
    done = Results(db).add_labels(frame, label, run=run_id, key=keys, anchor=anchor,
                                  labelled_by=labelled_by, source=Path(file).name)
    click.echo(f"run {done['run_id']}: {done['labels']} labels {label!r} on "
               f"{done['cases']} cases stored ({done['empty']} empty skipped)"
               + ("; frozen as the anchor set" if anchor else ""))


@labels_group.command("sample")
@click.option("--n", "n", type=int, required=True, help="How many cases to draw.")
@click.option("--by", help="Strata, comma-separated: provider, prompt, verdict, type, "
              "metric, judge_model or a var (see --allocation).")
@click.option("--seed", type=int, help="Seed of the draw (default: a random one, printed).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The CSV file to label.")
@click.option("--label", default="human", show_default=True,
              help="The empty column the labeller fills in.")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help=RUN_HELP)
@click.option("--type", "type_", help="The graded assertion type, when cases have several.")
@click.option("--metric", help="The graded assertion's metric, when cases have several.")
@click.option("--judge-model", help="The judge model, when cases have several (a jury).")
@click.option("--allocation", type=click.Choice(["proportional", "equal"]),
              default="proportional", show_default=True, help="Labels per stratum: in "
              "proportion to its cases, or evenly (each at least 2).")
@user_errors
def sample_command(n: int, by: str | None, seed: int | None, output: str, label: str,
                   db: str, run_id: str | None, type_: str | None, metric: str | None,
                   judge_model: str | None, allocation: str) -> None:
    """Draw N judged cases at random for people to label and write them to a CSV (case_id,
    provider, prompt, output, vars, the judge's verdict, score and reason, an empty label
    column). Each case's inclusion probability is recorded, so the corrected estimates
    weigh the labels as drawn. Stratified by the judge's verdict (--by verdict), the labels
    alone get the gain the judge gives (docs/judge-audit.md)."""
    drawn = Results(db).sample_labels(
        n, [b.strip() for b in by.split(",")] if by else [], seed, run=run_id, label=label,
        type_=type_, metric=metric, judge_model=judge_model, allocation=allocation)
    drawn.drop("seed").write_csv(output)
    strata = drawn.group_by("stratum").len().sort("stratum").rows()
    click.echo(f"{drawn.height} cases to label written to {output} (seed "
               f"{drawn['seed'][0]}); " + ", ".join(f"{s}: {k}" for s, k in strata))
    click.echo(f"fill in the {label!r} column, then: checkllm-batch labels import {output} "
               f"--label {label}")


@labels_group.command("plan")
@click.option("--width", type=click.FloatRange(0, 100, min_open=True, max_open=True),
              required=True, help="The interval's half-width in points (2 = +-2 points).")
@click.option("--label", default="human", show_default=True)
@click.option("--tpr", type=click.FloatRange(0, 1), help="Assume the judge's true positive "
              "rate (default: read from the labels so far, else 0.9).")
@click.option("--tnr", type=click.FloatRange(0, 1), help="Assume its true negative rate.")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help=RUN_HELP)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True)
@user_errors
def plan_command(width: float, label: str, tpr: float | None, tnr: float | None, db: str,
                 run_id: str | None, fmt: str) -> None:
    """How many labels a 95 % interval of +- WIDTH points needs per graded assertion x
    provider: alone (labels only) and with the judge (PPI++), from what the labels so far
    show, or from an assumed agreement (--tpr/--tnr) when there are none."""
    table = Results(db).labels_plan(width / 100, label, run=run_id, tpr=tpr, tnr=tnr)
    if fmt != "table":
        emit({}, fmt, table=table)
        return
    click.echo(f"labels for a 95 % interval of ±{width:g} points:")
    show(frame=table.with_columns(pl.col("rho").round(3)))


@labels_group.command("drift")
@click.option("--label", default="human", show_default=True,
              help="The anchor set: the labels frozen under this name (import --anchor).")
@click.option("--alpha", default=0.05, show_default=True,
              type=click.FloatRange(0, 1, min_open=True, max_open=True))
@click.option("--metric", help="Only the graded assertions of this named metric.")
@click.option("--type", "type_", help="Only graded assertions of this type.")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True)
@user_errors
def drift_command(label: str, alpha: float, metric: str | None, type_: str | None, db: str,
                  fmt: str) -> None:
    """The judge on the anchor set, run over run: per run x judge x graded assertion, its
    agreement with the frozen labels, tpr, tnr and pass rate on the anchors; against the
    previous run, the anchors it now gets wrong (worse) or right (better) and the exact
    McNemar test on them. The anchors' outputs are frozen, so a move is the judge's (its
    model, prompt or settings), not the judged model's."""
    table = Results(db).judge_drift(label, alpha=alpha, metric=metric, type=type_)
    if fmt != "table":
        emit({}, fmt, table=table)
        return
    click.echo(f"the judge on the anchor set {label!r}, run over run:")
    rates = ["agreement", "tpr", "tnr", "judge_pass_rate", "previous_agreement"]
    show(frame=table.drop("started_at").with_columns(
        pl.col(rates).mul(100).round(1), pl.col("p_value").round(4)))
    for row in table.filter(pl.col("previous_run").is_not_null()).iter_rows(named=True):
        click.echo(drift_sentence(row, alpha))  # one line per run x judge x assertion


def drift_sentence(row: dict, alpha: float) -> str:
    """One run against the previous on the anchors, in words."""
    what = f"{row['type']}{' · ' + row['metric'] if row['metric'] else ''}"
    if not row["matched"]:
        return f"  {row['run_id']} {what}: no anchor in common with {row['previous_run']}"
    change = (f"{row['matched']} anchors in common with {row['previous_run']}: "
              f"{row['worse']} now wrong, {row['better']} now right, exact McNemar "
              f"p = {row['p_value']:.3g}")
    if row["moved"]:
        return (f"  {row['run_id']} {what}: the judge moved ({row['previous_judge_model']} -> "
                f"{row['judge_model']}; {change}): a change in this run's judge pass rates "
                "may be the judge's, not the model's")
    return (f"  {row['run_id']} {what}: no significant move of the judge ({change}, not "
            f"below {alpha:g}): on these anchors the judge does not explain a change in "
            "pass rates")


def _interval(name: str, low: str, high: str) -> pl.Expr:
    """`63.4 [56.4, 70.4]`: a rate and its interval in points."""
    def points(c: str) -> pl.Expr:
        return (pl.col(c) * 100).round(1).cast(pl.String)
    return pl.format("{} [{}, {}]", points(name), points(low), points(high)).alias(name)


def print_corrected(table: pl.DataFrame, heading: str) -> None:
    """The corrected table as a person reads it (points, intervals in brackets), and
    beside it what the judge was worth in labels, with the caveat."""
    if table.is_empty():
        raise InputError("no judged case to correct")
    click.echo(heading)
    keys = [c for c in ("judge_model", "type", "metric", "provider", "slice")
            if c in table.columns]
    show(frame=table.select(
        *keys, "n_labelled", "n_judged", _interval("judge_only", "judge_low", "judge_high"),
        _interval("labels_only", "labels_low", "labels_high"),
        _interval("corrected", "corrected_low", "corrected_high"),
        pl.col("n_effective").round(0).cast(pl.Int64), "note"))
    for row in table.filter(pl.col("n_effective").is_not_null()).iter_rows(named=True):
        where = " ".join(str(row[k]) for k in keys if row[k] is not None)
        click.echo(f"  {where}: {row['n_labelled']} labels with the judge are worth "
                   f"{row['n_effective']:.0f} alone ({row['n_effective'] / row['n_labelled']:.2f}"
                   " x)")  # one line per group: a handful
    click.echo(CAVEAT)


def print_corrected_difference(table: pl.DataFrame, labels_random: bool) -> None:
    source = "declared a uniform random sample" if labels_random else "a drawn sample"
    click.echo("corrected pass rates, B − A with its 95 % interval (each run's labels, "
               f"{source}; the runs taken as independent):")
    figures = ["corrected_a", "corrected_b", "difference", "low", "high", "judge_difference"]
    show(frame=table.with_columns(pl.col(figures).mul(100).round(1)))


def corrected_gate(gate: Gate, table: pl.DataFrame) -> Gate:
    """The significant gate decided by the corrected differences: failed when one's 95 %
    interval lies wholly below -min_effect points."""
    drops = table.filter(pl.col("high") < -gate.min_effect / 100).height
    return Gate(gate.rule, gate.alpha, gate.min_effect, drops > 0,
                f"{drops} corrected pass rate(s) dropped (95 % interval below "
                f"-{gate.min_effect:g} points)")
