"""What a cluster task does with one unit of work (a fragment, or a Dataset's blocks):
read its rows, evaluate them batch by batch, write one Parquet shard per result table. Shards are written under a
temporary name and renamed, so a shard that exists is whole: a retried task rewrites the
same rows, and a stopped run resumes from the shards it has."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow.parquet as pq

from ..load.columns import checked
from ..run.batches import TABLES, BatchEvaluator
from ..suites.model import Suite
from .fragments import filesystem
from .judging import RecordingRunner


def shard_path(results: str, table: str, index: int) -> str:
    return f"{results.rstrip('/')}/{table}/part-{index:06d}.parquet"


def done(results: str, index: int) -> bool:
    """Every table's shard of fragment `index` is written."""
    fs, _ = filesystem(results)
    paths = [filesystem(shard_path(results, t, index))[1] for t in TABLES]
    return all(info.is_file for info in fs.get_file_info(paths))


def run_unit(suite: Suite, unit: Any, results: str, batch_rows: int, judge_config=None,
             known: dict | None = None, *data: Any) -> dict:
    """Evaluate one unit (a Fragment, with the dataset's path as `data`; or a Block, with
    its Ray blocks) into its shards: the counts of its test statuses. With judge requests
    not in `known` (replies by hash), nothing is written: {"missing": requests}."""
    runner = RecordingRunner(known or {}) if judge_config and judge_config.enabled else None
    evaluator = BatchEvaluator.of(suite, unit.name, judge_config, runner)
    parts: dict[str, list[pl.DataFrame]] = {t: [] for t in TABLES}
    first = unit.first_case_id
    for batch in unit.batches(data, batch_rows):
        for table, frame in evaluator.frames(checked(batch, unit.name), first).items():
            parts[table].append(frame)
        first += batch.num_rows
    if runner is not None and runner.missing:
        return {"unit": unit.index, "missing": list(runner.missing.values())}
    frames = {t: pl.concat(p) for t, p in parts.items()}
    for table, frame in frames.items():
        _write(frame, shard_path(results, table, unit.index))
    tests = frames["test_results"]
    return {"unit": unit.index, "rows": tests.height,
            **{s: int((tests["status"] == s).sum()) for s in ("pass", "fail", "error")}}


def _write(frame: pl.DataFrame, uri: str) -> None:
    fs, path = filesystem(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    partial = path + ".partial"
    pq.write_table(frame.to_arrow(), partial, filesystem=fs)
    fs.move(partial, path)
