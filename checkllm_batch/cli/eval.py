"""eval's promptfoo habits, kept apart from the command: the suite from SUITE or -c, -o as
the results file (never over the outputs nor the suite's files), the --filter-* rows, the
no-judge warning; and what `--engine ray` adds to the engine (options it refuses, the
shards-only run)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import polars as pl
import pyarrow as pa

from .. import api
from ..errors import InputError
from .support import EXIT_FAILED, UserError


def suite_path(suite: str | None, config_path: str | None) -> str:
    if suite and config_path and suite != config_path:
        raise UserError(f"two suites given: {suite} and -c {config_path}; give one")
    path = suite or config_path
    if not path:
        raise UserError("no suite: checkllm-batch eval SUITE.yaml (or -c SUITE.yaml)")
    return path


def check_output_flag(spec, outputs: str | None, output_path: str | None) -> None:
    """-o is the results file to write, as in promptfoo; it used to name the outputs to
    read, so a run with -o and nothing to score says so instead of overwriting them. It never
    names an input: the outputs, the suite, or a file the suite reads."""
    if output_path is None:
        return
    from ..analysis.export import results_format

    target = str(Path(output_path).resolve())
    if outputs is not None and str(Path(outputs).resolve()) == target:
        raise UserError(f"-o {output_path} is the outputs file: -o writes the results, "
                        "give it another name")
    if target in spec.files:
        what = "the suite" if target == spec.files[0] else "a file the suite reads"
        raise UserError(f"-o {output_path} is {what}: -o writes the results, "
                        "give it another name")
    results_format(Path(output_path))
    if outputs is None and not (spec.inline_tests and all(t.output is not None
                                                           for t in spec.tests)):
        raise UserError(f"-o/--output names the results file to write, as in promptfoo; "
                        f"give the outputs to score with --outputs (e.g. --outputs "
                        f"{output_path})")
    if looks_like_outputs(output_path):
        raise UserError(f"-o {output_path} holds outputs to score (an output column, no "
                        "status): -o writes the results, as in promptfoo, and would replace "
                        "it; give it with --outputs, or another name to -o")


def looks_like_outputs(path: str) -> bool:
    """An existing dataset with an `output` column and no verdict: not our results file."""
    from ..load.outputs import FORMATS, first_names

    if not Path(path).is_file() or Path(path).suffix.lower() not in FORMATS:
        return False
    try:
        names = first_names(path)
    except (InputError, StopIteration):  # unreadable or empty: no dataset to lose
        return False
    return "output" in names and "status" not in names


def filtered(spec, outputs: str | None, filters, batch_rows: int):
    """The outputs, or only the rows the --filter-* options keep (as one table)."""
    if not filters:
        return outputs
    from ..load.filters import apply
    from ..load.frames import ReadBatches
    from ..load.outputs import read_batches

    batches = (read_batches(outputs, batch_rows) if outputs is not None
               else iter(api.inline_outputs(spec).to_batches(batch_rows)))
    table = apply(filters, spec, batches)
    if table.num_rows == 0:
        raise UserError(f"the filters {filters.record()} keep no case")
    # batches our readers made (with their output_kind): not a user's table to check again
    return ReadBatches(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()))


def jurors_given(judge_model: tuple[str, ...], judge_models: str | None
                 ) -> tuple[str | None, list[str] | None]:
    """(model, models) from the options: one --judge-model is a model; repeated, or
    --judge-models A,B,C, a jury (either replaces the suite's model or jury)."""
    if judge_model and judge_models is not None:
        raise UserError("give --judge-model (repeated for a jury) or --judge-models, not both")
    if judge_models is not None:
        return None, [m.strip() for m in judge_models.split(",") if m.strip()]
    if len(judge_model) > 1:
        return None, list(judge_model)
    return (judge_model[0] if judge_model else None), None


def warn_without_judge(spec, judge_config) -> None:
    """Model-graded assertions with no judge end as errors: say so before the run starts."""
    if judge_config.enabled:
        return
    from ..evaluate.plan import build_plan

    graded = [p.spec.type for p in build_plan(spec).assertions
              if p.atype.needs_judge(p.spec)]
    if graded:
        types = ", ".join(sorted(set(graded)))
        click.echo(f"warning: no judge configured: {len(graded)} model-graded assertion(s) "
                   f"({types}) will end as errors; set --judge-model (with --judge-base-url, "
                   "--judge-key-env) or a judge: block in the suite", err=True)


def write_output(run: api.Run, path: str) -> None:
    from ..analysis.database import Results
    from ..analysis.export import write_results

    written = write_results(Results(run.con), run.run_id, Path(path))
    click.echo(f"results written to {written}", err=True)


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
    run = api.evaluate(spec, outputs, db=db, results=results, batch_rows=batch_rows,
                       config={"outputs": outputs, "db": db, "batch_rows": batch_rows},
                       resume=resume, judge_config=judge_config, engine="ray")
    if isinstance(run, api.Run) or results is None:
        return run
    totals = shard_totals(results)
    click.echo(f"{totals['cases']} cases, {totals['pass']} passed, {totals['fail']} failed, "
               f"{totals['error']} errors: shards in {results} (load them into a database: "
               f"the same command with --db)")
    sys.exit(0 if totals["pass"] == totals["cases"] else EXIT_FAILED)


def shard_totals(results: str) -> dict[str, int]:
    from ..distributed.shards import shard_path

    status = pl.scan_parquet(shard_path(results, "test_results", 0).replace(
        "part-000000", "part-*")).select("status").collect()["status"]
    return {"cases": status.len(),
            **{s: int((status == s).sum()) for s in ("pass", "fail", "error")}}
