"""What a cluster task does with one fragment: read its row groups with pyarrow, evaluate
them batch by batch, write one Parquet shard per result table. Shards are written under a
temporary name and renamed, so a shard that exists is whole: a retried task rewrites the
same rows, and a stopped run resumes from the shards it has."""

from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq

from ..load.outputs import checked
from ..spec.model import Suite
from .batch import TABLES, BatchEvaluator
from .fragments import Fragment, dataset_fs, filesystem
from .judging import RecordingRunner


def shard_path(results: str, table: str, index: int) -> str:
    return f"{results.rstrip('/')}/{table}/part-{index:06d}.parquet"


def done(results: str, index: int) -> bool:
    """Every table's shard of fragment `index` is written."""
    fs, _ = filesystem(results)
    paths = [filesystem(shard_path(results, t, index))[1] for t in TABLES]
    return all(info.is_file for info in fs.get_file_info(paths))


def run_fragment(suite: Suite, outputs: str, fragment: Fragment, results: str,
                 batch_rows: int, judge_config=None, known: dict | None = None) -> dict:
    """Evaluate one fragment into its shards: the counts of its test statuses. With judge
    requests not in `known` (replies by hash), nothing is written: {"missing": requests}."""
    fs = dataset_fs(outputs)
    runner = RecordingRunner(known or {}) if judge_config and judge_config.enabled else None
    evaluator = BatchEvaluator(suite, fragment.path, judge_config, runner)
    parts: dict[str, list[pl.DataFrame]] = {t: [] for t in TABLES}
    first = fragment.first_case_id
    with fs.open_input_file(fragment.path) as f:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows,
                                                     row_groups=list(fragment.row_groups)):
            for table, frame in evaluator.frames(checked(batch, fragment.path), first).items():
                parts[table].append(frame)
            first += batch.num_rows
    if runner is not None and runner.missing:
        return {"fragment": fragment.index, "missing": list(runner.missing.values())}
    frames = {t: pl.concat(p) for t, p in parts.items()}
    for table, frame in frames.items():
        _write(frame, shard_path(results, table, fragment.index))
    tests = frames["test_results"]
    return {"fragment": fragment.index, "rows": tests.height,
            **{s: int((tests["status"] == s).sum()) for s in ("pass", "fail", "error")}}


def _write(frame: pl.DataFrame, uri: str) -> None:
    fs, path = filesystem(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    partial = path + ".partial"
    pq.write_table(frame.to_arrow(), partial, filesystem=fs)
    fs.move(partial, path)
