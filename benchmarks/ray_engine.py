"""--engine ray vs the single-machine engine on one machine: wall time, Ray's start-up,
peak memory of driver and workers, and how the time goes with workers = 1, 2. Also Ray
Data's read_parquet().map_batches() running the same per-batch function (case ids by
arrival: timed only, not checked), the alternative docs/ray.md explains we did not take.

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python benchmarks/ray_engine.py --rows 100000

Each configuration runs in a subprocess of its own (a fresh Ray cluster, clean peaks)."""

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
CONFIGS = ["local", "ray-1", "ray-2", "ray-data-2"]


def make_dataset(root: Path, rows: int) -> None:
    """Four files of ~rows/4, row groups of 10,000; all-distinct outputs sorted by test."""
    i, test = pl.col("i"), pl.col("test")
    text = pl.format("row {} été {} lorem ipsum dolor sit amet consectetur", test, i)
    frame = (pl.DataFrame({"i": range(rows)}).with_columns(test=i * TESTS // rows)
             .with_columns(test_id=pl.format("t{}", test), output=text,
                           expected=pl.when(i % 3 == 0).then(text).otherwise(pl.lit("x")))
             .drop("i", "test"))
    step = -(-rows // 4)
    for n in range(4):
        pq.write_table(frame.slice(n * step, step).to_arrow(), root / f"part-{n}.parquet",
                       row_group_size=10_000)
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
        whole = str(root / "whole" / "whole.parquet")
        t = time.perf_counter()
        run = cb.evaluate(suite, whole)
        return {"eval_s": time.perf_counter() - t, "cases": run.test_results.height,
                "driver_mib": peak_mib()}
    import ray

    workers = int(config.rsplit("-", 1)[1])
    t = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - t
    peaks = WorkerPeaks()
    times = []
    for _ in range(2):  # the second run finds the workers started (imports done)
        t = time.perf_counter()
        if config.startswith("ray-data"):
            cases = ray_data(ray, suite, files)
        else:
            from checkllm_batch.distributed import evaluate_ray

            cases = evaluate_ray(suite, files).test_results.height
        times.append(time.perf_counter() - t)
    out = {"startup_s": startup, "eval_s": times[0], "warm_eval_s": times[1], "cases": cases,
           "driver_mib": peak_mib(), **peaks.stop()}
    ray.shutdown()
    return out


def ray_data(ray, suite, files: str) -> int:
    """The same evaluation through Ray Data (ids by arrival: each batch numbered from 0)."""
    import pyarrow as pa

    from checkllm_batch.distributed import evaluate_frames
    from checkllm_batch.distributed.engine import TASK_ENV

    def evaluate(batch: pa.Table) -> pa.Table:
        os.environ.update(TASK_ENV)
        return evaluate_frames(suite, batch.combine_chunks().to_batches()[0], 0
                               )["test_results"].to_arrow()

    paths = sorted(str(p) for p in Path(files).parent.glob("part-*.parquet"))
    data = ray.data.read_parquet(paths).map_batches(evaluate, batch_format="pyarrow",
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
        make_dataset(root, args.rows)
        whole = pl.concat([pl.read_parquet(p) for p in sorted(root.glob("part-*.parquet"))])
        (root / "whole").mkdir()
        whole.write_parquet(root / "whole" / "whole.parquet")
        print(f"{args.rows:,} rows, load average {os.getloadavg()[0]:.1f}")
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
