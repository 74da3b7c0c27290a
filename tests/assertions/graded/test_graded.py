"""The judge's parts in-process, with the scripted judge: parsing, types, limits, budget."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from fixtures.judges import multi_step, scripted

from checkllm_batch import api
from checkllm_batch.assertions.graded import compare, faithfulness, geval, rag, reference, replies
from checkllm_batch.assertions.graded import rubric as rubric_type
from checkllm_batch.errors import ConfigError
from checkllm_batch.judge import ScriptedJudge
from checkllm_batch.judge.batch import shards
from checkllm_batch.judge.budget import Budget
from checkllm_batch.judge.limiter import Limiter, parse_duration
from checkllm_batch.judge.protocol import chat, embedding
from checkllm_batch.suites.judge import JudgeConfig

E = "error"  # the outcome is an error (Unparsable)

RUBRIC_CASES = [
    ('{"pass": true, "score": 1, "reason": "ok"}', None, (True, 1.0)),
    ('{"pass": false, "score": 0.0}', None, (False, 0.0)),
    ('Here:\n```json\n{"pass": true, "score": 0.7}\n```', None, (True, 0.7)),
    ('text before {"pass": "yes", "score": 0.9} after', None, (True, 0.9)),
    ('{"pass": true, "score": 0.6}', 0.8, (False, 0.6)),
    ('{"pass": true}', None, (True, 1.0)),
    ('{"score": 0.9}', 0.5, (True, 0.9)),
    ('{"pass": true, "score": 8}', None, E),  # outside [0, 1]
    ('{"pass": "maybe", "score": 1}', None, E),
    ('{"reason": "no verdict"}', None, E),
    # a null score is no score: an error on that row (it was a TypeError losing the batch)
    ('{"score": null, "reason": "x"}', None, E),
    ('{"score": null, "reason": "x"}', 0.6, E),
    ('{"pass": false, "score": null}', None, (False, 0.0)),
    ('{"pass": true, "score": null}', None, (True, 0.0)),  # promptfoo: Number(null) is 0
    ("I think it passes.", None, E),
    ("", None, E),
    ('{"pass": true, "score": "NaN"}', None, E),
    # issue 41, promptfoo 0.123.1 replaying the reply (its own tests expect it): a score that
    # is not a number falls back to the pass value
    ('{"pass": true, "score": "high"}', None, (True, 1.0)),
    ('{"pass": false, "score": "high"}', None, (False, 0.0)),
    ('{"pass": true, "score": "high"}', 0.5, (True, 1.0)),
    ('{"score": "high"}', None, E),  # no pass to fall back to
    ('{"pass": true, "score": 1, "reason": "très bien ✓"}', None, (True, 1.0)),
    # read as promptfoo reads a judge's object: a YAML flow mapping, missing braces closed
    ("{pass: true, score: 0.9, reason: unquoted}", None, (True, 0.9)),
    ("{'pass': false, 'score': 0.2}", None, (False, 0.2)),
    ('{"pass": true, "score": 0.8,}', None, (True, 0.8)),
    ('{"pass": false, "score": 0.3', None, (False, 0.3)),
    ('{"pass": true, "score": 0.6, // a comment\n "reason": "c"}', None, (True, 0.6)),
    ('{ "pass": true, "reason": "unterminated string', None, E),
]


@pytest.mark.parametrize("text,threshold,want", RUBRIC_CASES)
def test_rubric_replies(text, threshold, want):
    if want == E:
        with pytest.raises(replies.Unparsable):
            rubric_type.rubric(text, threshold)
    else:
        assert rubric_type.rubric(text, threshold)[:2] == want


PARSER_CASES = [
    (reference.closedqa_verdict, "reasoning\nY\nY", (True, 1.0)),
    (reference.closedqa_verdict, "reasoning\nN\n", (False, 0.0)),
    (reference.closedqa_verdict, "Yes.", E),
    (reference.closedqa_verdict, "**Y**", E),
    (reference.closedqa_verdict, "", E),
    (lambda t: reference.factuality_verdict(t, {}), '{"category": "c", "reason": "same"}', (True, 1.0)),
    (lambda t: reference.factuality_verdict(t, {}), '{"category": "D"}', (False, 0.0)),
    (lambda t: reference.factuality_verdict(t, {"subset": 0.5}), '{"category": "A"}', (True, 0.5)),
    (lambda t: reference.factuality_verdict(t, {}), "The answer is (B) because…", (True, 1.0)),
    (lambda t: reference.factuality_verdict(t, {}), '{"category": "F"}', E),
    (lambda t: reference.factuality_verdict(t, {}), "no idea", E),
    (lambda t: rubric_type.scored(t, 0.8), '{"score": 0.85}', (True, 0.85)),
    (lambda t: rubric_type.scored(t, 0.8), '{"score": 0.5}', (False, 0.5)),
    (lambda t: rubric_type.scored(t, 0.8), '{"score": 85}', E),
    (lambda t: rubric_type.scored(t, 0.8), '{"pass": true}', E),
    (lambda t: rubric_type.judged(t, None), '{"passed": true, "score": 0.4}', (True, 0.4)),
    (lambda t: rubric_type.judged(t, 0.7), '{"passed": true, "score": 0.4}', (False, 0.4)),
    (lambda t: rubric_type.judged(t, None), '{"score": 0.4}', E),  # PromptKit passes these: we don't
    (lambda t: (True, rag.attributed(t)), "1. a [Attributed]\n2. b [Not Attributed]",
     (True, 0.5)),
    (lambda t: (True, rag.attributed(t)), "no classification", E),
    (lambda t: (True, faithfulness.nli_supported(t, 2)),
     "...\nFinal verdict for each statement in order: Yes. No.", (True, 0.5)),
    (lambda t: (True, faithfulness.nli_supported(t, 2)), "Verdict: Yes. Verdict: Yes.", (True, 1.0)),
    (lambda t: (True, faithfulness.nli_supported(t, 2)), "unclear", E),
    (lambda t: (True, geval.geval_score(t)[0]), '{"score": 7, "reason": "x"}', (True, 0.7)),
    (lambda t: (True, geval.geval_score(t)[0]), '{"score": 11}', E),
    (lambda t: (True, geval.geval_score(t)[0]), '{"score": "8", "reason": "x"}', (True, 0.8)),
    (lambda t: (True, geval.geval_score(t)[0]), '{"score": 8}', E),  # promptfoo needs a reason
    (lambda t: (True, geval.geval_score(t)[0]), '{"score": "", "reason": "x"}', E),
    # promptfoo 0.123.1: a statement without a verdict is unsupported
    (lambda t: (True, faithfulness.nli_supported(t, 3)),
     "Final verdict for each statement in order: Yes.", (True, 1 / 3)),
    (lambda t: (True, faithfulness.nli_supported(t, 3)), "Statement 1\nverdict: yes", (True, 1 / 3)),
    (lambda t: (True, faithfulness.nli_supported(t, 1)),
     "Final verdict for each statement in order: Unable to determine.", E),
    (lambda t: reference.factuality_verdict(t, {}), '{"reason": "no category"} (D) disagrees', (False, 0.0)),
    (lambda t: (True, float(compare.first_number(t))), "Text 2 is best", (True, 2.0)),
    (lambda t: (True, float(compare.first_number(t))), "none of them", E),
    # issue 41: the whole number, as promptfoo 0.123.1 reads it (it read "10" as output 1)
    (lambda t: (True, float(compare.first_number(t))), "10", (True, 10.0)),
    (lambda t: (True, float(compare.first_number(t))), "Output 12 fits best", (True, 12.0)),
]


@pytest.mark.parametrize("parse,text,want", PARSER_CASES)
def test_parsers(parse, text, want):
    if want == E:
        with pytest.raises(replies.Unparsable):
            parse(text)
    else:
        assert tuple(parse(text)[:2]) == pytest.approx(want)


RELEVANCE_CASES = [  # reply, context, given by line, distinct units quoted (promptfoo 0.123.1)
    ("Paris is the capital. France is in Europe.", "Paris is the capital. France is in Europe. "
     "It rains.", False, 2),
    ("Paris is the capital. France is in Europe.", "Paris is the capital. France is in Europe.\n"
     "Berlin is in Germany.", True, 1),
    ("1. Paris is the capital. 2. France is in Europe.", "Paris is the capital. France is in "
     "Europe. It rains.", False, 2),
    ("The answer is 42.\nThe answer is 42.", "The answer is 42.", False, 1),
    ("Insufficient Information", "anything", False, 0),
    ("I cannot answer that.", "Paris is the capital.", False, E),
    ("ünïcode ✓", "ÜNÏCODE ✓ here", False, 1),
]


@pytest.mark.parametrize("text,context,by_line,want", RELEVANCE_CASES)
def test_context_relevance_counts_quoted_units(text, context, by_line, want):
    if want == E:
        with pytest.raises(replies.Unparsable):
            rag.relevant_units(text, context, by_line)
    else:
        assert rag.relevant_units(text, context, by_line) == want


def test_sentences_split_prose_but_keep_lines():
    assert rag.sentences("A b. C d? E!  F") == ["A b.", "C d?", "E!", "F"]
    assert rag.sentences("A. B.\nC.\n") == ["A. B.", "C."]
    assert rag.sentences("1. A. 2. B.") == ["A.", "B."]
    assert rag.sentences("") == []


def test_geval_steps_need_one_line_json():
    assert geval.geval_steps('{"steps": ["a", "b"]}') == ["a", "b"]
    for bad in ['{ "steps": ["a"]}', '{"steps": []}', "{\n\"steps\": [\"a\"]\n}",
                '{"steps": ["a", " "]}']:
        with pytest.raises(replies.Unparsable):
            geval.geval_steps(bad)


def run(tmp_path: Path, asserts: str, outputs: list[str | None], judge=scripted, **config):
    suite = tmp_path / "suite.yaml"
    suite.write_text("judge:\n  model: gpt-4o-mini\ntests:\n  - description: t\n"
                     "    prompt: What is the capital of France?\n    assert:\n"
                     + "".join("      " + line + "\n" for line in asserts.splitlines()))
    frame = pl.DataFrame({"test_id": ["t"] * len(outputs), "output": outputs},
                         schema={"test_id": pl.String, "output": pl.String})
    config = JudgeConfig(model="gpt-4o-mini", **config) if config else None
    j = ScriptedJudge(judge)
    return api.evaluate(suite, frame, judge=j, judge_config=config), j


TYPE_CASES = [  # assertion, outputs, statuses
    ("- type: llm-rubric\n  value: names the capital", ["Paris", "Lyon", "ünïcode Paris", ""],
     ["pass", "fail", "pass", "fail"]),
    ("- type: not-llm-rubric\n  value: names the capital", ["Paris", "Lyon"], ["fail", "pass"]),
    ("- type: llm-rubric\n  value: x", ["garble", None], ["error", "fail"]),
    ("- type: not-llm-rubric\n  value: x", ["garble"], ["error"]),
    # a null output fails every type, negated or not (evaluate/outcome.py), judged ones too
    ("- type: not-llm-rubric\n  value: names the capital", [None, "Lyon"], ["fail", "pass"]),
    ("- type: model\n  prompt: Is it right?", ["Paris", "Lyon"], ["pass", "fail"]),
    ("- type: model-graded-closedqa\n  value: names Paris", ["Paris", "Rome"], ["pass", "fail"]),
    ("- type: model-graded-factuality\n  value: Paris", ["Paris", "Rome"], ["pass", "fail"]),
    ("- type: llm_judge\n  criteria: helpful\n  min_score: 0.5", ["Paris", ""], ["pass", "pass"]),
    ("- type: llm_judge\n  params: {criteria: helpful, min_score: 0.95}", ["Paris"], ["fail"]),
    ("- type: similar\n  value: Paris is the capital", ["Paris", "Lyon"], ["pass", "fail"]),
    ("- type: similar:euclidean\n  value: Paris\n  threshold: 0.5", ["Paris", "Lyon"],
     ["pass", "fail"]),
    ("- type: similar\n  value: [Paris is the capital, Paris]", ["Paris", "Rome"],
     ["pass", "fail"]),
    # promptfoo 0.123.1: not-similar passes at the threshold too (similarity <= threshold)
    ("- type: not-similar:dot\n  value: Paris\n  threshold: 1", ["Paris", "Rome"],
     ["pass", "pass"]),
    ("- type: not-similar:euclidean\n  value: Paris\n  threshold: 0", ["Paris", "Rome"],
     ["pass", "pass"]),
    ("- type: select-best\n  value: correct", ["Lyon", "Paris"], ["fail", "pass"]),
    ("- type: select-best\n  value: correct", ["Paris"], ["error"]),
    ("- type: cost\n  value: 1.0\n- type: llm-rubric\n  value: x", ["Paris"], ["pass", "pass"]),
    ("- type: cost\n  value: 0\n- type: llm-rubric\n  value: x", ["Paris"], ["fail", "pass"]),
]


@pytest.mark.parametrize("asserts,outputs,statuses", TYPE_CASES)
def test_types(tmp_path, asserts, outputs, statuses):
    result, _ = run(tmp_path, asserts, outputs)
    got = result.assertion_results.sort("case_id", "assertion_index")["status"].to_list()
    assert got == statuses


def test_similar_list_values_render_per_row(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("judge:\n  model: gpt-4o-mini\ntests:\n  - description: t\n    assert:\n"
                     "      - type: similar\n        value: ['{{a}}', '{{b}}']\n")
    frame = pl.DataFrame({"test_id": ["t"] * 3, "output": ["Paris", "Paris", "Rome ✓"],
                          "a": ["Lyon", "Lyon", "Rome"], "b": ["Paris!", "Rome", ""]})
    j = ScriptedJudge(scripted)
    result = api.evaluate(suite, frame, judge=j)
    statuses = result.assertion_results.sort("case_id")["status"].to_list()
    assert statuses == ["pass", "fail", "pass"]
    assert {r.input for r in j.sent} == {"Paris", "Rome ✓", "Lyon", "Paris!", "Rome", ""}


@pytest.mark.parametrize("value", ["42", "{a: 1}", "[]"])
def test_similar_value_is_a_string_or_a_list(tmp_path, value):
    with pytest.raises(ConfigError, match="string or a non-empty list of strings"):
        run(tmp_path, f"- type: similar\n  value: {value}", ["Paris"])


def test_max_score_picks_the_best_output(tmp_path):
    asserts = ("- type: llm-rubric\n  value: x\n- type: max-score\n")
    result, _ = run(tmp_path, asserts, ["Lyon", "Paris", "Rome"])
    rows = result.assertion_results.filter(pl.col("type") == "max-score")
    assert rows["status"].to_list() == ["fail", "pass", "fail"]
    assert result.test_results["status"].to_list() == ["fail", "pass", "fail"]


def test_no_judge_configured_is_an_error(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("tests:\n  - description: t\n    assert:\n      - type: llm-rubric\n"
                     "        value: x\n      - type: cost\n        value: 1\n")
    result = api.evaluate(suite, pl.DataFrame({"test_id": ["t"], "output": ["Paris"]}))
    rows = result.assertion_results
    assert rows["status"].to_list() == ["error", "error"]
    assert rows["reason"].to_list() == ["no judge configured"] * 2


def test_provider_and_rubric_prompt_override(tmp_path):
    asserts = ("- type: llm-rubric\n  value: x\n  provider: openai:chat:gpt-4.1-nano\n"
               "  rubricPrompt: 'Grade {{output}} for {{rubric}}: JSON please'\n")
    result, j = run(tmp_path, asserts, ["Paris"], judge=lambda r: '{"pass": true}')
    assert [r.model for r in j.sent] == ["gpt-4.1-nano"]
    assert j.sent[0].messages == (("user", "Grade Paris for x: JSON please"),)
    assert result.assertion_results["status"].to_list() == ["pass"]


def test_multi_step_types(tmp_path):
    asserts = ("- type: g-eval\n  value: correct\n"
               "- type: context-faithfulness\n  context: Paris is the capital of France.\n"
               "  query: capital?\n"
               "- type: answer-relevance\n  query: capital?\n"
               "- type: context-recall\n  value: Paris\n  context: Paris is the capital.\n"
               "- type: context-relevance\n  context: \"a\\nb\\nc\\nd\"\n  query: q\n")
    result, j = run(tmp_path, asserts, ["Paris"], judge=multi_step)
    got = result.assertion_results.select("type", "status", pl.col("score").round(6)).rows()
    assert got == [("g-eval", "pass", 0.9), ("context-faithfulness", "pass", 0.5),
                   ("answer-relevance", "pass", 1.0), ("context-recall", "pass", 1.0),
                   ("context-relevance", "pass", 0.5)]


def test_judge_exception_is_an_error_not_a_crash(tmp_path):
    def broken(_):
        raise RuntimeError("boom")
    result, _ = run(tmp_path, "- type: llm-rubric\n  value: x\n", ["Paris"], judge=broken)
    assert result.assertion_results["status"].to_list() == ["error"]
    assert "boom" in result.assertion_results["reason"][0]


def test_request_hash_covers_model_messages_and_params():
    base = chat("m", [("user", "hi")], temperature=0)
    assert base.hash == chat("m", [("user", "hi")], temperature=0).hash
    others = [chat("n", [("user", "hi")], temperature=0), chat("m", [("user", "hi!")],
              temperature=0), chat("m", [("user", "hi")], temperature=1), embedding("m", "hi")]
    assert len({base.hash, *(o.hash for o in others)}) == 5


def test_config_checks_and_never_records_the_key(monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-hidden")
    config = JudgeConfig.from_sources({"model": "gpt-4o", "api_key_env": "MY_JUDGE_KEY"},
                                      rpm=100, max_cost=None)
    assert config.api_key() == "sk-hidden" and "sk-hidden" not in str(config.record())
    with pytest.raises(ConfigError, match='did you mean "concurrency"'):
        JudgeConfig.from_sources({"concurency": 3})
    with pytest.raises(ConfigError, match="no price known"):
        JudgeConfig.from_sources({"model": "my-local-model", "max_cost": 1})
    assert JudgeConfig.from_sources({"model": "x", "max_cost": 1, "prices": {"x": [1, 2]}})
    assert JudgeConfig(model="gpt-4o", mode="batch").price("gpt-4o") == (1.25, 5.0)


def test_budget_reserves_then_settles():
    budget = Budget(1.0)
    assert budget.reserve(0.6)
    assert not budget.reserve(0.6)  # would exceed: refused, and the budget is exhausted
    budget.settle(0.6, 0.1)
    assert not budget.reserve(0.1)  # once exhausted, no more calls this run
    assert budget.spent == pytest.approx(0.1)
    assert Budget(None).reserve(1e9)


def test_limiter_backs_off_and_recovers():
    limiter = Limiter(rpm=600)
    limiter.throttle(0.0, {})
    assert limiter.rpm == pytest.approx(420)
    limiter.throttle(0.0, {})  # same episode: no second cut
    assert limiter.rpm == pytest.approx(420)
    for _ in range(40):
        limiter.success({})
    assert limiter.rpm == pytest.approx(600)
    learnt = Limiter()
    learnt.success({"x-ratelimit-limit-requests": "3000", "x-ratelimit-limit-tokens": "1e6"})
    assert learnt.rpm == pytest.approx(3000) and learnt.max_tpm == pytest.approx(1e6)


@pytest.mark.parametrize("text,seconds", [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02),
                                          ("1.5", 1.5), ("", None), ("soon", None)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


def test_batch_shards_split_by_lines_bytes_and_model():
    requests = [chat("a", [("user", f"q{i}")]) for i in range(5)] + [chat("b", [("user", "q")])]
    assert [len(s) for s in shards(requests, max_lines=2)] == [2, 2, 1, 1]
    one = len(shards(requests[:1])[0][0][1])
    assert [len(s) for s in shards(requests[:5], max_bytes=one * 3)] == [3, 2]


def test_limiter_without_a_known_limit_probes_upwards_after_a_429():
    limiter = Limiter()
    assert limiter.rpm is None  # not paced until a limit or a 429 is seen
    limiter.throttle(0.0, {})
    assert limiter.rpm is None  # nothing achieved yet to go by: Retry-After alone
    for _ in range(10):
        limiter.success({})
    limiter.last_cut = 0.0  # a new episode
    limiter.throttle(0.0, {})
    start = limiter.rpm
    assert start == pytest.approx(10 * 30 * 0.7)  # 10 calls in the last 2 s, cut by 30 %
    for _ in range(10):
        limiter.success({})
    assert limiter.rpm > start


@pytest.mark.parametrize("output,rubric", [("Paris", "names it"), ("", "x"), (None, "ünï ✓"),
                                           ("{{ not a var }}", "a\nb")])
def test_vectorised_prompts_match_the_per_item_renderer(output, rubric):
    from checkllm_batch.assertions.graded import prompts
    from checkllm_batch.assertions.graded import rubric as rubric_type

    frame = pl.DataFrame({"output": [output], "rubric": [rubric]},
                         schema={"output": pl.String, "rubric": pl.String})
    exprs = prompts.to_exprs(rubric_type.LLM_RUBRIC, {"output", "rubric"})
    rendered = frame.select(*(e.alias(f"m{i}") for i, e in enumerate(exprs))).row(0)
    by_item = prompts.render(rubric_type.LLM_RUBRIC, {"output": output, "rubric": rubric})
    assert list(rendered) == [text for _, text in by_item]
    assert prompts.to_exprs(rubric_type.LLM_RUBRIC, {"output"}) is None  # {{ rubric }}: per item


def test_429s_get_more_patience_than_failures(tmp_path):
    from checkllm_batch.judge.protocol import JudgeError

    calls = {"n": 0}

    def busy(_):
        calls["n"] += 1
        if calls["n"] <= 10:  # more 429s than `retries` allows for failures
            raise JudgeError("HTTP 429", retry=True, rate_limited=True, retry_after=0.0)
        return '{"pass": true}'
    result, _ = run(tmp_path, "- type: llm-rubric\n  value: x\n", ["Paris"], judge=busy,
                    retries=3, backoff_initial=0.001)
    assert result.assertion_results["status"].to_list() == ["pass"]
    calls["n"] = -100  # now 500s: retries (3) then an error

    def failing(_):
        calls["n"] += 1
        raise JudgeError("HTTP 500", retry=True, status=500)
    result, _ = run(tmp_path, "- type: llm-rubric\n  value: y\n", ["Lyon"], judge=failing,
                    retries=3, backoff_initial=0.001)
    assert result.assertion_results["status"].to_list() == ["error"]
    assert "after 4 attempts" in result.assertion_results["reason"][0]
    assert calls["n"] == -96


def _relevance_judge(request):
    """Verdict 'no' when the window's last answer mentions weather; summaries say so."""
    text = request.messages[-1][1]
    if text.startswith("Below is a list of irrelevancies"):
        return '{"reason": "The score is low because of the weather talk."}'
    last = text.split("Messages:\n")[-1].split("\n\nJSON:")[0]
    last_answer = json.loads(last)[-1]["content"]
    if "garble" in last_answer:
        return "no json here"
    if "weather" in last_answer:
        return '{"verdict": "no", "reason": "talks about the weather"}'
    return '{"verdict": "yes"}'


