"""The `checkllm-batch` command: eval, metrics, sql, compare, export, report. User errors
print one line, exit 2."""

from __future__ import annotations

import sys

import click
import duckdb

from . import api
from .analysis.commands import compare_command, export_command, report_command
from .cli_support import EXIT_FAILED, UserError, show, user_errors


@click.group()
@click.version_option(package_name="checkllm-batch")
def main() -> None:
    """Score datasets of LLM outputs against promptfoo-style suites, into DuckDB."""


@main.command("eval")
@click.argument("suite", type=click.Path(dir_okay=False))
@click.option("--outputs", "-o", help="Outputs: .jsonl, .csv, .parquet, .arrow, or "
              "duckdb:file.duckdb:table. Optional when tests carry providerOutput.")
@click.option("--db", default="results.duckdb", show_default=True, help="Results database.")
@click.option("--batch-rows", default=api.BATCH_ROWS, show_default=True,
              help="Rows per batch: peak memory follows this, not the dataset size.")
@click.option("--progress/--no-progress", default=True, help="Progress bar (only on a terminal).")
@user_errors
def eval_command(suite: str, outputs: str | None, db: str, batch_rows: int,
                 progress: bool) -> None:
    """Evaluate OUTPUTS against SUITE and append a run to the results database.

    Exit code: 0 when every test passes, 1 when any fails or errors, 2 on bad input."""
    config = {"outputs": outputs, "db": db, "batch_rows": batch_rows}
    run = api.evaluate(suite, outputs, db=db, batch_rows=batch_rows, progress=progress,
                       config=config)
    summary = run.summary()
    totals = summary.select("cases", "pass", "fail", "error").sum().row(0)
    click.echo(f"run {run.run_id}: {totals[0]} cases, {totals[1]} passed, {totals[2]} failed, "
               f"{totals[3]} errors ({100 * totals[1] / max(totals[0], 1):.1f}% pass)")
    show("SELECT * FROM summary", summary=summary)
    _print_metrics(run)
    click.echo(f"results: {db} (checkllm-batch metrics --db {db} --run {run.run_id})")
    sys.exit(0 if totals[1] == totals[0] else EXIT_FAILED)


@main.command()
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help="Run id (default: the last run).")
@user_errors
def metrics(db: str, run_id: str | None) -> None:
    """Print a run's pass rates, named metrics and derived metrics."""
    run = api.get_run(db, run_id)
    click.echo(f"run {run.run_id}")
    show("SELECT * FROM summary", summary=run.summary())
    _print_metrics(run)


@main.command()
@click.argument("query", required=False)
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--list", "list_", is_flag=True,
              help="List the tables, views and table macros, one line each.")
@user_errors
def sql(query: str | None, db: str, list_: bool) -> None:
    """Run a SQL QUERY on the results database and print the table.

    Views such as pass_rates, failures and metric_summary, and macros such as
    classification_report('label'), answer the common questions: see --list."""
    con = api.open_results(db)
    if list_ or query is None:
        from .store.views import catalog

        for name, kind, description in catalog(con):
            click.echo(f"{name:<24} {kind:<6} {description}")
        return
    try:  # errors can come when the query binds or while its rows are produced
        relation = con.sql(query)
        if relation is not None:
            relation.show(max_rows=100, max_width=200)
    except duckdb.Error as e:
        raise UserError(f"query failed: {str(e).splitlines()[0]}") from None


def _print_metrics(run: api.Run) -> None:
    named, derived = run.named_metrics, run.derived_metrics
    if named.height:
        click.echo("named metrics (sum / weight = mean):")
        show("SELECT provider, prompt, metric, sum, weight, count, "
             "round(sum / nullif(weight, 0), 4) AS mean FROM named ORDER BY ALL", named=named)
    if derived.height:
        click.echo("derived metrics:")
        show("SELECT provider, prompt, name, round(value, 4) AS value FROM derived "
             "ORDER BY provider NULLS FIRST, prompt", derived=derived)


for _command in (compare_command, export_command, report_command):
    main.add_command(_command)
