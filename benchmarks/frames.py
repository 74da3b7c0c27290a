"""Outputs as dataframes against the same rows from Parquet (issue 34).

    .venv/bin/python benchmarks/frames.py --rows 1000000 --pairs 3

N synthetic cases (synth.py: 300-800 character outputs, per-row vars) against the core
benchmark's 10-assertion suite (synth.SUITE), each measurement in a fresh process, in
rounds that run every mode once (paired: a round's modes see the same machine load):

- parquet:       cb.evaluate(suite, "outputs.parquet")         the reference
- parquet-copy:  the same, copy_outputs=True                    its text copied into DuckDB, as a frame's is
- pandas:        cb.evaluate(suite, pandas_frame)               its text stored in DuckDB (the default)
- pandas-parts:  the same, text_parts=True                      its text as Parquet parts beside the database
- score-pandas:  cb.score(pandas_frame, suite)                  the frame back, verdicts added
- lazy:          cb.evaluate(suite, pl.scan_parquet(...))       a lazy source, streamed

Each run writes a new DuckDB file. Printed as JSON: per mode and round, wall and CPU
seconds and peak RSS; the RSS before the run starts (a pandas frame is held in memory,
the file is not); and each mode's wall and CPU time over its round's Parquet run.
Counts are checked before any time is printed (every case has a test result).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(tempfile.gettempdir()) / "checkllm_frames_bench"
MODES = ("parquet", "parquet-copy", "pandas", "pandas-parts", "score-pandas", "lazy")


def rss_mib() -> float:
    """The process's resident memory now (not its peak)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def worker(mode: str, data: Path, suite: Path, db: Path) -> dict:
    """One measurement, in this process: the source prepared, then timed."""
    import pandas as pd
    import polars as pl

    import checkllm_batch as cb

    source = {"parquet": lambda: str(data), "parquet-copy": lambda: str(data),
              "lazy": lambda: pl.scan_parquet(data),
              "pandas": lambda: pd.read_parquet(data),
              "pandas-parts": lambda: pd.read_parquet(data),
              "score-pandas": lambda: pd.read_parquet(data)}[mode]()
    before = rss_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    if mode == "score-pandas":
        scored = cb.score(source, suite, db=db)
        cases = len(scored)
        con = scored.attrs["run"].con
    else:
        con = cb.evaluate(suite, source, db=db, copy_outputs=mode == "parquet-copy",
                          text_parts=mode == "pandas-parts").con
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    results = con.execute("SELECT count(*) FROM test_results").fetchall()[0][0]
    if mode != "score-pandas":
        cases = results
    return {"mode": mode, "cases": cases, "test_results": results, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "rss_before_mib": round(before),
            "peak_rss_mib": round(peak_mib())}


def peak_mib() -> float:
    """This process's peak resident memory (VmHWM): not getrusage's ru_maxrss, which a
    process started by another keeps from its parent's peak (fork, then exec)."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines()
                if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def prepare(rows: int) -> tuple[Path, Path]:
    sys.path.insert(0, str(Path(__file__).parent))
    import synth

    OUT.mkdir(exist_ok=True)
    data, suite = OUT / f"outputs_{rows}.parquet", OUT / "suite.yaml"
    if not data.exists():
        synth.outputs(rows).write_parquet(data)
    suite.write_text(synth.SUITE)
    return data, suite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=3, help="rounds of every mode")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    data, suite = prepare(args.rows)
    if args.worker:
        db = OUT / f"{args.worker}.duckdb"
        db.unlink(missing_ok=True)
        shutil.rmtree(f"{db}.cases", ignore_errors=True)  # a frame's parts (store/cases.py)
        print(json.dumps(worker(args.worker, data, suite, db)))
        return
    rounds = []
    for _ in range(args.pairs):
        runs = {}
        for mode in args.modes.split(","):
            done = subprocess.run([sys.executable, __file__, "--rows", str(args.rows),
                                   "--worker", mode], capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
            runs[mode] = json.loads(done.stdout.splitlines()[-1])
            assert runs[mode]["cases"] == runs[mode]["test_results"] == args.rows, runs[mode]
        base = runs.get("parquet")
        for run in runs.values():
            for what in ("wall", "cpu"):
                run[f"{what}_vs_parquet"] = round(run[f"{what}_s"] / base[f"{what}_s"], 3) \
                    if base else None
        rounds.append(runs)
    print(json.dumps({"rows": args.rows, "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
