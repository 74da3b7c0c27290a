"""The analysis commands of the CLI: compare, export, report."""

from __future__ import annotations

import sys

import click
import polars as pl

from ..cli_support import show, user_errors
from .results import Results

EXIT_REGRESSED = 1


def _show(frame: pl.DataFrame, max_rows: int = 50) -> None:
    show(max_rows=max_rows, frame=frame)


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--all-metrics", is_flag=True, help="Also list metrics that did not change.")
@click.option("--partial", is_flag=True, help="Compare a run that did not finish "
              "(interrupted or failed) too; its missing cases count as removed.")
@user_errors
def compare_command(run_a: str, run_b: str, db: str, all_metrics: bool, partial: bool) -> None:
    """Compare RUN_A with RUN_B: cases that regressed (passed in A, not in B) or improved,
    and the change of each metric.

    A run is its id, a unique prefix of it, `last` or `previous` (compare previous last).
    Cases are matched by test_id + provider + prompt + vars (then by order within that key).
    Exit code: 0 when nothing regressed, 1 when any case regressed, 2 on bad input."""
    comparison = Results(db).compare(run_a, run_b, partial=partial)
    counts = comparison.counts()
    click.echo(f"{comparison.run_a} -> {comparison.run_b}: "
               + ", ".join(f"{n} {k}" for k, n in counts.items()))
    columns = ["test_id", "provider", "prompt", "status_a", "status_b", "score_a", "score_b",
               "output_b", "reason_b"]
    for name, frame in (("regressed", comparison.regressed), ("improved", comparison.improved)):
        if frame.height:
            click.echo(f"{name}:")
            _show(frame.select(columns))
    metrics = comparison.metrics
    if not all_metrics:
        metrics = metrics.filter(pl.col("delta").fill_null(1) != 0)
    if metrics.height:
        click.echo("metrics (b - a):" if not all_metrics else "metrics:")
        _show(metrics, max_rows=200)
    sys.exit(EXIT_REGRESSED if counts["regressed"] else 0)


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
@user_errors
def report_command(db: str, run_id: str | None, path: str) -> None:
    """Write a self-contained HTML report of a run: summary, charts per provider and metric,
    judge cost, and a tests x providers matrix with filters, search and each case's output,
    rendered prompt, vars and reasons. No network needed to view it."""
    written = Results(db).report(path, run_id)
    click.echo(f"report: {written}")
