"""Issue 33's measurement: a mixed graded suite (llm-rubric, model-graded-closedqa,
factuality, answer-relevance, similar; tests/fixtures/realserver/cases.py) over `--cases` outputs,
judged by SmolLM2-135M-Instruct through llama.cpp's llama-server (prepared by
tests/fixtures/realserver/prepare.py), with and without structured output.

Prints, per setting: the share of graded results that are verdicts (pass or fail, not
error), per type; how often the chat types' verdicts are right (half the answers are); chat calls and how many recorded the server's token usage; the wall time;
and what a second run over the same database sends (it should send nothing).

    .venv/bin/python benchmarks/judge_real_server.py [--cases 60] [--structured on|off|both]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures.realserver import cases, prepare  # noqa: E402
from fixtures.realserver.server import LlamaServer  # noqa: E402

from checkllm_batch import api  # noqa: E402


def judge_block(url: str, structured: bool) -> dict:
    block = {"model": "smollm2", "embedding_model": "smollm2", "base_url": url,
             "api_key_env": "CHECKLLM_BENCH_NO_KEY", "concurrency": 4}
    return {**block, "structured": True} if structured else block


def measure(url: str, n: int, structured: bool, tmp: Path) -> dict:
    suite = cases.write(tmp / f"suite-{structured}.yaml", judge_block(url, structured))
    db = tmp / f"r-{structured}.duckdb"
    start = time.perf_counter()
    run = api.evaluate(suite, cases.cases(n), db=db)
    elapsed = time.perf_counter() - start
    results = run.assertion_results
    per_type = (results.group_by("type").agg(verdicts=(pl.col("status") != "error").mean())
                .sort("type"))
    chat, with_usage, sent = run.con.execute(
        "SELECT count(*) FILTER (kind = 'chat'), count(*) FILTER (kind = 'chat' AND "
        "prompt_tokens > 0 AND completion_tokens > 0), count(*) FROM judge_calls "
        "WHERE run_id = ?", [run.run_id]).fetchone()
    errors = results.filter(pl.col("status") == "error")["reason"].head(5).to_list()
    # even rows answer right, odd rows wrong: how often a verdict says so (chat types)
    judged = results.filter(pl.col("type").is_in(["llm-rubric", "model-graded-closedqa",
                                                  "factuality"]) & (pl.col("status") != "error"))
    agree = judged.select(((pl.col("status") == "pass") == (pl.col("case_id") % 2 == 0))
                          .mean()).item()
    rerun = api.evaluate(suite, cases.cases(n), db=db)
    again = rerun.con.execute("SELECT count(*) FROM judge_calls WHERE run_id = ?",
                              [rerun.run_id]).fetchone()[0]
    return {"verdicts": (results["status"] != "error").mean(), "per_type": per_type.rows(),
            "chat": chat, "with_usage": with_usage, "sent": sent, "elapsed": elapsed,
            "rerun_sent": again, "errors": errors, "agree": agree}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--structured", choices=("on", "off", "both"), default="both")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    settings = {"on": [True], "off": [False], "both": [False, True]}[args.structured]
    server = LlamaServer(prepare.server_path(), prepare.smollm2_path(),
                         threads=args.threads).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for structured in settings:
                found = measure(server.url, args.cases, structured, Path(tmp))
                print(f"structured={structured}: {100 * found['verdicts']:.1f}% verdicts "
                      f"over {args.cases} cases x 5 types, {found['elapsed']:.1f}s; "
                      f"{found['sent']} calls, {found['with_usage']} of {found['chat']} chat "
                      f"calls with usage; re-run sent {found['rerun_sent']}; chat verdicts "
                      f"right about the answer: {100 * (found['agree'] or 0):.0f}%")
                for kind, share in found["per_type"]:
                    print(f"  {kind}: {100 * share:.0f}% verdicts")
                for reason in found["errors"]:
                    print(f"  e.g. {reason}")
    finally:
        server.close()


if __name__ == "__main__":
    main()
