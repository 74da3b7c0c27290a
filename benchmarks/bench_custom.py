"""Throughput of the custom-logic, PromptKit and tool-call types: one assertion per run.

N synthetic cases (benchmarks/synth.py, every output distinct) plus an OpenAI-shaped
`tool_calls` column (every value distinct too). Each type is evaluated alone, in process,
end to end (cases built, results written to an in-memory DuckDB), and reported in cases/s.
The types that need a parser (json-path, tool calls) are also timed as the per-row Python
loop a user would write with the same library (jmespath, json), over the same rows.

    python benchmarks/bench_custom.py --rows 100000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jmespath
import numpy as np
import polars as pl
import yaml

import checkllm_batch as cb
from checkllm_batch.evaluate.batch import evaluate_batch
from checkllm_batch.evaluate.plan import build_plan
from checkllm_batch.load.cases import CaseBuilder

sys.path.insert(0, str(Path(__file__).parent))
import synth

OUT = Path(__file__).parent / "out"
CHECKS = '''
from checkllm_batch import batch_check

@batch_check
def short(df):
    return df["output"].str.len_chars() < 600

def row_short(output, context):
    return len(output) < 600
'''
TYPES: dict[str, dict] = {
    "expression (duckdb)": {"type": "expression", "value": "length(output) < 600 AND provider = 'model-a'"},
    "expression (polars)": {"type": "expression", "engine": "polars",
                            "value": "length(output) < 600"},
    "python (@batch_check)": {"type": "python", "value": "file://checks.py:short"},
    "python (per distinct case)": {"type": "python", "value": "file://checks.py:row_short"},
    "python (inline)": {"type": "python", "value": "len(output) < 600"},
    "min-length": {"type": "min-length", "value": 400},
    "max-length": {"type": "max-length", "value": 600},
    "sentence-count": {"type": "sentence-count", "max": 3},
    "field-presence": {"type": "field-presence", "value": ["answer", "confidence"]},
    "content-excludes": {"type": "content-excludes", "value": ["museum", "river"]},
    "content-excludes (word_boundary)": {"type": "banned_words",
                                         "params": {"words": ["museum", "river"]}},
    "assert-set (2 members)": {"type": "assert-set", "threshold": 0.5, "assert": [
        {"type": "contains", "value": "energy"}, {"type": "max-length", "value": 600}]},
    "json-path": {"type": "json-path", "value": "confidence", "min": 0, "max": 0.5},
    "tools-called": {"type": "tools-called", "value": ["get_weather"]},
    "tool-args": {"type": "tool-args", "tool_name": "get_weather",
                  "expected_args": {"city": "Paris"}},
    "tool-call-count": {"type": "tool-call-count", "max": 1},
    "tool-call-sequence": {"type": "tool-call-sequence", "value": ["lookup", "get_weather"]},
    "no-tool-errors": {"type": "no-tool-errors"},
}
CITIES = ["Paris", "Rome", "Oslo", "Lima", "Kyiv"]


def outputs(n: int) -> pl.DataFrame:
    frame = synth.outputs(n)
    rng = np.random.default_rng(1)
    city = pl.Series(np.array(CITIES)[rng.integers(0, len(CITIES), n)])
    two = pl.Series(rng.random(n) < 0.5)
    call = pl.concat_str([pl.lit('{"id":"c'), pl.int_range(pl.len()).cast(pl.String),
                          pl.lit('","type":"function","function":{"name":"get_weather",'
                                 '"arguments":"{\\"city\\": \\"'), pl.lit(city),
                          pl.lit('\\"}"}}')])
    lookup = '{"id":"l","type":"function","function":{"name":"lookup","arguments":"{}"}}'
    calls = pl.when(two).then(pl.concat_str([pl.lit("[" + lookup + ","), call, pl.lit("]")])) \
        .otherwise(pl.concat_str([pl.lit("["), call, pl.lit("]")]))
    return frame.with_columns(tool_calls=calls)


def loops(rows: list[dict]) -> dict[str, float]:
    """cases/s of the hand-written per-row loops for the parser types."""
    path = jmespath.compile("confidence")

    def json_path(r):
        try:
            v = path.search(json.loads(r["output"]))
        except ValueError:
            return False
        return isinstance(v, (int, float)) and 0 <= v <= 0.5

    def tool_args(r):
        calls = json.loads(r["tool_calls"])
        return any(c["function"]["name"] == "get_weather"
                   and json.loads(c["function"]["arguments"]).get("city") == "Paris" for c in calls)

    def tools_called(r):
        return "get_weather" in {c["function"]["name"] for c in json.loads(r["tool_calls"])}

    out = {}
    for name, fn in (("json-path", json_path), ("tool-args", tool_args),
                     ("tools-called", tools_called)):
        started = time.perf_counter()
        for r in rows:  # row-wise: the baseline we compare with
            fn(r)
        out[name] = len(rows) / (time.perf_counter() - started)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    (OUT / "checks.py").write_text(CHECKS)
    data = outputs(args.rows)
    loop = loops(data.to_dicts())
    report = {}
    for name, assertion in TYPES.items():
        seconds, run, engine = timed(assertion, data, args.repeat)
        statuses = run.assertion_results["status"].value_counts().rows()
        report[name] = {"cases_per_s": round(args.rows / seconds),
                        "engine_cases_per_s": round(args.rows / engine),
                        "statuses": dict(statuses)}
        if name in loop:
            report[name]["loop_cases_per_s"] = round(loop[name])
    print(json.dumps({"rows": args.rows, "types": report}, indent=1))


def timed(assertion: dict, data: pl.DataFrame, repeat: int) -> tuple[float, cb.Run, float]:
    """Best of `repeat`: end-to-end runs (cases built, results stored), and the engine alone
    (`evaluate_batch` on cases built beforehand: the type's own cost)."""
    suite_path = OUT / "suite_custom.yaml"
    suite_path.write_text(yaml.safe_dump({"defaultTest": {"assert": [assertion]}}))
    suite = cb.load(suite_path)
    plan = build_plan(suite)
    table = data.to_arrow()
    cases = CaseBuilder(plan, table.schema, "bench").build(table.combine_chunks().to_batches()[0], 0) \
        if table.num_rows <= 100_000 else None
    best = engine = float("inf")
    run = None
    for _ in range(repeat):
        started = time.perf_counter()
        run = cb.evaluate(suite, data)
        best = min(best, time.perf_counter() - started)
        if cases is not None:
            started = time.perf_counter()
            evaluate_batch(plan, cases)
            engine = min(engine, time.perf_counter() - started)
    return best, run, engine  # type: ignore[return-value]


if __name__ == "__main__":
    main()
