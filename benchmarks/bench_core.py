"""Core benchmark: N synthetic cases × 10 assertions, Parquet in, DuckDB results out.

The suite reads its values from each row's vars (`equals`, `contains`, `levenshtein` and
`similarity` on `{{expected}}` / `{{reference}}`); the same suite with literal values is
timed beside it.

Runs `checkllm-batch eval` on the data (a subprocess, so its peak RSS is measured alone), and
in the same run a plain per-row Python loop doing the same ten checks with the libraries a
user would reach for (re, json, jsonschema, rapidfuzz). Prints rows/s for both, the ratio,
and peak memory. `--memory-check` also runs a quarter of the rows with the same batch size,
to show that peak memory follows the batch size, not the number of rows.

    python benchmarks/bench_core.py --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import jsonschema
import polars as pl
from rapidfuzz.distance import Levenshtein

sys.path.insert(0, str(Path(__file__).parent))
import synth  # noqa: E402

OUT = Path(__file__).parent / "out"
SCHEMA = {"type": "object", "required": ["answer", "confidence"],
          "properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1}}}


def run_cli(suite: Path, data: Path, db: Path, batch_rows: int) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one `checkllm-batch eval`."""
    db.unlink(missing_ok=True)
    cli = Path(sys.executable).parent / "checkllm-batch"
    started = time.perf_counter()
    proc = subprocess.Popen([str(cli), "eval", str(suite), "--outputs", str(data), "--db",
                             str(db), "--batch-rows", str(batch_rows), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"checkllm-batch failed:\n{proc.stderr.read().decode()}")
    return seconds, usage.ru_maxrss / 1024


def hand_written(data: Path, rows: int, db: Path) -> tuple[float, float]:
    """(seconds for the checks alone, seconds end to end) of the script a user writes by
    hand: read the Parquet rows, loop, write one result row per case × check to DuckDB."""
    started = time.perf_counter()
    records = pl.read_parquet(data, n_rows=rows).to_dicts()
    checks_started = time.perf_counter()
    results = per_row_loop(records)
    checks = time.perf_counter() - checks_started
    long = [(case, index, passed) for case, verdicts in enumerate(results)
            for index, passed in enumerate(verdicts)]
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    frame = pl.DataFrame(long, schema=["case_id", "assertion_index", "pass"], orient="row")  # noqa: F841  (read by DuckDB by name)
    con.execute("CREATE TABLE results AS SELECT * FROM frame")
    con.close()
    return checks, time.perf_counter() - started


def per_row_loop(rows: list[dict]) -> list[tuple]:
    """One output at a time, the same ten checks."""
    validator = jsonschema.Draft7Validator(SCHEMA)
    word = re.compile(r"\b(energy|light)\b")
    objects = re.compile(r"\{.*\}", re.S)
    results = []
    for r in rows:
        out, expected, reference = r["output"], r["expected"], r["reference"]
        lowered = out.lower()
        try:
            json.loads(out)
            is_json = True
        except ValueError:
            is_json = False
        contains_json = False
        m = objects.search(out)
        if m:
            try:
                contains_json = validator.is_valid(json.loads(m.group()))
            except ValueError:
                pass
        results.append((
            expected in out,
            any(w in lowered for w in ("photosynthesis", "paris", "oxygen")),
            bool(word.search(out)),
            "As an AI language model" not in out,
            out.startswith("Answer:"),
            Levenshtein.distance(out, reference) <= 5,
            is_json,
            contains_json,
            out == reference,
            Levenshtein.normalized_similarity(out, reference) >= 0.8,
        ))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--loop-rows", type=int, default=50_000,
                    help="rows timed for the per-row loop (its rate is per row)")
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--memory-check", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    suite, literal_suite = OUT / "suite.yaml", OUT / "suite_literal.yaml"
    suite.write_text(synth.SUITE)
    literal_suite.write_text(synth.LITERAL_SUITE)
    data = OUT / f"outputs_{args.rows}.parquet"
    if not data.exists():
        synth.outputs(args.rows).write_parquet(data)

    seconds, peak = run_cli(suite, data, OUT / "results.duckdb", args.batch_rows)
    ours = args.rows / seconds
    literal_seconds, _ = run_cli(literal_suite, data, OUT / "results.duckdb", args.batch_rows)

    loop_rows = min(args.loop_rows, args.rows)
    checks, end_to_end = hand_written(data, loop_rows, OUT / "loop.duckdb")
    loop, loop_checks = loop_rows / end_to_end, loop_rows / checks

    report = {"rows": args.rows, "assertions": 10, "batch_rows": args.batch_rows,
              "seconds": round(seconds, 2), "rows_per_s": round(ours),
              "literal_suite_seconds": round(literal_seconds, 2),
              "per_row_over_literal_time": round(seconds / literal_seconds, 2),
              "loop_rows_per_s": round(loop), "speedup": round(ours / loop, 2),
              "loop_checks_only_rows_per_s": round(loop_checks),
              "speedup_vs_checks_only": round(ours / loop_checks, 2),
              "peak_rss_mib": round(peak), "load_avg_1m": round(os.getloadavg()[0], 2)}
    if args.memory_check:
        quarter = OUT / f"outputs_{args.rows // 4}.parquet"
        if not quarter.exists():
            synth.outputs(args.rows // 4).write_parquet(quarter)
        _, small_peak = run_cli(suite, quarter, OUT / "results_quarter.duckdb", args.batch_rows)
        report["peak_rss_mib_quarter_rows"] = round(small_peak)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
