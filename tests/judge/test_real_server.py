"""The judge against a real OpenAI-compatible server: llama.cpp's `llama-server` (prepared
once per machine by tests/fixtures/realserver/prepare.py, which tests/run.sh runs), on 127.0.0.1.

Two models: a tiny random-weight one, for the protocol (every graded type's requests, usage,
cost, embeddings, n, logprobs) in milliseconds, and SmolLM2-135M-Instruct, a real instruction
model, for realistic replies and concurrency. The fake server (judge_server.py) stays the
place for faults (429, 500, slow, garbage), which a real server does not produce on demand.

Skipped when llama-server is not prepared, unless CI=true or CHECKLLM_REQUIRE_JUDGE_SERVER=1
(tests/run.sh sets it): then they fail, so CI cannot pass by skipping them."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import write_suite
from fixtures.realserver import cases

from checkllm_batch import api
from checkllm_batch.cli import main
from checkllm_batch.judge.openai_judge import OpenAIJudge
from checkllm_batch.judge.protocol import chat
from checkllm_batch.suites.judge import JudgeConfig

# one worker of pytest-xdist (tests/run.sh) runs these: one llama-server of each model
pytestmark = pytest.mark.xdist_group("llama_server")

KEY_ENV = "CHECKLLM_REAL_JUDGE_KEY"  # never set: a local server needs no key ("EMPTY")
CONTEXT = "Paris is the capital of France. It lies on the Seine. Lyon is its third city."
EVERY_TYPE = [
    {"type": "llm-rubric", "value": "is polite"},
    {"type": "model", "prompt": "Is this answer correct? Score 0-1."},
    {"type": "model-graded-closedqa", "value": "names a city"},
    {"type": "factuality", "value": "Paris is the capital of France"},
    {"type": "g-eval", "value": "Coherence"},
    {"type": "llm_judge", "criteria": "The answer is correct"},
    {"type": "context-recall", "value": "Paris is the capital of France."},
    {"type": "context-relevance"},
    {"type": "context-faithfulness"},
    {"type": "answer-relevance"},
    {"type": "conversation-relevance"},
    {"type": "similar", "value": "The capital of France is Paris"},
    {"type": "select-best", "value": "the most correct answer"},
]
GRADED_TYPES = {a["type"] for a in EVERY_TYPE}


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def config(server, **kw) -> JudgeConfig:
    base = dict(model="local-judge", embedding_model="local-embed", base_url=server.url,
                api_key_env=KEY_ENV, concurrency=4, retries=0, max_tokens=256,
                timeout=300.0)
    return JudgeConfig(**{**base, **kw})


def post(server, path: str, body: dict) -> dict:
    """The server's own answer to a body, without our client (an independent reading)."""
    request = urllib.request.Request(server.url + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def calls(run: api.Run) -> pl.DataFrame:
    rows = run.con.sql(f"SELECT * FROM judge_calls WHERE run_id = '{run.run_id}'")
    return pl.from_arrow(rows.to_arrow_table())


def every_type_suite(tmp_path: Path, **judge) -> Path:
    rows = [{"description": "capital", "vars": {"query": "What is the capital of France?",
                                                "context": CONTEXT}, "assert": EVERY_TYPE}]
    return write_suite(tmp_path, {"tests": rows, **({"judge": judge} if judge else {})})


def every_type_outputs() -> pl.DataFrame:
    answers = ["The capital of France is Paris.", "Lyon, I think."]
    return pl.DataFrame({"test_id": ["capital"] * 2, "provider": ["a", "b"],
                         "prompt": ["What is the capital of France?"] * 2, "output": answers})


def test_every_graded_type_through_the_real_server(tmp_path, tiny_server):
    """Each type's requests reach the server and come back: a verdict, or an error that
    says the (random) reply was unreadable; never a transport error."""
    run = api.evaluate(every_type_suite(tmp_path), every_type_outputs(),
                       db=tmp_path / "r.duckdb", judge_config=config(tiny_server))
    results = run.assertion_results
    assert set(results["type"].to_list()) == GRADED_TYPES
    transport = results.filter(pl.col("reason").str.contains("HTTP|connection|timeout"))
    assert transport.is_empty(), transport.select("type", "reason").rows()
    recorded = calls(run)
    assert set(recorded["kind"]) == {"chat", "embedding"}
    assert set(recorded["status"]) <= {"ok", "unparsed"}, recorded["error"].to_list()


def test_usage_is_the_servers_own(tmp_path, tiny_server):
    """Every call's tokens in judge_calls are what the server counts for that request body
    (asked again here without our client: greedy decoding repeats itself)."""
    run = api.evaluate(every_type_suite(tmp_path), every_type_outputs(),
                       db=tmp_path / "r.duckdb", judge_config=config(tiny_server))
    recorded = calls(run)
    assert recorded.height > 10
    for kind, body, prompt, completion in recorded.select(
            "kind", "request", "prompt_tokens", "completion_tokens").rows():
        path = "/embeddings" if kind == "embedding" else "/chat/completions"
        usage = post(tiny_server, path, json.loads(body))["usage"]
        assert prompt == usage["prompt_tokens"] > 0
        assert completion == usage.get("completion_tokens", 0)


def test_cost_unknown_without_a_price_never_zero(tmp_path, tiny_server):
    """A local model has no price: its calls' cost is NULL (unknown), and the CLI says so
    instead of a $0.0000 that reads as free."""
    suite = every_type_suite(tmp_path, model="local-judge", embedding_model="local-embed",
                             base_url=tiny_server.url, api_key_env=KEY_ENV)
    every_type_outputs().write_ndjson(tmp_path / "o.jsonl")
    db = tmp_path / "r.duckdb"
    out = CliRunner().invoke(main, ["eval", str(suite), "--outputs", str(tmp_path / "o.jsonl"),
                                    "--db", str(db)])
    assert out.exit_code in (0, 1), out.output
    judge_line = next(line for line in out.output.splitlines() if line.startswith("judge:"))
    assert "$0.0000" not in judge_line and "cost unknown" in judge_line, judge_line
    run = api.get_run(str(db))
    assert calls(run)["cost"].null_count() == calls(run).height > 0


def test_cost_from_a_known_price(tmp_path, tiny_server):
    """With a price, each call costs its recorded tokens at that price."""
    prices = {"local-judge": [1000.0, 2000.0], "local-embed": [500.0, 0.0]}
    run = api.evaluate(every_type_suite(tmp_path), every_type_outputs(),
                       db=tmp_path / "r.duckdb",
                       judge_config=config(tiny_server, prices=prices))
    recorded = calls(run)
    for model, prompt, completion, cost in recorded.select(
            "model", "prompt_tokens", "completion_tokens", "cost").rows():
        price_in, price_out = prices[model]
        assert cost == pytest.approx((prompt * price_in + completion * price_out) / 1e6)
    assert recorded["cost"].sum() > 0


def test_similar_is_the_cosine_of_the_servers_embeddings(tmp_path, tiny_server):
    """`similar` scores the cosine of the server's vectors, fetched here without our client.
    One call at a time: llama-server's embedding of a text decoded in one batch with others
    differs from its embedding alone (cosine 0.97-0.98 between the two, this build, both
    models), so only unbatched vectors compare exactly."""
    outputs = ["The capital of France is Paris.", "Bananas are yellow.", ""]
    value = "Paris is the capital of France"
    run = api.evaluate(write_suite(tmp_path, {"defaultTest": {"assert": [
        {"type": "similar", "value": value, "threshold": 0.5}]}}),
        pl.DataFrame({"output": outputs}), judge_config=config(tiny_server, concurrency=1))
    scores = run.assertion_results.sort("case_id")["score"].to_list()

    def vector(text: str) -> np.ndarray:
        body = {"model": "local-embed", "input": text}
        return np.array(post(tiny_server, "/embeddings", body)["data"][0]["embedding"])

    ref = vector(value)
    for output, score in zip(outputs, scores):
        v = vector(output)
        cos = float(v @ ref / (np.linalg.norm(v) * np.linalg.norm(ref)))
        assert score == pytest.approx(max(0.0, min(1.0, cos)), abs=1e-6)


def test_n_and_logprobs_through_the_transport(tiny_server):
    """No graded type reads logprobs or asks for n > 1 today; the transport takes both: the
    first choice is the reply, the usage counts every choice."""
    judge = OpenAIJudge(config(tiny_server))
    request = chat("local-judge", [("user", "Say yes")], temperature=1.0, seed=3, n=2,
                   logprobs=True, top_logprobs=3, max_tokens=16)
    reply = judge.send(request)
    raw = post(tiny_server, "/chat/completions", request.body())
    assert len(raw["choices"]) == 2
    assert raw["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert reply.text == raw["choices"][0]["message"]["content"]
    assert reply.completion_tokens == raw["usage"]["completion_tokens"]


def busy_slots(server) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/slots", timeout=5) as r:
        return sum(bool(s.get("is_processing")) for s in json.loads(r.read()))


@pytest.mark.parametrize("concurrency", [2, 8])
def test_concurrency_fills_the_slots_it_may(tmp_path, smol_server, concurrency):
    """The judge keeps `concurrency` calls in flight, up to the server's 4 slots (-np 4);
    beyond them the server queues, and every call still completes."""
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(busy_slots(smol_server))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    frame = cases.cases(12).with_columns(pl.format("{} ({})", "output", pl.lit(concurrency)))
    suite = write_suite(tmp_path, {"defaultTest": {"assert": [cases.ASSERTIONS[0]]}})
    try:
        run = api.evaluate(suite, frame, judge_config=config(
            smol_server, concurrency=concurrency, max_tokens=48))
    finally:
        done.set()
        watcher.join()
    assert max(seen) == min(concurrency, smol_server.slots)
    assert (calls(run)["status"] != "error").all()
    assert calls(run).height == 12


def test_every_graded_types_schema_is_accepted_by_the_server(tmp_path, tiny_server):
    """With structured: true, every chat request carries its type's JSON schema and
    llama-server takes each one (it compiles the schema to a grammar: an unsupported schema
    is a 400), and the replies it constrains are JSON objects."""
    run = api.evaluate(every_type_suite(tmp_path), every_type_outputs(),
                       db=tmp_path / "r.duckdb",
                       judge_config=config(tiny_server, structured=True, max_tokens=64))
    transport = run.assertion_results.filter(
        pl.col("reason").str.contains("HTTP|connection|timeout|rejected"))
    assert transport.is_empty(), transport.select("type", "reason").rows()
    chats = calls(run).filter(pl.col("kind") == "chat")
    names = {json.loads(body)["response_format"]["json_schema"]["name"]
             for body in chats["request"]}
    # each type's own schema (follow-up stages run when the first stage's reply was read)
    assert names >= {"rubric_grade", "score", "judgement", "closedqa", "factuality",
                     "evaluation_steps", "attributions", "relevant_sentences", "statements",
                     "question", "relevance_verdict", "best_index"}
    complete = chats.filter(pl.col("status") != "truncated")["reply"].to_list()
    assert complete and all(isinstance(json.loads(text), dict) for text in complete)


def test_structured_smollm2_gives_verdicts_and_a_rerun_sends_nothing(tmp_path, smol_server):
    """Issue 33's acceptance, on 8 cases x 5 types (benchmarks/judge_real_server.py runs
    the 60 of the issue: 100 % verdicts there): with structured output SmolLM2 gives >= 95 % verdicts, every chat
    call records the server's token usage, and a re-run sends no request."""
    suite = cases.write(tmp_path / "suite.yaml")
    db = tmp_path / "r.duckdb"
    judge = config(smol_server, model="smollm2", embedding_model="smollm2", structured=True)
    run = api.evaluate(suite, cases.cases(8), db=db, judge_config=judge)
    results = run.assertion_results
    assert results.height == 40
    verdicts = (results["status"] != "error").mean()
    errors = results.filter(pl.col("status") == "error")["reason"].to_list()
    assert verdicts >= 0.95, errors
    chats = calls(run).filter(pl.col("kind") == "chat")
    assert chats.height >= 32 and (chats["prompt_tokens"] > 0).all()
    assert (chats["completion_tokens"] > 0).all()
    run.con.close()
    again = api.evaluate(suite, cases.cases(8), db=db, judge_config=judge)
    assert calls(again).is_empty()
    assert again.assertion_results["status"].to_list() == results["status"].to_list()


def test_a_jury_grades_on_the_real_server(tmp_path, smol_server):
    """Issue 35 on a real server: a jury of two jurors (llama-server answers any model name,
    so one server stands for two judges) sends each juror's requests apart, keeps each
    juror's verdict beside the jury's, and a re-run sends nothing."""
    suite = write_suite(tmp_path, {"defaultTest": {"assert": [
        {"type": "llm-rubric", "value": "names the capital of {{ country }} correctly"}]}})
    db = tmp_path / "r.duckdb"
    judge = config(smol_server, model=None, models=("juror-a", "juror-b"), vote="majority",
                   structured=True)
    run = api.evaluate(suite, cases.cases(4), db=db, judge_config=judge)
    sent = calls(run).filter(pl.col("kind") == "chat")
    models = [json.loads(body)["model"] for body in sent["request"]]
    assert sorted(models) == ["juror-a"] * 4 + ["juror-b"] * 4  # each case, each juror
    jurors = run.con.sql("SELECT case_id, juror, pass, verdict FROM juror_verdicts "
                         f"WHERE run_id = '{run.run_id}' ORDER BY ALL").pl()
    assert jurors.height == 8 and set(jurors["juror"]) == {"juror-a", "juror-b"}
    results = run.assertion_results.sort("case_id")
    assert (results["status"] != "error").all(), results["reason"].to_list()
    # majority of two: the jury passes only where both jurors pass
    both = jurors.group_by("case_id").agg(pl.col("pass").all()).sort("case_id")["pass"]
    assert results["pass"].to_list() == both.to_list()
    run.con.close()
    again = api.evaluate(suite, cases.cases(4), db=db, judge_config=judge)
    assert calls(again).is_empty()
