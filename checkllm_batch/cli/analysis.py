"""The analysis commands of the CLI: compare, export, report, power, agreement."""

from __future__ import annotations

import sys

import click
import polars as pl

from ..analysis.compare import GATES, Comparison, Gate, document
from ..analysis.corrected import corrected_sample_size
from ..analysis.database import Results
from ..analysis.power import sample_size
from ..analysis.stats import REPLICATES, SEED
from ..analysis.wording import PASS_RATE_HEADING, label, pass_rate_lines, percent
from .labels import corrected_gate, print_corrected, print_corrected_difference
from .support import FORMATS, UserError, emit, show, user_errors

EXIT_REGRESSED = 1
SMALL_N = 30  # labelled cases below which agreement and kappa get a caution


def _show(frame: pl.DataFrame, max_rows: int = 50) -> None:
    show(max_rows=max_rows, frame=frame)


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--gate", "rule", type=click.Choice(GATES), default="significant",
              show_default=True, help="When to exit 1: significant: a pass rate dropped "
              "significantly (Holm-adjusted McNemar p < --alpha, by at least --min-effect); "
              "any: any case regressed; none: never (exit 0 unless the input is bad).")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1),
              help="Significance level, after Holm's adjustment across the comparisons.")
@click.option("--min-effect", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="Smallest drop that fails the gate, in percentage points (2 = 2 points).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True, help="Words and tables, or JSON / CSV for scripts.")
@click.option("--all-metrics", is_flag=True, help="Also list metrics that did not change.")
@click.option("--partial", is_flag=True, help="Compare a run that did not finish "
              "(interrupted or failed) too; its missing cases count as removed.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME", help="Test only this "
              "metric (repeat for several): Holm counts only the metric rows asked about.")
@click.option("--replicates", default=REPLICATES, show_default=True,
              type=click.IntRange(min=100), help="Bootstrap replicates of the metric tests "
              "at least; raised to what the number of metric rows tested needs.")
@click.option("--seed", default=SEED, show_default=True, type=int,
              help="Seed of the bootstrap (the same seed gives the same figures).")
@click.option("--corrected", "corrected_label", metavar="LABEL", help="Also the pass rates "
              "corrected by people's labels LABEL (labels sample / import), B - A with a 95 % "
              "interval; the significant gate then fails when that interval lies below "
              "-min-effect (the judge's own rates no longer decide).")
@click.option("--labels-random", is_flag=True, help="With --corrected: labels not drawn by "
              "`labels sample` are a uniform random sample of the cases (said beside it).")
@user_errors
def compare_command(run_a: str, run_b: str, db: str, rule: str, alpha: float,
                    min_effect: float, fmt: str, all_metrics: bool, partial: bool,
                    metrics: tuple[str, ...], replicates: int, seed: int,
                    corrected_label: str | None, labels_random: bool) -> None:
    """Compare RUN_A with RUN_B: per provider x prompt both pass rates, their difference
    over the matched cases with the exact McNemar test on the cases whose verdict changed
    and the exact interval that inverts it; the cases that regressed (passed in A, not
    in B) or improved; each metric's change with a paired-bootstrap test and interval.
    Each interval is drawn at the level Holm's procedure tests its row at, so it
    excludes 0 exactly when the row is significant.

    A run is its id, a unique prefix of it, `last` or `previous` (compare previous last).
    Cases are matched by test_id + provider + prompt + vars (then by order within that key).
    Exit code: 1 when the --gate fails (by default: a pass rate dropped significantly),
    0 otherwise, 2 on bad input."""
    results = Results(db)
    comparison = results.compare(run_a, run_b, partial=partial, alpha=alpha,
                                 replicates=replicates, seed=seed,
                                 metrics=list(metrics) or None)
    gate = comparison.gate(rule, min_effect)
    corrected = None
    if corrected_label:
        corrected = results.compare_corrected(run_a, run_b, corrected_label, labels_random)
        gate = corrected_gate(gate, corrected) if rule == "significant" else gate
    if fmt != "table":
        doc = document(comparison, gate)
        emit(doc if corrected is None else {**doc, "corrected": corrected}, fmt,
             table=comparison.metrics)
    else:
        _print_comparison(comparison, gate, all_metrics)
        if corrected is not None:
            print_corrected_difference(corrected, labels_random)
    sys.exit(EXIT_REGRESSED if gate.failed else 0)


def _print_comparison(comparison: Comparison, gate: Gate, all_metrics: bool) -> None:
    counts = comparison.counts()
    click.echo(f"{comparison.run_a} -> {comparison.run_b}: "
               + ", ".join(f"{n} {k}" for k, n in counts.items()))
    click.echo(PASS_RATE_HEADING.format(alpha=comparison.alpha))
    for line in pass_rate_lines(comparison.pass_rates):
        click.echo(f"  {line}")
    columns = ["test_id", "provider", "prompt", "status_a", "status_b", "score_a", "score_b",
               "output_b", "reason_b"]
    for name, frame in (("regressed", comparison.regressed), ("improved", comparison.improved)):
        if frame.height:
            click.echo(f"{name}:")
            _show(frame.select(columns))
    metrics = comparison.metrics.filter(pl.col("metric") != "pass_rate")
    if not all_metrics:
        metrics = metrics.filter(pl.col("diff").fill_null(1) != 0)
    if metrics.height:
        tested = comparison.metrics.filter(pl.col("p_value").is_not_null(),
                                           pl.col("metric") != "pass_rate").height
        click.echo(f"metrics (diff = b - a; paired bootstrap of {comparison.replicates:,} "
                   f"replicates over tests, Holm over the {tested} metric rows tested: "
                   "[diff_low, diff_high] the percentile interval at the row's Holm level "
                   "(column level), which excludes 0 exactly when the row is significant):")
        _show(metrics.with_columns(pl.col(pl.Float64).round(4)), max_rows=200)
    verdict = "fail" if gate.failed else "pass"
    click.echo(f"gate {gate.rule}: {verdict} ({gate.reason})")
@click.command("export")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help="Run id (default: the last run).")
@click.option("--output", "-o", "directory", required=True, type=click.Path(file_okay=False),
              help="Directory for <table>.parquet files.")
