"""--engine ray vs the single-machine engine on one machine: wall time, Ray's start-up,
peak memory of driver and workers, and how the time goes with workers = 1, 2; the Ray
engine given a Ray Dataset (read_parquet) instead of the files (`ray-dataset-2`). Also Ray
Data's read_parquet().map_batches() running the same per-batch function (case ids by
arrival: timed only, not checked), the alternative docs/ray.md explains we did not take.

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python benchmarks/ray_engine.py --rows 100000

The Parquet input is written 100,000 rows at a time and every run writes its results to a
DuckDB file, so the rows are never all in one process's memory, which makes 10,000,000
rows possible on a 24 GiB machine (the input compresses to about 0.1 GiB a copy at 10M;
the results database and the shards take more disk). Each configuration runs in a
subprocess of its own (a fresh Ray cluster, clean peaks)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import yaml

TESTS = 8
SUITE = {
    "defaultTest": {"assert": [
        {"type": "equals", "value": "{{expected}}", "metric": "exact"},
        {"type": "icontains", "value": "ÉTÉ"},
        {"type": "levenshtein", "value": "{{expected}}", "threshold": 5},
        {"type": "regex", "value": "^row \\d+ .* \\d+$", "weight": 2},
        {"type": "not-contains", "value": "{{banned}}"},
        {"type": "is-json"},
    ]},
    "tests": [{"description": f"t{i}", "vars": {"banned": f"b{i}"}} for i in range(TESTS)],
}
CONFIGS = ["local", "ray-1", "ray-2", "ray-dataset-2", "ray-data-2"]


FILES, ROW_GROUP, CHUNK = 4, 10_000, 100_000


def chunk(start: int, stop: int, rows: int) -> pl.DataFrame:
    """Rows start..stop of the dataset: all-distinct outputs sorted by test."""
    i, test = pl.col("i"), pl.col("test")
    text = pl.format("row {} été {} lorem ipsum dolor sit amet consectetur", test, i)
    return (pl.DataFrame({"i": pl.int_range(start, stop, eager=True)})
            .with_columns(test=i * TESTS // rows)
            .with_columns(test_id=pl.format("t{}", test), output=text,
                          expected=pl.when(i % 3 == 0).then(text).otherwise(pl.lit("x")))
            .drop("i", "test"))


def make_dataset(root: Path, rows: int) -> None:
    """FILES files of ~rows/FILES (row groups of ROW_GROUP) and the same rows in one file
    (whole/whole.parquet, for the single-machine engine), written CHUNK rows at a time:
    memory stays flat whatever `rows` is."""
    (root / "whole").mkdir()
    step = -(-rows // FILES)
    schema = chunk(0, 1, rows).to_arrow().schema
    with pq.ParquetWriter(root / "whole" / "whole.parquet", schema) as whole:
        for n in range(FILES):
            with pq.ParquetWriter(root / f"part-{n}.parquet", schema) as part:
                for start in range(n * step, min(rows, (n + 1) * step), CHUNK):
                    table = chunk(start, min(start + CHUNK, (n + 1) * step, rows),
                                  rows).to_arrow()
                    part.write_table(table, row_group_size=ROW_GROUP)
                    whole.write_table(table, row_group_size=ROW_GROUP)
    (root / "suite.yaml").write_text(yaml.safe_dump(SUITE, allow_unicode=True))


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class WorkerPeaks:
    """Samples the resident memory of Ray's worker processes (`ray::...` in /proc) every
    0.1 s in a thread: the peak of each, and of their sum."""

    def __init__(self) -> None:
        self.each: dict[int, float] = {}
        self.total = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE") / 2**20
        while not self._stop.wait(0.1):
            now = {}
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
                        now[int(pid)] = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
                except OSError:
                    continue
            for pid, mib in now.items():
                self.each[pid] = max(self.each.get(pid, 0.0), mib)
            self.total = max(self.total, sum(now.values()))

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {"worker_peak_mib": max(self.each.values(), default=0.0),
                "workers_sum_peak_mib": self.total}


def run_one(config: str, root: Path) -> dict:
    import checkllm_batch as cb

    suite = cb.load(root / "suite.yaml")
    files = str(root / "*.parquet")
    if config == "local":
        t = time.perf_counter()
        cases = counted(cb.evaluate(suite, str(root / "whole" / "whole.parquet"),
                                    db=fresh_db(root)))
        return {"eval_s": time.perf_counter() - t, "cases": cases, "driver_mib": peak_mib()}
    import ray

    workers = int(config.rsplit("-", 1)[1])
    t = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    startup = time.perf_counter() - t
    peaks = WorkerPeaks()
    times = []
    for _ in range(2):  # the second run finds the workers started (imports done)
        t = time.perf_counter()
        if config.startswith("ray-data-"):
            cases = ray_data(ray, suite, files)
        else:
            outputs = ray.data.read_parquet(parts(root)) if "dataset" in config else files
            cases = counted(cb.evaluate(suite, outputs, engine="ray", db=fresh_db(root)))
        times.append(time.perf_counter() - t)
    out = {"startup_s": startup, "eval_s": times[0], "warm_eval_s": times[1], "cases": cases,
           "driver_mib": peak_mib(), **peaks.stop()}
    ray.shutdown()
    return out


def parts(root: Path) -> list[str]:
    return sorted(str(p) for p in root.glob("part-*.parquet"))


def fresh_db(root: Path) -> Path:
    """A results database file (an in-memory one would hold every result row in the
    driver's memory), emptied before each run."""
    db = root / "results.duckdb"
    for path in (db, db.with_suffix(".duckdb.wal")):
        path.unlink(missing_ok=True)
    return db


def counted(run) -> int:
    """The run's cases, counted in DuckDB (not read into the driver)."""
    cases = run.con.execute("SELECT count(*) FROM test_results WHERE run_id = ?",
                            [run.run_id]).fetchone()[0]
    run.con.close()
    return cases


def ray_data(ray, suite, files: str) -> int:
    """The same evaluation through Ray Data (ids by arrival: each batch numbered from 0)."""
    import pyarrow as pa

    from checkllm_batch.distributed import evaluate_frames
    from checkllm_batch.distributed.driver import TASK_ENV

    def evaluate(batch: pa.Table) -> pa.Table:
        os.environ.update(TASK_ENV)
        return evaluate_frames(suite, batch.combine_chunks().to_batches()[0], 0
                               )["test_results"].to_arrow()

    data = ray.data.read_parquet(parts(Path(files).parent)).map_batches(evaluate, batch_format="pyarrow",
                                                    batch_size=10_000)
    return sum(b.num_rows for b in data.iter_batches(batch_format="pyarrow"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--one", choices=CONFIGS)
    parser.add_argument("--root")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, Path(args.root))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        make_dataset(root, args.rows)
        print(f"{args.rows:,} rows written in {time.perf_counter() - t:.1f} s (this process's "
              f"peak {peak_mib():.0f} MiB), load average {os.getloadavg()[0]:.1f}")
        for config in CONFIGS:
            t = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--one", config, "--root", tmp],
                                  capture_output=True, text=True)
            if done.returncode:
                print(config, "failed:", done.stderr[-2000:])
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["process_s"] = time.perf_counter() - t
            print(config, json.dumps({k: (round(v, 1) if isinstance(v, float) else
                                          [round(x) for x in v] if isinstance(v, list) else v)
                                      for k, v in result.items()}), flush=True)


if __name__ == "__main__":
    main()
