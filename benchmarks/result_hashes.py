"""Hashes of every result row a run stores, to show that a change to the engine or the store
keeps every verdict, score and reason byte for byte.

    .venv/bin/python benchmarks/result_hashes.py                 # print the hashes
    .venv/bin/python benchmarks/result_hashes.py --check FILE    # compare with saved ones
    .venv/bin/python benchmarks/result_hashes.py --save FILE

Datasets: bench_core's suite on its synthetic Parquet file (values from vars, and the same
suite with literal values), and the 17 types of full_vocabulary.py, each on its own frame.
Each is run by `cb.evaluate` into a fresh database file; then every row of
`assertion_results` and `test_results` (all columns but run_id, in case / assertion order)
is hashed as NDJSON, streamed in slices.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import polars as pl
import yaml

import checkllm_batch as cb

sys.path.insert(0, str(Path(__file__).parent))
import full_vocabulary  # noqa: E402
import synth  # noqa: E402

OUT = Path(__file__).parent / "out"
ORDER = {"assertion_results": "case_id, parent_index NULLS FIRST, assertion_index",
         "test_results": "case_id"}


def table_hash(run, table: str) -> str:
    """sha256 of the run's rows of `table` as NDJSON, in a fixed order."""
    digest = hashlib.sha256()
    reader = run.con.sql(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? "
                         f"ORDER BY {ORDER[table]}", params=[run.run_id]).to_arrow_reader(200_000)
    rows = 0
    for batch in reader:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        digest.update(frame.write_ndjson().encode())
        rows += frame.height
    return f"{rows}:{digest.hexdigest()}"


def run_hashes(suite: Path, outputs, db: Path) -> dict[str, str]:
    db.unlink(missing_ok=True)
    run = cb.evaluate(suite, outputs, db=db)
    try:
        return {t: table_hash(run, t) for t in ORDER}
    finally:
        run.con.close()


def core(rows: int, tmp: Path) -> dict[str, dict[str, str]]:
    OUT.mkdir(exist_ok=True)
    data = OUT / f"outputs_v2_{rows}.parquet"
    if not data.exists():
        synth.outputs(rows).write_parquet(data)
    first = pl.read_parquet(data, n_rows=1, columns=["expected", "reference"]).row(0, named=True)
    found = {}
    for name, text in (("core", synth.SUITE), ("core-literal", synth.literal_suite(first))):
        suite = tmp / f"{name}.yaml"
        suite.write_text(text)
        found[name] = run_hashes(suite, str(data), tmp / "core.duckdb")
    return found


def vocabulary(rows: int, tmp: Path) -> dict[str, dict[str, str]]:
    frames = {}
    found = {}
    for assertion, kind, _ in full_vocabulary.TYPES:
        if kind not in frames:
            frames[kind] = full_vocabulary.frame(kind, rows)
        suite = tmp / "vocab.yaml"
        suite.write_text(yaml.safe_dump({"assert": [assertion]}), encoding="utf-8")
        found[f"vocab {assertion['type']}"] = run_hashes(suite, frames[kind], tmp / "v.duckdb")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=300_000, help="core benchmark rows")
    ap.add_argument("--vocab-rows", type=int, default=20_000, help="rows per vocabulary type")
    ap.add_argument("--save", type=Path)
    ap.add_argument("--check", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = {"rows": {"core": args.rows, "vocab": args.vocab_rows},
                 **core(args.rows, Path(tmp)), **vocabulary(args.vocab_rows, Path(tmp))}
    print(json.dumps(found, indent=1))
    if args.save:
        args.save.write_text(json.dumps(found, indent=1) + "\n")
    if args.check:
        saved = json.loads(args.check.read_text())
        differ = [k for k in saved if saved[k] != found.get(k)]
        if differ:
            raise SystemExit(f"result rows differ from {args.check}: {differ}")
        print(f"identical to {args.check}: {len(saved) - 1} datasets")


if __name__ == "__main__":
    main()