@user_errors
def export_command(db: str, run_id: str | None, directory: str) -> None:
    """Export one run to Parquet: one file per table, that run's rows only."""
    results = Results(db)
    for path in results.export(directory, run_id):
        click.echo(str(path))


@click.command("report")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help="Run id, a unique prefix, 'last' or 'previous' "
              "(default: the last run).")
@click.option("--output", "-o", "path", default="report.html", show_default=True,
              type=click.Path(dir_okay=False))
@click.option("--against", metavar="RUN", help="Add a section comparing RUN (as A) with "
              "this run: which pass rates and metrics changed significantly.")
@click.option("--label", metavar="VAR", help="Add a section setting the judge against a "
              "person's labels in the var VAR: agreement, kappa, and the cases where they "
              "disagree.")
@click.option("--by", "by_vars", metavar="VAR", multiple=True, help="A var whose values are "
              "slices in 'where it fails' (repeat for several).")
@user_errors
def report_command(db: str, run_id: str | None, path: str, against: str | None,
                   label: str | None, by_vars: tuple[str, ...]) -> None:
    """Write a self-contained HTML report of a run, first screen first: pass rates with
    their 95 % intervals and counts (errors and skipped apart) and metrics per provider x
    prompt; what changed (--against); where it fails (the lowest slices, the common
    reasons, then a tests x providers matrix with filters, search and each case); why the
    judge disagrees (--label); charts and judge cost. No network needed to view it."""
    written = Results(db).report(path, run_id, against, label, by_vars)
    click.echo(f"report: {written}")


@click.command("power")
@click.option("--pass-rate", type=float, help="Pass rate today, a fraction (0.9 for 90 %).")
@click.option("--drop", type=float, help="Drop to detect, a fraction (0.05 for 5 points).")
@click.option("--flip-rate", type=float, help="Share of cases whose verdict changes between "
              "two runs of the same system (noise), a fraction (default: runs taken as "
              "independent, the cautious figure); with --db and --against it is measured.")
@click.option("--power", "power_", default=0.8, show_default=True,
              type=click.FloatRange(0, 1, min_open=True, max_open=True))
