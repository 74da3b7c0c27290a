"""Model-graded verdicts against promptfoo 0.123.1's, for the same judge replies.

Each row of tests/promptfoo_kit/graded/<area>.jsonl holds an output, one model-graded
assertion, the case's vars, prompt and test options, the judge's scripted "replies", and the
pass and score promptfoo gave when its grader got those replies (recorded by
promptfoo_kit/record_graded.py with the offline kit, never from our output). Here a local
OpenAI-compatible judge on 127.0.0.1 answers our evaluator with the same replies: in call
order, or by the first [marker, reply] pair whose marker is in the request; and embeds each
text as judge_server's `vector`, or as the row's "embeddings" map (text -> vector) says. A
row with "differs" is a deliberate difference (listed in docs/assertions/graded.md): we give
the verdict in its "ours" field instead (pass null: an error). A row with "pending" is a known
miss still to be decided (named there), expected to fail until it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from fixtures.promptfoo_kit import check_differences_say_why, check_verdict, params, table_rows
from judge_server import KEY_ENV, SECRET, JudgeServer, vector

from checkllm_batch import api

KIT = Path(__file__).parents[1] / "promptfoo_kit" / "graded"
ROWS = table_rows(KIT)


def scripted(replies: list) -> Any:
    """The judge's answer to a request: by marker (pairs), else the next reply in order (the
    last one answers any further call)."""
    queue = list(replies)

    def answer(body: dict[str, Any]) -> str:
        if queue and isinstance(queue[0], list):
            request = json.dumps(body.get("messages"), ensure_ascii=False)
            return next((r for marker, r in queue
                         if json.dumps(marker, ensure_ascii=False)[1:-1] in request), queue[-1][1])
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return answer


def embedder(vectors: dict[str, list[float]]) -> Any:
    """The judge's embeddings: the row's scripted vector of a text, else `vector`."""
    def embed(body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return {"object": "list", "model": body.get("model"), "data": [
            {"object": "embedding", "index": i, "embedding": vectors[t] if t in vectors
             else vector(t)} for i, t in enumerate(inputs)],
            "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    return embed


@pytest.fixture(scope="module")
def judge():
    """One local judge for the module; each row sets its answers."""
    server = JudgeServer().start()
    yield server
    server.stop()


def _ours(tmp_path: Path, judge: JudgeServer, row: dict) -> dict:
    judge.answer = scripted(row.get("replies", [""]))
    judge.embed = embedder(row.get("embeddings", {}))  # type: ignore[method-assign]
    suite = {"judge": {"model": "gpt-4o-mini", "api_key_env": KEY_ENV, "base_url": judge.url,
                       "retries": 0},
             "tests": [{"description": "t", "options": row.get("options", {}),
                        "assert": [row["assert"]]}]}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, allow_unicode=True), encoding="utf-8")
    frame = pl.DataFrame([{"test_id": "t", "output": row["output"],
                           "prompt": row.get("prompt", "x"), **row.get("vars", {})}])
    try:
        run = api.evaluate(path, frame)
    except Exception as exc:  # a suite promptfoo errors on may be refused at parse time
        return {"status": "error", "pass": None, "score": None, "reason": str(exc)}
    return run.assertion_results.select("status", "pass", "score", "reason").to_dicts()[0]


@pytest.mark.parametrize("row", params(ROWS))
def test_verdict_matches_promptfoo(tmp_path, monkeypatch, judge, row):
    monkeypatch.setenv(KEY_ENV, SECRET)
    check_verdict(_ours(tmp_path, judge, row), row)


def test_every_difference_says_why():
    check_differences_say_why(ROWS)


# Issue 41: replies promptfoo 0.123.1 read differently from how we did. `{"pass": true,
# "score": "high"}` is the kit's recorded row 20 of graded/llm-rubric.jsonl (pass, score 1;
# it was a listed difference). These are as the issue's replay of the same replies gave
# promptfoo's answers (not re-recorded with the kit here): the assertion, the replies, the
# embeddings, the vars, and promptfoo's pass and score.
ISSUE_41 = [
    # cosine of vectors whose squares overflow: inf / inf is NaN, a fail with score NaN
    ({"type": "similar", "value": "B"}, [""], {"A": [1e200, 1e200], "B": [1e200, 1e200]}, {},
     (False, "nan")),
    # a custom rubricPrompt sees the case's vars: the reply is chosen by the var's text
    ({"type": "context-faithfulness", "threshold": 0.5,
      "rubricPrompt": ["Statements of {{answer}} for {{topic}}", "NLI {{statements}}"]},
     [["for astronomy", "s1"], ["NLI", "Final verdict for each statement in order: Yes."],
      ["for ", "g1\ng2"]], {}, {"topic": "astronomy", "context": "c", "query": "q"},
     (True, 1.0)),
]


@pytest.mark.parametrize("assertion, replies, embeddings, vars_, want", ISSUE_41)
def test_issue_41_replies_read_as_promptfoo(tmp_path, monkeypatch, judge, assertion, replies,
                                            embeddings, vars_, want):
    monkeypatch.setenv(KEY_ENV, SECRET)
    ours = _ours(tmp_path, judge, {"output": "A", "assert": assertion, "replies": replies,
                                   "embeddings": embeddings, "vars": vars_})
    score = ours["score"]
    assert ours["pass"] == want[0], ours
    assert (str(score) == want[1]) if isinstance(want[1], str) else score == want[1], ours
