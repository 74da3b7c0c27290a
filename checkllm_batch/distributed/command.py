"""`eval --engine ray`: what the command adds to the engine (options it cannot take, the
shards-only run of --results without --db)."""

from __future__ import annotations

import sys

import click
import polars as pl

from ..cli_eval import warn_without_judge
from ..cli_support import EXIT_FAILED, UserError
from .engine import evaluate_ray
from .shards import shard_path


def eval_on_ray(spec, outputs: str | None, *, db: str | None, results: str | None,
                batch_rows: int, resume: str | None, judge_config, refused: dict):
    """The run loaded into `db`; or, with no database, the shards written to `results`,
    their totals printed (exit 0 when every test passes, 1 otherwise)."""
    given = [name for name, value in refused.items() if value]
    if given:
        raise UserError(f"{given[0]} is not supported with --engine ray yet")
    if outputs is None:
        raise UserError("--engine ray scores Parquet files: give them with --outputs "
                        "(e.g. --outputs 'outputs/*.parquet')")
    if db is None and results is None:
        raise UserError("--engine ray needs --db, --results DIR, or both")
    warn_without_judge(spec, judge_config)
    run = evaluate_ray(spec, outputs, db=db, results=results, batch_rows=batch_rows,
                       config={"outputs": outputs, "db": db, "batch_rows": batch_rows},
                       resume=resume, judge_config=judge_config)
    if db is not None:
        return run
    totals = shard_totals(results)
    click.echo(f"{totals['cases']} cases, {totals['pass']} passed, {totals['fail']} failed, "
               f"{totals['error']} errors: shards in {results} (load them into a database: "
               f"the same command with --db)")
    sys.exit(0 if totals["pass"] == totals["cases"] else EXIT_FAILED)


def shard_totals(results: str) -> dict[str, int]:
    status = pl.scan_parquet(shard_path(results, "test_results", 0).replace(
        "part-000000", "part-*")).select("status").collect()["status"]
    return {"cases": status.len(),
            **{s: int((status == s).sum()) for s in ("pass", "fail", "error")}}
