"""Every type with a value, timed with a literal value and with a per-row value, side by side.

    .venv/bin/python benchmarks/per_row_values.py [--rows 1000000] [--only equals,regex]

Outputs are all distinct (text of 8-24 Zipf-drawn words). The per-row value comes from a var
(`{{v}}`) that differs on every row, as an expected answer does in a dataset; the literal run
uses one value of the same shape. Both go through the real engine (cases built, one batch of
`--batch-rows` at a time), and each result count is checked before a time is printed. The
ratio is per-row time / literal time: "every value is a column" asks for at most 2.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import yaml
from full_vocabulary import frame

from checkllm_batch.assertions.batch import values
from checkllm_batch.assertions.reading import load_suite
from checkllm_batch.evaluate.batch import evaluate_batch
from checkllm_batch.evaluate.plan import build_plan
from checkllm_batch.load.cases import CaseBuilder

Values = Callable[[list[str], random.Random], list]  # outputs -> one value per row


def _edit(text: str, rng: random.Random) -> str:
    """`text` within a few edits: what an expected answer near the output looks like."""
    chars = list(text)
    for _ in range(rng.randint(1, 6)):
        chars[rng.randrange(len(chars))] = rng.choice("abcdefgh ")
    return "".join(chars)


def _words(o: str, rng: random.Random, k: int = 3) -> list[str]:
    """k consecutive words of `o` (punctuation stripped): with the output's own words, an
    expected value that is nearly always different from every other row's."""
    words = [w.strip(".,;:!?") or w for w in o.split()]
    start = rng.randrange(max(len(words) - k, 0) + 1)
    return words[start:start + k]


def _phrase(o: str, rng: random.Random) -> str:
    return " ".join(_words(o, rng))


# (assertion with its literal value, per-row values[, the row's name when a type has two])
TYPES: list[tuple[dict, Values] | tuple[dict, Values, str]] = [
    ({"type": "equals", "value": "the cat sat."}, lambda os_, r: [
        o if i % 2 else _edit(o, r) for i, o in enumerate(os_)]),
    ({"type": "contains", "value": "cat"}, lambda os_, r: [_phrase(o, r) for o in os_]),
    ({"type": "icontains", "value": "CAT"}, lambda os_, r: [_phrase(o, r).upper() for o in os_]),
    ({"type": "starts-with", "value": "the"}, lambda os_, r: [
        " ".join(o.split()[:r.randint(3, 6)]) for o in os_]),
    ({"type": "contains-any", "value": "cat, dog"}, lambda os_, r: [
        f"{_phrase(o, r)}, zz{i}" for i, o in enumerate(os_)]),
    ({"type": "contains-all", "value": "the, cat"}, lambda os_, r: [
        f"{_phrase(o, r)}, {_phrase(o, r)}" for o in os_]),
    ({"type": "regex", "value": "\\bcat\\w*"}, lambda os_, r: [
        "\\b" + "\\s+".join(re.escape(w) for w in _words(o, r)) + "\\b" for o in os_]),
    ({"type": "regex", "value": "the cat"}, lambda os_, r: [_phrase(o, r) for o in os_],
     "regex, plain-text patterns"),
    ({"type": "levenshtein", "value": "the cat sat on the mat.", "threshold": 10},
     lambda os_, r: [_edit(o, r) for o in os_]),
    ({"type": "similarity", "value": "the cat sat on the mat.", "threshold": 0.8},
     lambda os_, r: [_edit(o, r) for o in os_]),
    ({"type": "max-length", "value": 120}, lambda os_, r: [r.randint(40, 200) for _ in os_]),
    ({"type": "min-length", "value": 40}, lambda os_, r: [r.randint(20, 80) for _ in os_]),
    ({"type": "word-count", "value": 12}, lambda os_, r: [r.randint(8, 24) for _ in os_]),
    ({"type": "sentence-count", "value": 1}, lambda os_, r: [r.randint(1, 3) for _ in os_]),
    ({"type": "field-presence", "value": "the, cat"}, lambda os_, r: [
        f"{_phrase(o, r)}, {_phrase(o, r)}" for o in os_]),
    ({"type": "content-excludes", "value": "money, bank"}, lambda os_, r: [
        f"{_phrase(o, r)}, zz{i}" for i, o in enumerate(os_)]),
    ({"type": "finish-reason", "value": "stop"}, lambda os_, r: [
        r.choice(["stop", "length"]) for _ in os_]),
    ({"type": "rouge-n", "value": "the quick brown fox."}, lambda os_, r: [
        _edit(o, r) for o in os_]),
    ({"type": "bleu", "value": "the quick brown fox."}, lambda os_, r: [_edit(o, r) for o in os_]),
    ({"type": "gleu", "value": "the quick brown fox."}, lambda os_, r: [_edit(o, r) for o in os_]),
]


def seconds(assertion: dict, rows: pl.DataFrame, batch_rows: int, tmp: Path) -> float:
    """Engine time over `rows` in batches (cases built outside the timing)."""
    (tmp / "s.yaml").write_text(yaml.safe_dump({"assert": [assertion]}), encoding="utf-8")
    plan = build_plan(load_suite(tmp / "s.yaml"))
    values._CACHE.clear()  # each timing starts cold, as a run does: no value prepared before
    table = rows.to_arrow()
    builder = CaseBuilder(plan, table.schema, "bench")
    total, count = 0.0, 0
    for batch in table.to_batches(max_chunksize=batch_rows):
        cases = builder.build(batch, count)
        start = time.perf_counter()
        results, _ = evaluate_batch(plan, cases)
        total += time.perf_counter() - start
        assert results.height == batch.num_rows and results["status"].null_count() == 0
        count += batch.num_rows
    assert count == rows.height
    return total


def best_of(repeat: int, assertions: tuple[dict, dict], rows: pl.DataFrame, batch_rows: int,
            tmp: Path) -> tuple[float, float]:
    """Best times of the literal and the per-row form, timed in turns so that a change in the
    machine's load weighs on both alike (the ratio is what the target is about)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for spent, assertion in zip(times, assertions):
            spent.append(seconds(assertion, rows, batch_rows, tmp))
    return min(times[0]), min(times[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--only", help="comma-separated types to time (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many timings")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    print(f"{args.rows:,} cases, all outputs distinct, {os.cpu_count()} cores, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    base = frame("text", args.rows)
    outputs = base["output"].to_list()
    print("| type | literal cases/s | per-row cases/s | distinct per-row values | "
          "per-row / literal time |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for assertion, values, *label in TYPES:
            if only and assertion["type"] not in only:
                continue
            per_row_values = values(outputs, random.Random(3))
            rows = base.with_columns(v=pl.Series(per_row_values))
            templated = {**assertion, "value": "{{v}}"}
            lit, per = best_of(args.repeat, (assertion, templated), rows, args.batch_rows,
                               Path(tmp))
            distinct = rows["v"].n_unique()
            print(f"| {label[0] if label else assertion['type']} | {args.rows / lit:,.0f} | {args.rows / per:,.0f} "
                  f"| {distinct:,} | {per / lit:.2f}x |", flush=True)
    print(f"\nload average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