CONVERSATION = [{"input": "Hi", "output": "Hello!"},
                {"input": "Capital of France?", "output": "Paris."},
                {"input": "And of Italy?", "output": "Nice weather today."},
                {"input": "Italy?", "output": "Rome."}]


@pytest.mark.parametrize("conversation,window,status,score,reason,calls", [
    (CONVERSATION, None, "pass", 0.75, "because of the weather", 5),  # 4 windows + 1 summary
    (CONVERSATION[:2], None, "pass", 1.0, "2 out of 2 conversation windows", 2),
    (CONVERSATION[2:3], None, "fail", 0.0, "because of the weather", 2),
    (CONVERSATION, 2, "pass", 0.75, "because of the weather", 5),
    (None, None, "pass", 1.0, "1 out of 1", 1),  # no conversation: (prompt, output)
    ([{"input": "x", "output": "garble"}], None, "error", None, "Error parsing output", 1),
])
def test_conversation_relevance(tmp_path, conversation, window, status, score, reason, calls):
    import yaml

    test = {"description": "t", "prompt": "What is the capital of France?",
            "vars": {"_conversation": conversation} if conversation else {},
            "assert": [{"type": "conversation-relevance",
                        **({"config": {"windowSize": window}} if window else {})}]}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"judge": {"model": "gpt-4o-mini"}, "tests": [test]}))
    j = ScriptedJudge(_relevance_judge)
    got = api.evaluate(suite, pl.DataFrame({"test_id": ["t"], "output": ["Paris"]}),
                       judge=j).assertion_results.to_dicts()[0]
    assert got["status"] == status
    assert score is None or got["score"] == pytest.approx(score)
    assert reason in got["reason"]
    assert len(j.sent) == calls
    if window == 2:  # each window holds at most 2 turns (4 messages)
        assert max(len(json.loads(r.messages[-1][1].split("Messages:\n")[-1]
                                  .split("\n\nJSON:")[0])) for r in j.sent
                   if "Messages:\n" in r.messages[-1][1]) == 4


