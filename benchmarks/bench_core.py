"""Core benchmark: N synthetic cases x 10 assertions, Parquet in, DuckDB results out.

    .venv/bin/python benchmarks/bench_core.py --rows 100000

The suite reads its values from each row's vars (`contains` on `{{expected}}`; `levenshtein`,
`equals` and `similarity` on `{{reference}}`, 1-40 edits from the output in most rows).
`--values literal` runs the same suite with those four values as literals (the first row's
expected and reference, the same on every row), the per-row loop likewise.

1. **end to end**: `checkllm-batch eval` on the Parquet file (a subprocess started by a
   small launcher, so its wall time, CPU time and peak RSS are its own); CPU utilisation =
   its CPU time / (wall time x cores). The same on the first 100 rows shows the fixed cost (start-up, the run's record, metrics).
2. **the per-row loop**, in the same run: plain Python reading the same file, doing the same
   ten checks one row at a time (re, json, jsonschema, rapidfuzz), writing one result line per
   case; then the ratio of the two times.
3. **stages**, one after the other in this process (so the sum is more than the end-to-end
   time, which overlaps them): read, build cases, evaluate the whole suite, evaluate each type
   alone, write.

Every figure is printed only after its result count is checked (cases x assertions rows).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import duckdb
import jsonschema
import polars as pl
import pyarrow.parquet as pq
import yaml
from rapidfuzz.distance import Levenshtein

from checkllm_batch.assertions.reading import load_suite
from checkllm_batch.evaluate.batch import evaluate_batch
from checkllm_batch.evaluate.plan import build_plan
from checkllm_batch.load.cases import CaseBuilder
from checkllm_batch.load.outputs import read_batches
from checkllm_batch.store import cases as cases_store
from checkllm_batch.store import runs as store

sys.path.insert(0, str(Path(__file__).parent))
import synth  # noqa: E402

OUT = Path(__file__).parent / "out"
ASSERTIONS = 10


# Runs the CLI and prints its wall seconds, CPU seconds and peak RSS (KiB). Linux counts into a
# process's peak RSS the memory of the process it was forked from, up to its exec: forked
# from this one (which builds the input in memory when it is not cached), the CLI would
# report this process's peak. Forked from this small launcher, it reports its own.
_LAUNCHER = """import os, subprocess, sys, time
started = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(suite: Path, data: Path, db: Path, batch_rows: int) -> dict:
    """Wall time, CPU time and peak RSS of one `checkllm-batch eval` (its own, and its
    reaped workers'); its counts checked."""
    db.unlink(missing_ok=True)
    cli = Path(sys.executable).parent / "checkllm-batch"
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(cli), "eval", str(suite),
                           "--outputs", str(data), "--db", str(db), "--batch-rows",
                           str(batch_rows), "--no-progress"], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"checkllm-batch failed:\n{proc.stderr}")
    seconds, cpu, peak_kib = map(float, proc.stdout.split())
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": peak_kib / 1024,
            "cpu_utilisation": cpu / (seconds * (os.cpu_count() or 1))}


def check_db(db: Path, rows: int) -> None:
    """The run stored every case, and one result per case x assertion."""
    con = duckdb.connect(str(db), read_only=True)
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("cases", "assertion_results", "test_results")}
    con.close()
    want = {"cases": rows, "assertion_results": rows * ASSERTIONS, "test_results": rows}
    if counts != want:
        raise SystemExit(f"incomplete results in {db}: {counts}, expected {want}")


def per_row_loop(data: Path, out: Path, literals: dict[str, str]) -> tuple[float, int]:
    """(seconds, lines written) of the script a user writes by hand: read the Parquet file,
    loop over its rows doing the ten checks, write one result line per case. `literals`
    replace the row's own values (the literal suite)."""
    started = time.perf_counter()
    validator = jsonschema.Draft7Validator(synth.SCHEMA)
    word = re.compile(r"\b(energy|light)\b")
    objects = re.compile(r"\{.*\}", re.S)
    lines = 0
    with out.open("w", newline="") as f:
        writer = csv.writer(f)
        for batch in pq.ParquetFile(data).iter_batches(columns=["output", "expected",
                                                                "reference"]):
            for r in batch.to_pylist():
                writer.writerow(_ten_checks({**r, **literals}, validator, word, objects))
                lines += 1
    return time.perf_counter() - started, lines


def _ten_checks(r: dict, validator, word: re.Pattern, objects: re.Pattern) -> tuple:
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
    distance = Levenshtein.distance(out, reference)
    return (
        expected in out,
        any(w in lowered for w in ("photosynthesis", "paris", "oxygen")),
        bool(word.search(out)),
        "As an AI language model" not in out,
        out.startswith("Answer:"),
        distance <= 5,
        is_json,
        contains_json,
        out == reference,
        1 - distance / max(len(out), len(reference), 1) >= 0.8,
    )


