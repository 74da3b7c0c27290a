"""Per-type throughput of the text / structure / overlap / metadata vocabulary at 100,000 cases.

    .venv/bin/python benchmarks/full_vocabulary.py [--rows 100000]

Every row's output is different (a row number is part of it), so per-distinct caching does
not help: this measures the checks themselves. For parser types, a plain per-row Python
loop over the same library is timed in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml

from checkllm_batch.assertions.parsers import markup, meteor, sql
from checkllm_batch.assertions.parsers import openaitools as tools
from checkllm_batch.assertions.reading import load_suite
from checkllm_batch.evaluate.batch import evaluate_batch
from checkllm_batch.evaluate.plan import build_plan
from checkllm_batch.load.cases import CaseBuilder

WORDS = ("the cat sat on mat dog ran fast quick brown fox jumps over lazy river bank money "
         "answer question paris france capital city model output data table users orders").split()
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
REF = "the quick brown fox jumps over the lazy dog near the river bank"


def vocabulary(size: int = 20_000) -> list[str]:
    """A realistic vocabulary: the common words above, then WordNet lemmas (if installed)."""
    lemmas: list[str] = []
    path = Path("/usr/share/wordnet/index.noun")
    if path.exists():
        with open(path, encoding="utf-8") as f:
            lemmas = [line.split()[0] for line in f if not line.startswith(" ")]
        lemmas = [w for w in lemmas if w.isalpha()]
        random.Random(1).shuffle(lemmas)
    return WORDS + lemmas[:size - len(WORDS)]


VOCAB = vocabulary()
CUM = list(itertools.accumulate(1 / (r + 1) for r in range(len(VOCAB))))  # Zipf: weight 1/r


def sentence(rng: random.Random, i: int) -> str:
    """8-24 words drawn Zipf-like from VOCAB, ending with a period: practically every
    output differs, with a vocabulary shaped like real text."""
    return " ".join(rng.choices(VOCAB, cum_weights=CUM, k=rng.randint(8, 24))) + "."


def outputs(kind: str, n: int, rng: random.Random) -> list[str]:
    if kind == "xml":
        return [f"<analysis><summary>{sentence(rng, i)}</summary><score>{i}</score></analysis>"
                if i % 5 else f"<analysis><summary>{i}</analysis>" for i in range(n)]
    if kind == "html":
        return [f"<div><p>{sentence(rng, i)}</p></div>" if i % 4 else sentence(rng, i)
                for i in range(n)]
    if kind == "sql":
        return [f"SELECT id, name FROM users WHERE id = {i} AND name = 'x{rng.randint(0, 9)}'"
                if i % 6 else f"SELECT id name FROM users WHERE id = {i}" for i in range(n)]
    if kind == "tools":
        return [json.dumps([{"id": f"c{i}", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": f"city{i}"} if i % 7 else {})}}])
            for i in range(n)]
    return [("I'm sorry, I can't help with that " if i % 10 == 0 else "") + sentence(rng, i)
            for i in range(n)]


TYPES = [  # (assertion, outputs kind, parser loop or None)
    ({"type": "word-count", "value": {"min": 5, "max": 20}}, "text", None),
    ({"type": "finish-reason", "value": "stop"}, "text", None),
    ({"type": "is-refusal"}, "text", None),
    ({"type": "perplexity", "threshold": 3}, "text", None),
    ({"type": "perplexity-score", "threshold": 0.3}, "text", None),
    ({"type": "contains-html"}, "html", None),
    ({"type": "rouge-n", "value": REF}, "text", None),
    ({"type": "bleu", "value": REF}, "text", None),
    ({"type": "gleu", "value": REF}, "text", None),
    ({"type": "meteor", "value": REF}, "text", None),
    ({"type": "tool-call-f1", "value": ["get_weather"]}, "tools", None),
    ({"type": "is-xml", "value": "analysis.summary"}, "xml",
     lambda v: markup.xml_check(v, ("analysis.summary",))),
    ({"type": "contains-xml"}, "xml", lambda v: markup.contains_xml_check(v, ())),
    ({"type": "is-html"}, "html", lambda v: markup.html_check(v)),
    ({"type": "is-sql"}, "sql",
     lambda v: sql.sql_check(v, sql.sql_options(None, None))),
    ({"type": "contains-sql"}, "sql",
     lambda v: sql.contains_sql_check(v, sql.sql_options(None, None))),
    ({"type": "is-valid-openai-tools-call", "config": {"tools": [WEATHER]}}, "tools",
     lambda v: tools.tools_call_check({"calls": v, "tools": json.dumps([WEATHER])})),
]


def frame(kind: str, n: int) -> pl.DataFrame:
    rng = random.Random(7)
    texts = outputs(kind, n, rng)
    assert kind != "text" or len(set(texts)) > 0.99 * n  # all (or nearly all) distinct
    return pl.DataFrame({
        "output": texts,
        "finish_reason": [rng.choice(["stop", "length", "tool_calls"]) for _ in range(n)],
        "logprobs": [[-rng.random() for _ in range(rng.randint(5, 30))] for _ in range(n)],
    })


def throughput(assertion: dict, rows: pl.DataFrame, tmp: Path) -> float:
    (tmp / "s.yaml").write_text(yaml.safe_dump({"assert": [assertion]}), encoding="utf-8")
    plan = build_plan(load_suite(tmp / "s.yaml"))
    batch = rows.to_arrow().combine_chunks().to_batches()[0]
    cases = CaseBuilder(plan, batch.schema, "bench").build(batch, 0)
    start = time.perf_counter()
    results, _ = evaluate_batch(plan, cases)
    elapsed = time.perf_counter() - start
    assert results.height == rows.height and results["status"].null_count() == 0
    return rows.height / elapsed


def loop_rate(loop, values: list) -> float:
    start = time.perf_counter()
    for v in values:  # row-wise: the baseline this benchmark compares against
        loop(v)
    return len(values) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--only", help="comma-separated types to time (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many timings")
    args = ap.parse_args()
    n = args.rows
    only = set(args.only.split(",")) if args.only else None
    print(f"{n:,} cases, {os.cpu_count()} cores, load average before: "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    meteor.synonyms("warm")  # load WordNet's index once, outside the timings
    frames = {k: frame(k, n) for k in ("text", "xml", "html", "sql", "tools")}
    print("| type | cases/s (engine, all distinct) | per-row loop, same library | speed-up "
          "| cases/s (engine, each output 4x) |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        throughput(TYPES[-1][0], frames["tools"].head(5000), Path(tmp))  # start the pool
        for assertion, kind, loop in TYPES:
            if only and assertion["type"] not in only:
                continue
            rate = max(throughput(assertion, frames[kind], Path(tmp))
                       for _ in range(args.repeat))
            if loop is None:
                print(f"| {assertion['type']} | {rate:,.0f} | | | |", flush=True)
                continue
            repeated = frames[kind].head(n // 4).select(pl.all().repeat_by(4).explode())
            rate4 = max(throughput(assertion, repeated, Path(tmp)) for _ in range(args.repeat))
            values = frames[kind]["output"].to_list()
            base = max(loop_rate(loop, values) for _ in range(args.repeat))
            print(f"| {assertion['type']} | {rate:,.0f} | {base:,.0f} | {rate / base:.2f}x "
                  f"| {rate4:,.0f} |", flush=True)
    print(f"\nload average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
