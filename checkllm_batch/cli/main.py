"""The `checkllm-batch` command: eval, metrics, sql, compare, export, report. User errors
print one line, exit 2."""

from __future__ import annotations

import sys
import warnings

import click
import duckdb
import polars as pl

from .. import api
from ..analysis.database import warn_changed_sources
from ..analysis.wording import rate_text
from ..run.sample import SEED as SAMPLE_SEED
from .analysis import (
    agreement_command,
    compare_command,
    export_command,
    power_command,
    report_command,
)
from .eval import (
    check_output_flag,
    eval_on_ray,
    filtered,
    jurors_given,
    suite_path,
    warn_without_judge,
    write_output,
)
from .labels import labels_group
from .support import EXIT_FAILED, FORMATS, UserError, emit, show, show_relation, user_errors


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="checkllm-batch")
def main() -> None:
    """Score datasets of LLM outputs against promptfoo-style suites, into DuckDB."""
    warnings.formatwarning = _one_line  # a warning is said to the user, not to a developer


def _one_line(message, category, filename, lineno, line=None) -> str:
    return f"Warning: {message}\n"


@main.command("eval")
@click.argument("suite", type=click.Path(dir_okay=False), required=False)
@click.option("--config", "-c", "config_path", type=click.Path(dir_okay=False),
              help="The suite (promptfoo's -c); the same as the SUITE argument.")
@click.option("--outputs", help="Outputs to score: .jsonl, .csv, .parquet, .arrow, "
              "duckdb:file.duckdb:table, or promptfoo's results file (promptfoo eval -o "
              "results.json / .jsonl). Optional when tests carry providerOutput.")
@click.option("--output", "-o", "output_path", type=click.Path(dir_okay=False),
              help="Also write this run's results to FILE, as promptfoo's -o: .json, .jsonl, "
              ".csv, .parquet, or .html (the report).")
@click.option("--db", default="results.duckdb", show_default=True, help="Results database.")
@click.option("--batch-rows", default=api.BATCH_ROWS, show_default=True,
              help="Rows per batch at most (wide rows make shorter batches, of about 64 "
                   "MiB): peak memory follows the batch, not the dataset size.")
@click.option("--filter-pattern", metavar="REGEX",
              help="Only cases whose test description matches REGEX.")
@click.option("--filter-first-n", type=click.IntRange(min=0), metavar="N",
              help="Only the first N cases.")
@click.option("--filter-sample", type=click.IntRange(min=0), metavar="N",
              help="Only N cases drawn at random (after the other filters).")
