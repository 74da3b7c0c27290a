"""Judge throughput against a rate-limited local OpenAI-compatible server.

The server (tests/judge_server.py) allows `--rpm` requests per minute (token bucket, one
second of burst, 429 + Retry-After beyond it) and answers each call after `--latency`
seconds. We evaluate `--calls` distinct llm-rubric assertions through the whole pipeline
(api.evaluate -> judge hook -> runner -> openai client) and report the achieved rate as a
share of the allowed rate, and the share of requests answered 429.

    .venv/bin/python benchmarks/judge_throughput.py [--calls 5000 --rpm 3000 --latency 0.1]

`--real-server smollm2|tiny` measures against llama.cpp's llama-server instead (prepared
by tests/fixtures/realserver/prepare.py; `-np 4` slots, `--threads` 1 by default): requests/s of the
judge at concurrency 1, 4 and 8, and the share of the server's capacity it uses, the capacity being
what a plain load of the same kind of requests (the official `openai` client, as many
threads as the concurrency, no pipeline) achieves on the same server.

    .venv/bin/python benchmarks/judge_throughput.py --real-server smollm2 [--calls 48]
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

from fixtures.realserver import prepare  # noqa: E402
from fixtures.realserver.server import LlamaServer  # noqa: E402
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
    parser.add_argument("--real-server", choices=("smollm2", "tiny"), default=None)
    parser.add_argument("--threads", type=int, default=1, help="llama-server -t")
    args = parser.parse_args()
    os.environ.setdefault("BENCH_JUDGE_KEY", "sk-bench")
    if args.real_server:
        return real_server(args.real_server, args.calls if args.calls != 5000 else 48,
                           args.threads)
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



class Recorder:
    """A judge that answers without a server and keeps each request's body: the requests a
    run would send, to replay as the plain load."""

    def __init__(self):
        self.bodies: list[dict] = []

    def send(self, request):
        from checkllm_batch.judge import Reply

        self.bodies.append(request.body())
        return Reply(text='{"reason": "ok", "pass": true, "score": 1}')


def _outputs(n: int, tag: str) -> pl.DataFrame:
    return pl.DataFrame({"test_id": ["t"] * n,
                         "output": [f"Answer {i} ({tag}): the capital of France is Paris."
                                    for i in range(n)]})


def plain_load(url: str, bodies: list[dict], concurrency: int) -> float:
    """Requests/s of `concurrency` threads sending `bodies` with the openai client."""
    from concurrent.futures import ThreadPoolExecutor

    import openai

    client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0, timeout=600.0)
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda body: client.chat.completions.create(**body), bodies))
    return len(bodies) / (time.perf_counter() - start)


def judge_config(url: str, concurrency: int) -> JudgeConfig:
    return JudgeConfig(model="local", base_url=url, api_key_env="BENCH_NO_KEY",
                       concurrency=concurrency, max_tokens=256, timeout=600.0)


def judge_load(url: str, outputs: pl.DataFrame, concurrency: int) -> tuple[float, float, int]:
    """(requests/s from the run's start, requests/s from first to last answer, errors) of
    the judge grading these outputs' llm-rubric assertions at `concurrency`."""
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.yaml"
        suite.write_text(SUITE)
        start = time.perf_counter()
        run = api.evaluate(suite, outputs, db=Path(tmp) / "r.duckdb",
                           judge_config=judge_config(url, concurrency))
        elapsed = time.perf_counter() - start
        first, last, sent, failed = run.con.execute(
            "SELECT min(created_at), max(created_at), count(*), count(*) FILTER "
            "(status = 'error') FROM judge_calls").fetchone()
    window = (last - first).total_seconds() if sent > 1 else elapsed
    return sent / elapsed, (sent - 1) / max(window, 1e-9), failed


def real_server(model: str, n: int, threads: int) -> None:
    """Per concurrency, the same requests twice, each on a freshly started server (no
    prompt cache shared): the plain load's, then the judge's."""
    path = prepare.smollm2_path() if model == "smollm2" else prepare.ensure_tiny_model()
    print(f"llama-server {prepare.LLAMA_CPP_PYTHON} + {path.name}, -np 4 -t {threads}, "
          f"{n} distinct llm-rubric requests per measurement")
    print("concurrency | plain openai client req/s | judge req/s (whole run) | "
          "judge req/s (first to last answer) | share of capacity | errors")
    for concurrency in (1, 4, 8):
        outputs, recorder = _outputs(n, f"c{concurrency}"), Recorder()
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "s.yaml").write_text(SUITE)
            api.evaluate(Path(tmp) / "s.yaml", outputs, judge=recorder,
                         judge_config=judge_config("http://unused", concurrency))
        server = LlamaServer(prepare.server_path(), path, threads=threads).start()
        try:
            plain = plain_load(server.url, recorder.bodies, concurrency)
        finally:
            server.close()
        server = LlamaServer(prepare.server_path(), path, threads=threads).start()
        try:
            whole, window, failed = judge_load(server.url, outputs, concurrency)
        finally:
            server.close()
        # like with like: both from the first request sent to the last answer read (the
        # judge's run also loads the suite and writes DuckDB); the window, first answer to
        # last, leaves out one reply's latency and so reads high
        print(f"{concurrency} | {plain:.2f} | {whole:.2f} | {window:.2f} | "
              f"{100 * whole / plain:.0f}% | {failed}")


if __name__ == "__main__":
    main()
