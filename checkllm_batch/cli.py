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
@click.option("--judge-model", help="Chat model grading model-graded assertions "
              "(overrides the suite's judge: model).")
@click.option("--judge-base-url", help="OpenAI-compatible endpoint of the judge.")
@click.option("--judge-key-env", help="Environment variable holding the judge's API key "
              "(default OPENAI_API_KEY).")
@click.option("--judge-mode", type=click.Choice(["online", "batch"]),
              help="online calls, or the OpenAI Batch API (half price, up to 24 h).")
@click.option("--judge-concurrency", type=int, help="Judge calls in flight at most.")
@click.option("--judge-rpm", type=float, help="Judge requests per minute at most.")
@click.option("--judge-tpm", type=float, help="Judge tokens per minute at most.")
@click.option("--max-cost", type=float, help="Judge budget in USD: past it, no call is sent "
              "and the remaining graded assertions end as errors.")
@click.option("--dry-run", is_flag=True, help="Print the judge calls planned, estimated tokens "
              "and cost; send nothing and write no run.")
@click.option("--resume", "resume", metavar="RUN", help="Re-run an interrupted run in place: "
              "judge calls already answered are not sent again.")
@user_errors
def eval_command(suite: str, outputs: str | None, db: str, batch_rows: int,
                 progress: bool, judge_model: str | None, judge_base_url: str | None,
                 judge_key_env: str | None, judge_mode: str | None,
                 judge_concurrency: int | None, judge_rpm: float | None,
                 judge_tpm: float | None, max_cost: float | None, dry_run: bool,
                 resume: str | None) -> None:
    """Evaluate OUTPUTS against SUITE and append a run to the results database.

    Exit code: 0 when every test passes, 1 when any fails or errors, 2 on bad input."""
    from .judge.config import JudgeConfig
    from .spec.parse import load_suite

    spec = load_suite(suite)
    judge_config = JudgeConfig.from_sources(
        spec.judge, model=judge_model, base_url=judge_base_url, api_key_env=judge_key_env,
        mode=judge_mode, concurrency=judge_concurrency, rpm=judge_rpm, tpm=judge_tpm,
        max_cost=max_cost)
    if dry_run:
        _print_plan(api.dry_run(spec, outputs, db=db, batch_rows=batch_rows,
                                judge_config=judge_config), judge_config)
        return
    config = {"outputs": outputs, "db": db, "batch_rows": batch_rows}
    run = api.evaluate(spec, outputs, db=db, batch_rows=batch_rows, progress=progress,
                       config=config, judge_config=judge_config, resume=resume)
    summary = run.summary()
    totals = summary.select("cases", "pass", "fail", "error").sum().row(0)
    click.echo(f"run {run.run_id}: {totals[0]} cases, {totals[1]} passed, {totals[2]} failed, "
               f"{totals[3]} errors ({100 * totals[1] / max(totals[0], 1):.1f}% pass)")
    show("SELECT * FROM summary", summary=summary)
    _print_metrics(run)
    _print_judge(run)
    click.echo(f"results: {db} (checkllm-batch metrics --db {db} --run {run.run_id})")
    sys.exit(0 if totals[1] == totals[0] else EXIT_FAILED)


def _print_judge(run: api.Run) -> None:
    calls, errors, retries, cost = run.con.execute(
        "SELECT count(*), count(*) FILTER (status <> 'ok'), sum(attempts - 1), sum(cost) "
        "FROM judge_calls WHERE run_id = ?", [run.run_id]).fetchall()[0]
    if calls:
        click.echo(f"judge: {calls} calls sent ({errors} failed, {retries or 0} retries), "
                   f"${cost or 0:.4f}; other answers came from judge_calls")


def _print_plan(stats, config) -> None:
    if stats is None:
        click.echo("no judge configured: no judge call planned (set --judge-model or judge:)")
        return
    click.echo(f"judge {config.model} ({config.mode}): {stats.graded} graded assertions, "
               f"{stats.unique} unique requests, {stats.cached} already answered, "
               f"{stats.sent} to send ({stats.requested} before de-duplication)")
    click.echo(f"estimated: {stats.est_tokens} tokens, ${stats.est_cost:.4f} "
               "(prompt ~4 chars/token + max_tokens per reply; multi-step types such as "
               "g-eval, context-faithfulness and answer-relevance add follow-up calls)")


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
