"""The floor: bench_core's ten checks written as lean as we know how, against the product.

    .venv/bin/python benchmarks/floor.py --rows 1000000 [--rounds 2]

The floor reads the same Parquet file with Polars in batches and decides the same ten checks
with Polars string kernels, rapidfuzz `cpdist` with score cutoffs on every core (a distance
past the threshold is not computed exactly: the floor shows no distance), orjson behind a
cheap prefilter (only text that can start a JSON value is parsed; the schema of
contains-json checked by hand), and writes one lean row per case (its ten verdicts and the
test's) into DuckDB with one `INSERT ... SELECT * FROM` an Arrow table per batch.

The product is `checkllm-batch eval` of bench_core's suite on the same file (a subprocess,
as bench_core times it). The two run in turns (floor, product, floor, product, ...), each as
a whole process, so a change in the machine's load weighs on both. Then the floor's verdicts
are checked against the product's, every case and every assertion: no time is printed for
verdicts that differ.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import orjson
import polars as pl
import pyarrow.parquet as pq
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

sys.path.insert(0, str(Path(__file__).parent))
import bench_core  # noqa: E402
import synth  # noqa: E402

CHECKS = ["contains", "icontains-any", "regex", "not-contains", "starts-with", "levenshtein",
          "is-json", "contains-json", "equals", "similarity"]
JSON_STARTS = list('{["-0123456789tfn')  # the first character of any JSON text


def _schema_ok(value) -> bool:
    """synth.SCHEMA by hand: an object with answer and a confidence number in [0, 1]."""
    if not isinstance(value, dict) or "answer" not in value or "confidence" not in value:
        return False
    c = value["confidence"]
    return isinstance(c, (int, float)) and not isinstance(c, bool) and 0 <= c <= 1


def _json_checks(out: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """is-json and contains-json (the schema) of each output: orjson on candidates only."""
    n = len(out)
    is_json, has_obj = np.zeros(n, bool), np.zeros(n, bool)
    starts = out.str.strip_chars_start().str.slice(0, 1).is_in(JSON_STARTS)
    braced = out.str.contains("{", literal=True)
    for i, text, whole in zip(braced.arg_true().to_list(), out.filter(braced).to_list(),
                              starts.filter(braced).to_list()):
        obj = None
        if whole:
            try:
                obj, is_json[i] = orjson.loads(text), True
            except orjson.JSONDecodeError:
                pass
        if obj is None:  # the first object in the text: from the first { to the last }
            try:
                obj = orjson.loads(text[text.index("{"):text.rindex("}") + 1])
            except (orjson.JSONDecodeError, ValueError):
                continue
        has_obj[i] = _schema_ok(obj)
    others = starts & ~braced  # JSON texts without an object: numbers, arrays, literals
    for i, text in zip(others.arg_true().to_list(), out.filter(others).to_list()):
        try:
            orjson.loads(text)
            is_json[i] = True
        except orjson.JSONDecodeError:
            pass
    return is_json, has_obj


def ten_checks(batch: pl.DataFrame) -> pl.DataFrame:
    out, ref = batch["output"], batch["reference"]
    left, right = out.to_list(), ref.to_list()
    near = process.cpdist(left, right, scorer=Levenshtein.distance, score_cutoff=5,
                          workers=-1, dtype=np.int32)
    far = process.cpdist(left, right, scorer=Levenshtein.normalized_distance,
                         score_cutoff=0.2, workers=-1)
    is_json, has_obj = _json_checks(out)
    frame = batch.select(
        "case_id",
        pl.col("output").str.contains(pl.col("expected"), literal=True).alias(CHECKS[0]),
        pl.col("output").str.to_lowercase().str.contains_any(
            ["photosynthesis", "paris", "oxygen"]).alias(CHECKS[1]),
        pl.col("output").str.contains(r"\b(energy|light)\b").alias(CHECKS[2]),
        (~pl.col("output").str.contains("As an AI language model", literal=True))
        .alias(CHECKS[3]),
        pl.col("output").str.starts_with("Answer:").alias(CHECKS[4]),
    ).with_columns(pl.Series(CHECKS[5], near <= 5), pl.Series(CHECKS[6], is_json),
                   pl.Series(CHECKS[7], has_obj), (out == ref).alias(CHECKS[8]),
                   pl.Series(CHECKS[9], 1.0 - far >= 0.8))
    return frame.with_columns(test=pl.all_horizontal(CHECKS))


def floor(data: Path, db: Path, batch_rows: int) -> int:
    """The floor's run: read, check, write. Returns the cases written."""
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    done = 0
    for record_batch in pq.ParquetFile(data).iter_batches(
            batch_size=batch_rows, columns=["output", "expected", "reference"]):
        batch = pl.from_arrow(record_batch)
        assert isinstance(batch, pl.DataFrame)
        rows = ten_checks(batch.with_row_index("case_id", done)).to_arrow()  # noqa: F841
        if done == 0:
            con.execute("CREATE TABLE verdicts AS SELECT * FROM rows")
        else:
            con.execute("INSERT INTO verdicts SELECT * FROM rows")
        done += batch.height
    con.close()
    return done