@click.option("--alpha", default=0.05, show_default=True,
              type=click.FloatRange(0, 1, min_open=True, max_open=True))
@click.option("--db", help="Instead: what each provider x prompt of a run can detect.")
@click.option("--run", "run_id", help="With --db: the run (default: the last).")
@click.option("--against", help="With --db: another run of the same cases, to measure the "
              "flip rate.")
@click.option("--corrected", is_flag=True, help="Instead: the people's labels each of two "
              "groups (providers, or runs with their own labels) needs for their corrected "
              "pass rates (PPI++) to detect --drop, alone and with the judge; with --db from "
              "each graded assertion's labels so far (--label), else from --pass-rate (the "
              "people's) and an assumed judge (--tpr/--tnr).")
@click.option("--label", "label_name", default="human", show_default=True,
              help="With --corrected --db: the labels so far.")
@click.option("--tpr", type=click.FloatRange(0, 1), help="With --corrected: the judge's "
              "assumed true positive rate (default 0.9, or the labels so far).")
@click.option("--tnr", type=click.FloatRange(0, 1), help="With --corrected: its assumed "
              "true negative rate (default: --tpr).")
@click.option("--judged", type=click.IntRange(min=2), help="With --corrected, without --db: "
              "judged cases per group (default: as many as wanted).")
@user_errors
def power_command(pass_rate: float | None, drop: float | None, flip_rate: float | None,
                  power_: float, alpha: float, db: str | None, run_id: str | None,
                  against: str | None, corrected: bool, label_name: str,
                  tpr: float | None, tnr: float | None, judged: int | None) -> None:
    """How many cases a paired comparison needs: matched cases for `compare` (McNemar's
    exact test) to detect a pass rate dropping by --drop from --pass-rate with --power at
    --alpha, all fractions as in Python (--pass-rate 0.9 --drop 0.05: 90 % to 85 %; a
    value above 1 is refused). With --db: the smallest drop each provider x prompt of a
    run detects. With --corrected: how many labels a corrected difference needs."""
    if corrected:
        _corrected_power(drop, pass_rate, power_, alpha, db, run_id, label_name, tpr, tnr,
                         judged)
        return
    if db is not None:
        rows = Results(db).detectable(run_id, against, power_, alpha)
        for row in rows.iter_rows(named=True):  # one line per provider x prompt
            flips = "" if row["flip_rate"] is None else \
                f", flip rate {100 * row['flip_rate']:.1f} % against {against}"
            drop_text = "no drop" if row["detectable_drop"] is None else \
                f"a drop of {100 * row['detectable_drop']:.1f} points"
            click.echo(f"{label(row['provider'], row['prompt'], 1)}: {row['cases']} cases at "
                       f"{percent(row['pass_rate'])}{flips}: detects {drop_text} with power "
                       f"{power_:g} at alpha {alpha:g}")
        return
    if pass_rate is None or drop is None:
        raise UserError("give --pass-rate and --drop (fractions: 0.9 and 0.05), or --db "
                        "for a run")
    n = sample_size(pass_rate, drop, power_, alpha, flip_rate)
    assumed = ("runs taken as independent" if flip_rate is None
               else f"flip rate {percent(flip_rate)}")
    click.echo(f"{n} matched cases detect a drop of {100 * drop:g} points from "
               f"{percent(pass_rate)} with power {power_:g} at alpha {alpha:g} ({assumed}; "
               "exact McNemar test)")


