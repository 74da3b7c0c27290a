"""Judge `structured: true` / --judge-structured: each graded type's chat requests carry the
JSON schema of the reply it reads, replies of that shape give the verdict of the free-text
reply they stand for (the same parser reads both), the setting is part of each request's
identity and of the run's recorded config, and a server that refuses it says so in one line.
In-process judge (ScriptedJudge) and the fake server; the real server is
tests/judge/test_real_server.py."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import write_suite
from judge_server import KEY_ENV, SECRET

from checkllm_batch import api
from checkllm_batch.cli import main
from checkllm_batch.errors import ConfigError
from checkllm_batch.judge import Request, ScriptedJudge
from checkllm_batch.suites.judge import JudgeConfig

CONTEXT = "Paris is the capital of France. It has 2 million people. Lyon is its third city."
# type -> its assertion; the shapes it asks for, and per shape a reply of that shape and the
# free-text reply it stands for (with the prompt text that tells the free request apart)
CASES = {
    "llm-rubric": ({"type": "llm-rubric", "value": "names Paris"}, {
        "rubric_grade": ('{\n  "reason": "names Paris",\n  "pass": true,\n  "score": 0.9\n}',
                         'Sure. {"reason": "names Paris", "pass": true, "score": 0.9}',
                         "user-specified rubric")}),
    "model": ({"type": "model", "prompt": "Correct?"}, {
        "score": ('{"reason": "fine", "score": 0.85}', '{"score": 0.85, "reason": "fine"}',
                  "You are an evaluator")}),
    "llm_judge": ({"type": "llm_judge", "criteria": "correct"}, {
        "judgement": ('{"reasoning": "wrong", "passed": false, "score": 0.3}',
                      '```json\n{"passed": false, "score": 0.3, "reasoning": "wrong"}\n```',
                      "Criteria:")}),
    "model-graded-closedqa": ({"type": "model-graded-closedqa", "value": "names a city"}, {
        "closedqa": ('{"reasoning": "It names Paris, a city.", "answer": "Y"}',
                     "It names Paris, a city.\nY", "[BEGIN DATA]")}),
    "factuality": ({"type": "factuality", "value": "Paris is the capital of France"}, {
        "factuality": ('{"reason": "adds detail", "category": "B"}',
                       '{"category": "B", "reason": "adds detail"}', "factuality evaluator")}),
    "g-eval": ({"type": "g-eval", "value": "Coherence"}, {
        "evaluation_steps": ('{\n  "steps": ["Read it", "Score it"]\n}',
                             '{"steps": ["Read it", "Score it"]}', "concise evaluation steps"),
        "geval_score": ('{\n  "reason": "coherent",\n  "score": 8\n}',
                        '{"score": 8, "reason": "coherent"}', "Evaluation steps:")}),
    "context-recall": ({"type": "context-recall", "value": "Paris is the capital."}, {
        "attributions": (json.dumps({"sentences": [
            {"sentence": "Paris is the capital of France.", "attributed": True},
            {"sentence": "It has 9 million people.", "attributed": False}]}),
            "1. Paris is the capital of France. [Attributed]\n"
            "2. It has 9 million people. [Not Attributed]", "can be attributed")}),
    "context-relevance": ({"type": "context-relevance"}, {
        "relevant_sentences": ('{"sentences": ["Paris is the capital of France."]}',
                               "Paris is the capital of France.", "extract relevant sentences")}),
    "context-faithfulness": ({"type": "context-faithfulness"}, {
        "statements": ('{"statements": ["Paris is the capital.", "Lyon is bigger."]}',
                       "Paris is the capital.\nLyon is bigger.", "one or several statements"),
        "verdicts": (json.dumps({"verdicts": [
            {"statement": "Paris is the capital.", "explanation": "said", "verdict": "Yes"},
            {"statement": "Lyon is bigger.", "explanation": "not said", "verdict": "No"}]}),
            "1. Paris is the capital.\nExplanation: said. Verdict: Yes.\n2. Lyon is bigger.\n"
            "Explanation: not said. Verdict: No.\nFinal verdict for each statement in order: "
            "Yes. No.", "Natural language inference")}),
    "answer-relevance": ({"type": "answer-relevance"}, {
        "question": ('{"question": "Which city is the capital of France?"}',
                     "Which city is the capital of France?", "Generate a question")}),
    "conversation-relevance": ({"type": "conversation-relevance"}, {
        "relevance_verdict": ('{"reason": "off topic", "verdict": "no"}',
                              '{"verdict": "no", "reason": "off topic"}', "LAST `assistant`"),
        "relevance_reason": ('{"reason": "The score is 0 because it is off topic."}',
                             '{"reason": "The score is 0 because it is off topic."}',
                             "irrelevancies drawn")}),
    "select-best": ({"type": "select-best", "value": "most correct"}, {
        "best_index": ('{"index": 1}', "1", "comparing multiple pieces")}),
}


def shape_of(request: Request) -> str | None:
    fmt = dict(request.params).get("response_format")
    return fmt["json_schema"]["name"] if fmt else None


def vector(text: str) -> list[float]:
    """A fixed vector per text: equal texts, equal vectors."""
    return [float(ord(c)) for c in (text + " " * 8)[:8]]


def answer(replies: dict[str, tuple[str, str, str]]):
    def reply(request: Request):
        if request.kind == "embedding":
            return vector(request.input or "")
        name = shape_of(request)
        if name is not None:
            return replies[name][0]
        prompt = "\n".join(c for _, c in request.messages)
        return next(free for _, free, marker in replies.values() if marker in prompt)
    return reply


def run_type(tmp_path, name: str, structured: bool):
    assertion, replies = CASES[name]
    suite = write_suite(tmp_path, {"tests": [{
        "description": "t", "vars": {"query": "What is the capital of France?",
                                     "context": CONTEXT}, "assert": [assertion]}]},
        f"{name}-{structured}.yaml")
    frame = pl.DataFrame({"test_id": ["t", "t"], "provider": ["a", "b"],
                          "prompt": ["What is the capital of France?"] * 2,
                          "output": ["Paris is the capital.", "It is Lyon."]})
    judge = ScriptedJudge(answer(replies))
    config = JudgeConfig(model="judge-model", embedding_model="embed", structured=structured)
    run = api.evaluate(suite, frame, judge_config=config, judge=judge)
    return run.assertion_results.sort("case_id"), judge.sent


@pytest.mark.parametrize("name", sorted(CASES))
def test_schema_shaped_and_free_text_replies_give_the_same_verdict(tmp_path, name):
    structured, asked = run_type(tmp_path, name, True)
    free, plain = run_type(tmp_path, name, False)
    assert structured["status"].to_list() == free["status"].to_list()
    assert structured["score"].to_list() == pytest.approx(free["score"].to_list())
    assert "error" not in structured["status"].to_list(), structured["reason"].to_list()
    shapes = {shape_of(r) for r in asked if r.kind == "chat"}
    assert shapes == set(CASES[name][1])  # every chat request carried its type's schema
    assert all(shape_of(r) is None for r in plain)  # off: promptfoo's requests, unchanged


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_schema_is_strict_json_schema(name):
    """OpenAI's strict mode: objects list every property as required, no others."""
    import jsonschema

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    for shape_name, (reply, _, _) in CASES[name][1].items():
        schema = _shapes()[shape_name].response_format()["json_schema"]["schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(json.loads(reply), schema)  # the reply used above has the shape
        for obj in objects(schema):
            assert obj["required"] == list(obj["properties"])
            assert obj["additionalProperties"] is False


def _shapes():
    """Every Shape the graded types' modules define, by schema name."""
    import importlib
    import pkgutil

    from checkllm_batch.assertions import graded
    from checkllm_batch.assertions.graded.compare import select_best_shape
    from checkllm_batch.assertions.graded.shapes import Shape

    found = {"best_index": select_best_shape(2)}
    for module in pkgutil.iter_modules(graded.__path__):
        for value in vars(importlib.import_module(f"{graded.__name__}.{module.name}")).values():
            if isinstance(value, Shape):
                found[value.name] = value
    return found


def test_the_setting_changes_the_request_and_its_cache_key(tmp_path):
    """A structured request is another request: its hash differs, so answers cached without
    the setting are not served to it (and the reverse)."""
    db = tmp_path / "r.duckdb"
    suite = write_suite(tmp_path, {"defaultTest": {"assert": [CASES["llm-rubric"][0]]}})
    frame = pl.DataFrame({"output": ["Paris"]})
    sent = []
    for structured in (False, True, False, True):
        judge = ScriptedJudge(answer(CASES["llm-rubric"][1]))
        run = api.evaluate(suite, frame, db=db, judge=judge,
                           judge_config=JudgeConfig(model="m", structured=structured))
        sent.append(len(judge.sent))
        config = json.loads(run.con.execute("SELECT config FROM runs WHERE run_id = ?",
                                            [run.run_id]).fetchall()[0][0])
        assert config["judge"]["structured"] is structured  # recorded with the run
        run.con.close()
    assert sent == [1, 1, 0, 0]


def test_structured_must_be_a_boolean():
    with pytest.raises(ConfigError, match="structured"):
        JudgeConfig.from_sources({"model": "m", "structured": "yes"})


@pytest.mark.parametrize("judge_server", [{"reject": lambda body: 400 if "response_format"
                                           in body else None}], indirect=True)
def test_a_server_refusing_structured_output_gets_one_line_naming_the_setting(
        tmp_path, judge_server, monkeypatch):
    """No silent fallback: every graded result is an error naming the setting, no request is
    sent after the first refusal (the others would be refused the same way), and the CLI
    says it once."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    suite = write_suite(tmp_path, {
        "judge": {"model": "gpt-4o-mini", "base_url": judge_server.url, "api_key_env": KEY_ENV,
                  "retries": 0, "concurrency": 1},
        "defaultTest": {"assert": [{"type": "llm-rubric", "value": "good"}]}})
    pl.DataFrame({"output": [f"answer {i}" for i in range(5)]}).write_ndjson(tmp_path / "o.jsonl")
    out = CliRunner().invoke(main, ["eval", str(suite), "--outputs", str(tmp_path / "o.jsonl"),
                                    "--db", str(tmp_path / "r.duckdb"), "--judge-structured"])
    assert out.exit_code == 1, out.output
    lines = [ln for ln in out.output.splitlines() if "rejected structured output" in ln]
    assert len(lines) == 1 and "--judge-structured" in lines[0], out.output
    # after the first refusal no structured request is sent: only those already queued
    assert judge_server.counts["POST /v1/chat/completions"] <= 2 < 5
    run = api.get_run(str(tmp_path / "r.duckdb"))
    reasons = run.assertion_results["reason"].to_list()
    assert all("structured: true" in r for r in reasons), reasons
    assert set(run.assertion_results["status"]) == {"error"}


def test_without_the_flag_the_suite_setting_holds(tmp_path, judge_server, monkeypatch):
    """--judge-structured absent leaves the suite's `structured:`; given, it turns it on."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    pl.DataFrame({"output": ["good answer"]}).write_ndjson(tmp_path / "o.jsonl")
    for block, flag, want in (({"structured": True}, [], True), ({}, [], False),
                              ({}, ["--judge-structured"], True)):
        suite = write_suite(tmp_path, {
            "judge": {"model": "gpt-4o-mini", "base_url": judge_server.url,
                      "api_key_env": KEY_ENV, **block},
            "defaultTest": {"assert": [{"type": "llm-rubric", "value": "good"}]}})
        db = tmp_path / f"r{len(flag)}{bool(block)}.duckdb"
        out = CliRunner().invoke(main, ["eval", str(suite), "--outputs",
                                        str(tmp_path / "o.jsonl"), "--db", str(db), *flag])
        assert out.exit_code == 0, out.output
        body = api.get_run(str(db)).con.execute("SELECT request FROM judge_calls").fetchall()
        assert ("response_format" in json.loads(body[0][0])) is want


def test_dry_run_counts_unreadable_replies_not_asked_again(tmp_path, judge_server, monkeypatch):
    """At temperature 0 an unreadable reply is final: the dry run of a re-run says how many
    answers are such replies, and that they will not be sent."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    suite = write_suite(tmp_path, {
        "judge": {"model": "gpt-4o-mini", "base_url": judge_server.url, "api_key_env": KEY_ENV},
        "defaultTest": {"assert": [{"type": "llm-rubric", "value": "good"}]}})
    pl.DataFrame({"output": ["garble 1", "garble 2", "good"]}).write_ndjson(tmp_path / "o.jsonl")
    args = ["eval", str(suite), "--outputs", str(tmp_path / "o.jsonl"),
            "--db", str(tmp_path / "r.duckdb")]
    assert CliRunner().invoke(main, args).exit_code == 1
    out = CliRunner().invoke(main, [*args, "--dry-run"])
    assert "3 already answered, 0 to send" in out.output, out.output
    assert "2 of those answered are replies found unreadable before" in out.output