_LAUNCHER = bench_core._LAUNCHER


def run_floor(data: Path, db: Path, batch_rows: int) -> dict:
    """The floor as a whole process, timed as bench_core times the product."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import floor; "
            f"print(floor.floor(__import__('pathlib').Path({str(data)!r}), "
            f"__import__('pathlib').Path({str(db)!r}), {batch_rows}))")
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, "-c", code],
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"the floor failed:\n{proc.stderr}")
    seconds, cpu, peak = map(float, proc.stdout.split())
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": peak / 1024}


def same_verdicts(floor_db: Path, product_db: Path, rows: int) -> None:
    """Every case's ten verdicts and its test's, the floor's against the product's."""
    con = duckdb.connect(str(floor_db), read_only=True)
    con.execute(f"ATTACH '{product_db}' AS product (READ_ONLY)")
    picks = ", ".join(f"bool_or(pass) FILTER (WHERE assertion_index = {i}) AS \"{c}\""
                      for i, c in enumerate(CHECKS))
    differ = con.execute(f"""
        WITH p AS (SELECT case_id, {picks} FROM product.assertion_results
                   WHERE parent_index IS NULL GROUP BY case_id),
             t AS (SELECT case_id, pass AS test FROM product.test_results)
        SELECT count(*) FROM verdicts v JOIN p USING (case_id) JOIN t USING (case_id)
        WHERE NOT ({' AND '.join(f'v."{c}" IS NOT DISTINCT FROM p."{c}"' for c in CHECKS)}
                   AND v.test IS NOT DISTINCT FROM t.test)
    """).fetchone()[0]
    joined = con.execute("SELECT count(*) FROM verdicts v JOIN product.test_results t "
                         "USING (case_id)").fetchone()[0]
    con.close()
    if differ or joined != rows:
        raise SystemExit(f"verdicts differ on {differ} cases ({joined} of {rows} joined)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2, help="floor, product pairs in turns")
    args = ap.parse_args()
    out = bench_core.OUT
    out.mkdir(exist_ok=True)
    data = out / f"outputs_v2_{args.rows}.parquet"
    if not data.exists():
        synth.outputs(args.rows).write_parquet(data)
    suite = out / "suite_vars.yaml"
    suite.write_text(synth.SUITE)
    load_before = os.getloadavg()
    floors, products = [], []
    for _ in range(args.rounds):
        floors.append(run_floor(data, out / "floor.duckdb", args.batch_rows))
        products.append(bench_core.run_cli(suite, data, out / "product.duckdb",
                                           args.batch_rows))
    bench_core.check_db(out / "product.duckdb", args.rows)
    same_verdicts(out / "floor.duckdb", out / "product.duckdb", args.rows)
    report = {"rows": args.rows, "cores": os.cpu_count(),
              "load_avg_before": [round(x, 2) for x in load_before],
              "floor": [{k: round(v, 2) for k, v in f.items()} for f in floors],
              "product": [{k: round(v, 2) for k, v in p.items()} for p in products],
              "wall_ratio_by_round": [round(p["seconds"] / f["seconds"], 2)
                                      for f, p in zip(floors, products)],
              "cpu_ratio_by_round": [round(p["cpu_seconds"] / f["cpu_seconds"], 2)
                                     for f, p in zip(floors, products)],
              "verdicts": "identical",
              "load_avg_after": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