@click.option("--progress/--no-progress", default=True, help="Progress bar (only on a terminal).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="How to print the summary: tables, or JSON / CSV for scripts.")
@click.option("--judge-model", "judge_model", multiple=True, help="Chat model grading "
              "model-graded assertions (overrides the suite's judge: model); repeated, a jury.")
@click.option("--judge-models", metavar="A,B,C", help="A jury: chat models, comma-separated, "
              "each grading every request (overrides the suite's judge: models).")
@click.option("--judge-vote", metavar="VOTE", help="How a jury's verdicts make one: majority "
              "(default), all, any, or mean (mean score against the threshold).")
@click.option("--judge-repeat", type=click.IntRange(min=1), metavar="N",
              help="Grade each request N times (at the judge's temperature): majority verdict, "
                   "mean score.")
@click.option("--judge-base-url", help="OpenAI-compatible endpoint of the judge.")
@click.option("--judge-key-env", help="Environment variable holding the judge's API key "
              "(default OPENAI_API_KEY).")
@click.option("--judge-mode", type=click.Choice(["online", "batch"]),
              help="online calls, or the OpenAI Batch API (half price, up to 24 h).")
@click.option("--judge-concurrency", "--max-concurrency", "-j", "judge_concurrency", type=int,
              help="Judge calls in flight at most.")
@click.option("--judge-rpm", type=float, help="Judge requests per minute at most.")
@click.option("--judge-tpm", type=float, help="Judge tokens per minute at most.")
@click.option("--judge-structured", is_flag=True, default=None, help="Ask the judge for "
              "structured output (response_format json_schema, the shape each graded type "
              "reads): for local and small models that do not follow 'reply with JSON'.")
@click.option("--max-cost", type=float, help="Judge budget in USD: past it, no call is sent "
              "and the remaining graded assertions end as errors.")
@click.option("--no-cache", is_flag=True, help="Send every judge call, none answered from "
              "judge_calls (earlier runs, or with --resume this one).")
@click.option("--dry-run", is_flag=True, help="Print the judge calls planned, estimated tokens "
              "and cost; send nothing and write no run.")
@click.option("--judge-sample", metavar="N|P%", help="Judge a seeded sample of the cases: a "
              "share (2%, 0.02) or about N cases, stratified by provider x prompt x test; "
              "deterministic checks still run on every row, the others' graded assertions "
              "end skipped. Rates over judged cases carry finite-population intervals.")
@click.option("--judge-sample-seed", type=int, default=SAMPLE_SEED, show_default=True,
              help="The judge sample's seed (another seed, another sample).")
@click.option("--resume", "resume", metavar="RUN", help="Re-run an interrupted run in place "
              "(its id, a unique prefix, or 'last'): judge calls already answered are not "
              "sent again.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="local: this process; ray: Parquet fragments as tasks "
              "on a Ray cluster (RAY_ADDRESS, else a local one; docs/ray.md).")
@click.option("--results", "results", metavar="DIR", help="With --engine ray: keep the "
              "Parquet shards in DIR (without an explicit --db: only the shards).")
@click.option("--copy-outputs", is_flag=True, help="Copy a Parquet file's outputs and vars "
              "into the database (by default its `cases` view reads them from the file; "
              "--filter'ed rows' from Parquet parts beside the database).")
@user_errors
def eval_command(suite: str | None, config_path: str | None, outputs: str | None,
                 output_path: str | None, db: str, batch_rows: int,
                 filter_pattern: str | None, filter_first_n: int | None,
                 filter_sample: int | None, progress: bool, fmt: str,
                 judge_model: tuple[str, ...], judge_models: str | None,
                 judge_vote: str | None, judge_repeat: int | None, judge_base_url: str | None,
                 judge_key_env: str | None, judge_mode: str | None,
                 judge_concurrency: int | None, judge_rpm: float | None,
                 judge_tpm: float | None, judge_structured: bool | None,
                 max_cost: float | None, no_cache: bool, dry_run: bool,
                 judge_sample: str | None, judge_sample_seed: int,
                 resume: str | None, engine: str, results: str | None,
                 copy_outputs: bool) -> None:
    """Evaluate OUTPUTS against SUITE (or -c SUITE) and append a run to the results database.

    Exit code: 0 when every test passes, 1 when any fails or errors, 2 on bad input or
    settings, 3 on an unexpected error (its traceback in the log file named), 130 on Ctrl-C."""
    from ..assertions.reading import load_suite
    from ..load.filters import Filters
    from ..suites.judge import JudgeConfig

    spec = load_suite(suite_path(suite, config_path))
    check_output_flag(spec, outputs, output_path)
    api.check_apart(outputs, db)
    model, models = jurors_given(judge_model, judge_models)
    judge_config = JudgeConfig.from_sources(
        spec.judge, model=model, models=models, vote=judge_vote, repeat=judge_repeat,
        base_url=judge_base_url, api_key_env=judge_key_env,
        mode=judge_mode, concurrency=judge_concurrency, rpm=judge_rpm, tpm=judge_tpm,
        max_cost=max_cost, cache=False if no_cache else None, structured=judge_structured)
    filters = Filters(filter_pattern, filter_first_n, filter_sample)
    if engine == "ray" or results:
        run = eval_on_ray(spec, outputs, db=_db_given(db, results), results=results,
                          batch_rows=batch_rows, resume=resume, judge_config=judge_config,
                          refused={
                              "--results without --engine ray": engine != "ray",
                              "--filter-*": bool(filters), "--dry-run": dry_run,
                              "--judge-sample": judge_sample is not None})
        return _report(run, output_path, db, fmt)
    source = filtered(spec, outputs, filters, batch_rows)
    if dry_run:
        _print_plan(api.dry_run(spec, source, db=db, batch_rows=batch_rows,
                                judge_config=judge_config), judge_config)
        if judge_sample is not None:
            source = filtered(spec, outputs, filters, batch_rows)  # a reader is read once
            _print_plan(api.dry_run(spec, source, db=db, batch_rows=batch_rows,
                                    judge_config=judge_config, judge_sample=judge_sample,
                                    judge_sample_seed=judge_sample_seed), judge_config,
                        f"with --judge-sample {judge_sample}: ")
        return
    warn_without_judge(spec, judge_config)
    config = {"outputs": outputs, "db": db, "batch_rows": batch_rows,
              "filters": filters.record() or None}
    run = api.evaluate(spec, source, db=db, batch_rows=batch_rows, progress=progress,
                       config=config, judge_config=judge_config, resume=resume,
                       copy_outputs=copy_outputs, judge_sample=judge_sample,
                       judge_sample_seed=judge_sample_seed)
    _report(run, output_path, db, fmt)


def _report(run: api.Run, output_path: str | None, db: str, fmt: str) -> None:
    if output_path:
        write_output(run, output_path)
    totals = _print_run(run, db, fmt)
    judged = totals["cases"] - totals.get("skipped", 0) - totals.get("abstain", 0)
    # a case outside the judge sample still fails the run when a check that ran on it failed
    passed = totals["pass"] == judged and not (totals.get("skipped") and run.skipped_failures())
    sys.exit(0 if passed else EXIT_FAILED)


def _db_given(db: str, results: str | None) -> str | None:
    """--results without an explicit --db writes only the shards."""
    explicit = click.get_current_context().get_parameter_source("db")
    return db if results is None or explicit is not click.core.ParameterSource.DEFAULT else None


def _print_run(run: api.Run, db: str, fmt: str) -> dict:
    summary = run.summary()
    counts = [c for c in ("cases", "pass", "fail", "error", "skipped", "abstain")
              if c in summary.columns]
    totals = dict(zip(counts, summary.select(counts).sum().row(0)))
    if fmt != "table":
        emit({"run_id": run.run_id, **totals, "summary": summary,
              "named_metrics": run.named_metrics, "derived_metrics": run.derived_metrics},
             fmt, table=summary.with_columns(run_id=pl.lit(run.run_id)))
        return totals
    skipped = totals.get("skipped", 0)
    sample = (f", {skipped} not in the judge sample (their graded assertions skipped)"
              if skipped else "")
    if totals.get("abstain"):
        sample += (f", {totals['abstain']} abstained (no judge cascade stage sure enough: "
                   "left for a person)")
    verdicts = totals["pass"] + totals["fail"]
    rate = rate_text(totals["pass"] / (totals["cases"] - skipped - totals.get("abstain", 0))
                     if verdicts else None,
                     errors=totals["error"])
    click.echo(f"run {run.run_id}: {totals['cases']} cases, {totals['pass']} passed, "
               f"{totals['fail']} failed, {totals['error']} errors{sample} "
               f"({rate}{' pass' if verdicts else ''}"
               f"{' of those judged' if skipped and verdicts else ''})")
    show("SELECT * FROM summary", summary=summary)
    _print_metrics(run)
    _print_judge(run)
    _print_cascade_run(run)
    click.echo(f"results: {db} (checkllm-batch metrics --db {db} --run {run.run_id})")
    return totals


def _print_judge(run: api.Run) -> None:
    calls, errors, unparsed, retries, cost, unpriced, models = run.con.execute(
        "SELECT count(*), count(*) FILTER (status NOT IN ('ok', 'unparsed')), "
        "count(*) FILTER (status = 'unparsed'), sum(attempts - 1), sum(cost), "
        "count(*) FILTER (cost IS NULL AND prompt_tokens > 0), "
        "list(DISTINCT model ORDER BY model) FILTER (cost IS NULL AND prompt_tokens > 0) "
        "FROM judge_calls WHERE run_id = ?", [run.run_id]).fetchall()[0]
    if calls:
        click.echo(f"judge: {calls} calls sent ({errors} failed, {unparsed} replies "
                   f"unreadable, {retries or 0} retries), {_cost_text(cost, unpriced, models)}; "
                   "other answers came from judge_calls")
    refused = run.con.execute("SELECT any_value(error) FROM judge_calls WHERE run_id = ? AND "
                              "error LIKE 'the endpoint rejected structured output%'",
                              [run.run_id]).fetchall()[0][0]
    if refused:
        click.echo(f"judge: {refused}")


def _print_cascade_run(run: api.Run) -> None:
    """A judge cascade's line: who decided how much, the strong judge's calls against judging
    every case with it, and the promise."""
    rows = run.con.execute("SELECT stage, models, decided, share, calls, every_case_calls, "
                           "bound, agreement, risk, reference FROM cascade_summary WHERE "
                           "run_id = ?", [run.run_id]).fetchall() \
        if "cascade_summary" in _views(run) else []
    if not rows:
        return
    parts = [f"stage {stage} ({', '.join(models or [])}) {decided} ({share:.1%})"
             if stage is not None else f"abstained {decided} ({share:.1%})"
             for stage, models, decided, share, *_ in rows]
    last = [r for r in rows if r[0] is not None][-1]
    bounds = [r[6] for r in rows if r[6] is not None]
    click.echo(f"judge cascade: decided by {', '.join(parts)}; last stage {last[4]} calls "
               f"against {last[5] or 0:.0f} judging every case with it; certified: agreement "
               f">= {last[7]} with {last[9]} at risk {last[8]}"
               + (f" (lowest bound {min(bounds):.3f})" if bounds else ""))


def _views(run: api.Run) -> set[str]:
    return {r[0] for r in run.con.execute("SELECT view_name FROM duckdb_views()").fetchall()}


def _cost_text(cost: float | None, unpriced: int, models: list[str] | None) -> str:
    """A cost, or an honest "unknown" for calls of a model without a price (a local model):
    never a $0.0000 that reads as free."""
    if not unpriced:
        return f"${cost or 0:.4f}"
    known = f"${cost:.4f} + " if cost else ""
    return (f"{known}cost unknown for {unpriced} calls (no price for "
            f"{', '.join(models or [])}: judge: prices:)")


def _print_plan(stats, config, heading: str = "") -> None:
    if stats is None:
        click.echo("no judge configured: no judge call planned (set --judge-model or judge:)")
        return
    click.echo(f"{heading}judge {', '.join(config.jurors)} ({config.mode}): {stats.graded} "
               f"graded assertions, {stats.unique} unique requests, {stats.cached} already "
               "answered, "
               f"{stats.sent} to send ({stats.requested} before de-duplication)")
    if stats.known_unreadable:
        click.echo(f"{stats.known_unreadable} of those answered are replies found unreadable "
                   "before, at temperature 0: not asked again (the same request gets the same "
                   "reply; change the judge or its settings, or --no-cache, to ask)")
    if stats.stages:
        _print_cascade(stats.stages, config)
    elif len(config.jurors) > 1 or config.repeat > 1:  # each grading is its own request
        click.echo(f"jury: {len(config.jurors)} juror(s) x {config.repeat} repeat(s) = "
                   f"{len(config.jurors) * config.repeat} gradings of each graded assertion "
                   f"(vote: {config.vote}), all counted in the requests above")
    unpriced = [m for m in config.jurors if config.price(m) is None]
    cost = f"${stats.est_cost:.4f}" if not unpriced \
        else f"cost unknown (no price for {', '.join(unpriced)}: judge: prices:)"
    click.echo(f"estimated: {stats.est_tokens} tokens, {cost} "
               "(prompt ~4 chars/token + max_tokens per reply; multi-step types such as "
               "g-eval, context-faithfulness and answer-relevance add follow-up calls)")


def _print_cascade(stages: list[dict], config) -> None:
    """A cascade's dry run: the requests above are every case through every stage (a dry run
    learns no confidence); per stage, what the run is estimated to send."""
    click.echo(f"judge cascade: the requests above send every case through every stage; "
               f"estimated with {config.calibration} calibration cases through every stage "
               f"and escalation ({stages[0]['from']}):")
    for s in stages:
        click.echo(f"  stage {s['stage']} ({', '.join(s['models'])}): {s['calls']} requests, "
                   f"${s['cost']:.4f} (reached by {s['reach']:.0%} of the cases past "
                   f"calibration; every case: {s['every_case_calls']})")
    last = stages[-1]
    click.echo(f"  judging every case with the last stage alone: {last['every_case_calls']} "
               f"requests, ${last['every_case_cost']:.4f}")


@main.command()
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--run", "run_id", help="Run id, a unique prefix, 'last' or 'previous' "
              "(default: the last run).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@user_errors
def metrics(db: str, run_id: str | None, fmt: str) -> None:
    """Print a run's pass rates, named metrics and derived metrics."""
    run = api.get_run(db, run_id)
    partial = "" if run.status == "finished" else _partial(run)
    if fmt != "table":
        from ..analysis.database import Results

        if partial:  # beside the rows a script reads: a partial run is said, not implied
            click.echo(f"run {run.run_id}{partial}", err=True)
        results = Results(run.con)
        emit({"run_id": run.run_id, "status": run.status, "summary": run.summary(),
              "named_metrics": run.named_metrics, "derived_metrics": run.derived_metrics,
              "intervals": results.intervals(run.run_id)},
             fmt, table=results.metrics(run.run_id))
        return
    click.echo(f"run {run.run_id}" + (" (the last finished run)" if run_id is None else "")
               + partial)
    show("SELECT * FROM summary", summary=run.summary())
    _print_metrics(run)


@main.command()
@click.argument("query", required=False)
@click.option("--db", default="results.duckdb", show_default=True)
@click.option("--list", "list_", is_flag=True,
              help="List the tables, views and table macros, one line each.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="table (cut to --max-rows / --max-width), or every row as JSON / CSV.")
@click.option("--max-rows", default=100, show_default=True, type=click.IntRange(min=0),
              help="Rows shown in a table (0: all).")
@click.option("--max-width", default=200, show_default=True, type=click.IntRange(min=0),
              help="Characters per table line; columns past it are hidden (0: no limit).")
@user_errors
def sql(query: str | None, db: str, list_: bool, fmt: str, max_rows: int,
        max_width: int) -> None:
    """Run a SQL QUERY on the results database and print the table.

    Views such as pass_rates, failures and metric_summary, and macros such as
    classification_report('label'), answer the common questions: see --list."""
    con = api.open_results(db)
    warn_changed_sources(con)
    if list_ or query is None:
        from ..store.views import catalog

        for name, kind, description in catalog(con):
            click.echo(f"{name:<24} {kind:<6} {description}")
        return
    try:  # errors can come when the query binds or while its rows are produced
        relation = con.sql(query)
        if relation is None:
            return
        if fmt != "table":
            emit({}, fmt, table=relation.pl())
            return
        show_relation(relation, max_rows, max_width)
    except duckdb.Error as e:
        raise UserError(f"query failed: {str(e).splitlines()[0]}") from None


def _partial(run: api.Run) -> str:
    """What a run that did not finish holds: partial results to resume, or (stopped by bad
    input) none, and why."""
    [(rows, error)] = run.con.execute(
        "SELECT (SELECT count(*) FROM run_batches WHERE run_id = $run), error FROM runs "
        "WHERE run_id = $run", {"run": run.run_id}).fetchall()
    if rows == 0 and run.status == "failed":
        return f" (failed, no results: {error})"
    return (f" ({run.status}: partial results, no metrics; resume it with eval --resume "
            f"{run.run_id})")


def _print_metrics(run: api.Run) -> None:
    from ..analysis.intervals import run_intervals

    named, derived = run.named_metrics, run.derived_metrics
    if not (named.height or derived.height):
        return
    bounds = run_intervals(run.con, run.run_id)  # on demand: the run stored none
    joined = ("LEFT JOIN bounds b ON b.kind = '{kind}' AND b.metric = m.{name} AND "
              "b.provider IS NOT DISTINCT FROM m.provider AND b.prompt IS NOT DISTINCT FROM "
              "m.prompt")
    interval = "round(b.value_low, 4) AS low, round(b.value_high, 4) AS high"
    if named.height:
        click.echo("named metrics (sum / weight = mean; low, high: its 95 % bootstrap "
                   "interval):")
        show(f"SELECT m.provider, m.prompt, m.metric, sum, weight, count, "
             f"round(sum / nullif(weight, 0), 4) AS mean, {interval} FROM named m "
             f"{joined.format(kind='named', name='metric')} ORDER BY ALL",
             named=named, bounds=bounds)
    if derived.height:
        click.echo("derived metrics (low, high: 95 % bootstrap interval):")
        show(f"SELECT m.provider, m.prompt, m.name, round(m.value, 4) AS value, {interval} "
             f"FROM derived m {joined.format(kind='derived', name='name')} "
             "ORDER BY m.provider NULLS FIRST, m.prompt", derived=derived, bounds=bounds)


for _command in (agreement_command, compare_command, export_command, power_command,
                 report_command, labels_group):
    main.add_command(_command)
