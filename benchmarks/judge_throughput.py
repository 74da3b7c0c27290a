"""Judge throughput against a rate-limited local OpenAI-compatible server.

The server (tests/judge_server.py) allows `--rpm` requests per minute (token bucket, one
second of burst, 429 + Retry-After beyond it) and answers each call after `--latency`
seconds. We evaluate `--calls` distinct llm-rubric assertions through the whole pipeline
(api.evaluate -> judge hook -> runner -> openai client) and report the achieved rate as a
share of the allowed rate, and the share of requests answered 429.

    .venv/bin/python benchmarks/judge_throughput.py [--calls 5000 --rpm 3000 --latency 0.1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from judge_server import JudgeServer  # noqa: E402

from checkllm_batch import api  # noqa: E402
from checkllm_batch.suites.judge import JudgeConfig  # noqa: E402

SUITE = "tests:\n  - description: t\n    assert:\n      - type: llm-rubric\n        value: good\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rpm", type=float, default=3000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--client-rpm", type=float, default=None,
                        help="rpm given to the client (default: learnt from headers)")
    parser.add_argument("--hide-limits", action="store_true",
                        help="the server sends no x-ratelimit-* headers: only 429s teach")
    args = parser.parse_args()
    os.environ.setdefault("BENCH_JUDGE_KEY", "sk-bench")
    server = JudgeServer(rpm=args.rpm, latency=args.latency,
                         announce=not args.hide_limits).start()
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.yaml"
        suite.write_text(SUITE)
        outputs = pl.DataFrame({"test_id": ["t"] * args.calls,
                                "output": [f"answer {i} is good" for i in range(args.calls)]})
        config = JudgeConfig(model="gpt-4o-mini", base_url=server.url,
                             api_key_env="BENCH_JUDGE_KEY", concurrency=args.concurrency,
                             rpm=args.client_rpm)
        start, mono = time.perf_counter(), time.monotonic()
        run = api.evaluate(suite, outputs, db=Path(tmp) / "r.duckdb", judge_config=config)
        elapsed = time.perf_counter() - start
        end = time.monotonic()
        errors = run.assertion_results.filter(pl.col("status") == "error").height
    server.stop()
    requests = server.counts["POST /v1/chat/completions"]
    allowed = args.rpm / 60.0
    achieved = server.answered / elapsed
    print(f"calls={args.calls} answered={server.answered} errors={errors} "
          f"elapsed={elapsed:.1f}s")
    print(f"achieved {achieved:.1f} req/s of {allowed:.1f} allowed = "
          f"{100 * achieved / allowed:.1f}% of the allowed rate")
    print(f"before the first answer {server.first - mono:.2f}s, "
          f"after the last {end - server.last:.2f}s")
    window = server.answered / max(server.last - server.first, 1e-9)
    print(f"while judging (first to last answer): {window:.1f} req/s = "
          f"{100 * window / allowed:.1f}% of the allowed rate")
    print(f"429s: {server.status[429]} of {requests} requests = "
          f"{100 * server.status[429] / max(requests, 1):.2f}%")


if __name__ == "__main__":
    main()