def _corrected_power(drop: float | None, pass_rate: float | None, power_: float,
                     alpha: float, db: str | None, run_id: str | None, label_name: str,
                     tpr: float | None, tnr: float | None, judged: int | None) -> None:
    """power --corrected: labels per group for a corrected difference of --drop."""
    if drop is None:
        raise UserError("give --drop (a fraction: 0.05 for 5 points) with --corrected")
    aim = f"a difference of {100 * drop:g} points with power {power_:g} at alpha {alpha:g}"
    if db is not None:
        table = Results(db).labels_plan(label=label_name, run=run_id, tpr=tpr, tnr=tnr,
                                        drop=drop, power=power_, alpha=alpha)
        click.echo(f"labels per group for two groups' corrected pass rates to detect {aim}:")
        show(frame=table.with_columns(pl.col("rho").round(3)))
        return
    if pass_rate is None:
        raise UserError("give --pass-rate (the people's, a fraction) with --corrected, or "
                        "--db for a run's labels so far")
    tpr = 0.9 if tpr is None else tpr
    alone, with_judge = corrected_sample_size(drop, pass_rate, tpr, tnr, judged, power_,
                                              alpha)
    cases = f"{judged} judged cases" if judged else "every case judged"
    click.echo(f"{with_judge} labels per group with the judge ({alone} alone) detect {aim} "
               f"between two groups' corrected pass rates around {percent(pass_rate)} "
               f"(judge assumed tpr {tpr:g}, tnr {tnr if tnr is not None else tpr:g}; "
               f"{cases} per group; z-test on PPI++ estimates)")


@click.command("agreement")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--label", required=True, help="The var (dataset column) holding a person's "
              "verdict: pass/fail, true/false, yes/no, 1/0, or a score.")
@click.option("--run", "run_id", help="Run id, a unique prefix, 'last' or 'previous' "
              "(default: the last run).")
@click.option("--metric", help="Only the graded assertions of this named metric.")
@click.option("--type", "type_", help="Only graded assertions of this type (e.g. llm-rubric).")
@click.option("--disagreements", "limit", default=20, show_default=True,
              type=click.IntRange(min=0), help="Disagreeing cases listed (table format).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True, help="A table, or JSON / CSV for scripts.")
@click.option("--corrected", is_flag=True, help="Then the judge's pass rates corrected by "
              "the labels (PPI++): judge-only, labels-only and corrected, with 95 % "
              "intervals and the labels the judge was worth (n_effective).")
@click.option("--scores", is_flag=True, help="With --corrected: mean scores, not pass rates.")
@click.option("--slice", "slice_", metavar="VAR", help="With --corrected: per value of a var.")
@click.option("--labels-random", is_flag=True, help="With --corrected: labels not drawn by "
              "`labels sample` (e.g. a dataset column) are a uniform random sample of the "
              "cases; without it such labels are refused for correction.")
@user_errors
def agreement_command(db: str, label: str, run_id: str | None, metric: str | None,
                      type_: str | None, limit: int, fmt: str, corrected: bool, scores: bool,
                      slice_: str | None, labels_random: bool) -> None:
    """How often the judge agrees with a person's labels: per judge model x graded
    assertion (type, metric) x provider, n, agreement, Cohen's kappa with its 95 %
    interval, the judge's tpr / tnr (a pass is positive), the 2 x 2 counts, and cases
    the judge errored on or whose label was unreadable, apart. Then the cases where they
    disagree: output, the judge's reason and the label side by side."""
    results = Results(db)
    run = results.run_id(run_id)
    table = results.judge_agreement(label, metric, type_, run=run)
    fixed = results.corrected_pass_rates(
        label, run=run, labels_random=labels_random, slice=slice_, metric=metric,
        type=type_, scores=scores) if corrected else None
    if fmt != "table":
        emit({} if fixed is None else {"agreement": table, "corrected": fixed}, fmt,
             table=table if fixed is None else fixed)
        return
    click.echo(f"run {run}: the judge against the labels in {label!r}")
    show(frame=table.with_columns(pl.col(pl.Float64).round(4)))
    few = table.filter(pl.col("n") < SMALL_N).height
    if few:
        click.echo(f"caution: {few} row(s) have fewer than {SMALL_N} labelled cases: their "
                   "agreement and kappa are rough, and kappa's interval (asymptotic) too "
                   "narrow")
    if limit:
        cases = results.judge_disagreements(label, metric, type_, run=run, limit=limit)
        if cases.height:
            click.echo(f"disagreements (first {limit}):")
            show(frame=cases.with_columns(pl.col("output").str.slice(0, 80),
                                          pl.col("reason").str.slice(0, 80)))
    if fixed is not None:
        what = "mean scores" if scores else "pass rates"
        print_corrected(fixed, f"{what} corrected by the labels in {label!r} (PPI++, 95 % "
                               f"intervals; labels {fixed['labels'][0]}):")