def test_rubric_prompt_renders_as_nunjucks(tmp_path):
    """A user's rubricPrompt uses promptfoo's template language: filters and tags work."""
    asserts = ("- type: llm-rubric\n  value: x\n"
               "  rubricPrompt: 'Grade {{ output | dump }}{% if rubric %} for {{ rubric | upper"
               " }}{% endif %}'\n")
    result, j = run(tmp_path, asserts, ["Paris", "Ünï"], judge=lambda r: '{"pass": true}')
    assert sorted(m for r in j.sent for _, m in r.messages) == \
        ['Grade "Paris" for X', 'Grade "Ünï" for X']
    assert result.assertion_results["status"].to_list() == ["pass", "pass"]


FACTUALITY_OPTIONS = [  # a test's options.factuality scores the categories (C = agree)
    ({"agree": 0.4}, "Paris", 0.4),
    ({}, "Paris", 1.0),
    (None, "Paris", 1.0),
    ({"disagree": 0.2}, "", 0.2),  # empty output: category D
    ({"agree": 0.5}, "ünïcode Paris", 0.5),
]


def test_factuality_reads_each_tests_own_options(tmp_path):
    """The type declares the test option it reads (test_options); tests with different
    options are graded apart, each with its own scores."""
    suite = {"judge": {"model": "gpt-4o-mini"},
             "tests": [{"description": f"t{i}", "prompt": "What is the capital of France?",
                        **({} if options is None else {"options": {"factuality": options}}),
                        "assert": [{"type": "factuality", "value": "Paris"},
                                   {"type": "llm-rubric", "value": "names the capital"}]}
                       for i, (options, _, _) in enumerate(FACTUALITY_OPTIONS)]}
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps(suite))
    frame = pl.DataFrame({"test_id": [f"t{i}" for i in range(len(FACTUALITY_OPTIONS))],
                          "output": [o for _, o, _ in FACTUALITY_OPTIONS]})
    results = api.evaluate(path, frame, judge=ScriptedJudge(scripted)).assertion_results
    factuality = results.filter(pl.col("assertion_index") == 0).sort("case_id")
    assert factuality["score"].to_list() == [s for _, _, s in FACTUALITY_OPTIONS]


@pytest.mark.parametrize("rubric_prompt", [
    [{"role": "system", "content": "Grade: {{ output }}"}],
    '[{"role": "user", "content": "Grade the ünïcode answer: {{ output }}"}]',
    "",
])
def test_a_tests_rubric_prompt_as_messages(tmp_path, rubric_prompt):
    """A test's options.rubricPrompt as a list of messages (main crashed on it: unhashable)."""
    suite = {"judge": {"model": "gpt-4o-mini"},
             "tests": [{"description": "t", "prompt": "q",
                        "options": {"rubricPrompt": rubric_prompt},
                        "assert": [{"type": "llm-rubric", "value": "names the capital"}]}]}
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps(suite))
    frame = pl.DataFrame({"test_id": ["t", "t"], "output": ["Paris", None]})
    results = api.evaluate(path, frame, judge=ScriptedJudge(scripted)).assertion_results
    assert results.sort("case_id")["status"].to_list() == ["pass", "fail"]