def stages(suite_path: Path, data: Path, batch_rows: int, db: Path
           ) -> dict[str, list[float]]:
    """[wall, CPU] seconds of each stage alone, batch by batch: read, build, evaluate (the
    suite, then each type alone on the same cases), write."""
    suite = load_suite(suite_path)
    plan = build_plan(suite)
    singles = {}
    for i, a in enumerate(yaml.safe_load(suite_path.read_text())["defaultTest"]["assert"]):
        path = OUT / f"single_{i}.yaml"
        path.write_text(yaml.safe_dump({"defaultTest": {"assert": [a]}}))
        singles[f"evaluate {i}: {a['type']}"] = build_plan(load_suite(path))
    db.unlink(missing_ok=True)
    con = store.connect(db)
    run_id = store.start_run(con, suite, str(data), {})
    took: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    counts: dict[str, int] = defaultdict(int)
    done, builder, text = 0, None, True
    batches = read_batches(str(data), batch_rows)
    while True:
        batch = _timed(took, "read", lambda: next(batches, None))
        if batch is None:
            break
        if builder is None:  # the text stays in the file, as in the CLI's run
            builder = CaseBuilder(plan, batch.schema, str(data))
            text = not cases_store.leave_in_file(con, run_id, str(data), builder.row_vars,
                                                 builder.vars_heads())
        cases = _timed(took, "build cases", lambda: builder.build(batch, done))
        results, tests = _timed(took, "evaluate (the suite)", lambda: evaluate_batch(plan, cases))
        counts["evaluate (the suite)"] += results.height
        for name, single in singles.items():
            one, _ = _timed(took, name, lambda single=single: evaluate_batch(single, cases))
            counts[name] += one.height * ASSERTIONS
        _timed(took, "write", lambda: store.append(con, run_id, cases, results, tests,
                                                   lambda: None, text=text))
        done += batch.num_rows
    con.close()
    check_db(db, done)
    incomplete = {k: v for k, v in counts.items() if v != done * ASSERTIONS}
    if incomplete:
        raise SystemExit(f"incomplete stage results: {incomplete} for {done} cases")
    return dict(took)


def _timed(took: dict[str, list[float]], name: str, fn):
    """fn(), adding its wall and CPU seconds (all threads) to took[name]."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    took[name][0] += time.perf_counter() - wall
    took[name][1] += time.process_time() - cpu
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--no-stages", action="store_true", help="skip the per-stage timings")
    ap.add_argument("--values", choices=("vars", "literal"), default="vars",
                    help="the suite's values from each row's vars, or one literal each")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    data = OUT / f"outputs_v2_{args.rows}.parquet"
    if not data.exists():
        synth.outputs(args.rows).write_parquet(data)
    first = pl.read_parquet(data, n_rows=1, columns=["expected", "reference"]).row(0, named=True)
    literals = first if args.values == "literal" else {}
    suite = OUT / f"suite_{args.values}.yaml"
    suite.write_text(synth.literal_suite(literals) if literals else synth.SUITE)
    load_before = os.getloadavg()

    tiny = OUT / "outputs_v2_100.parquet"  # the fixed cost: start-up, run record, metrics
    pl.read_parquet(data, n_rows=100).write_parquet(tiny)
    fixed = run_cli(suite, tiny, OUT / "results.duckdb", args.batch_rows)
    check_db(OUT / "results.duckdb", 100)
    ours = run_cli(suite, data, OUT / "results.duckdb", args.batch_rows)
    check_db(OUT / "results.duckdb", args.rows)
    loop_cpu = time.process_time()
    loop_seconds, lines = per_row_loop(data, OUT / "loop.csv", literals)
    loop_cpu = time.process_time() - loop_cpu
    if lines != args.rows:
        raise SystemExit(f"the loop wrote {lines} lines for {args.rows} cases")

    report = {"rows": args.rows, "values": args.values, "assertions": ASSERTIONS,
              "batch_rows": args.batch_rows,
              "cores": os.cpu_count(), "load_avg_before": [round(x, 2) for x in load_before],
              "seconds": round(ours["seconds"], 2),
              "rows_per_s": round(args.rows / ours["seconds"]),
              "cpu_seconds": round(ours["cpu_seconds"], 2),
              "cpu_utilisation": round(ours["cpu_utilisation"], 2),
              "peak_rss_mib": round(ours["peak_rss_mib"]),
              "fixed_seconds_100_rows": round(fixed["seconds"], 2),
              "loop_seconds": round(loop_seconds, 2),
              "loop_cpu_seconds": round(loop_cpu, 2),
              "speedup_vs_loop": round(loop_seconds / ours["seconds"], 2),
              "cpu_ratio_vs_loop": round(loop_cpu / ours["cpu_seconds"], 2)}
    if not args.no_stages:
        report["stages_wall_cpu_seconds"] = {k: [round(x, 3) for x in v] for k, v in stages(
            suite, data, args.batch_rows, OUT / "stages.duckdb").items()}
    report["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
