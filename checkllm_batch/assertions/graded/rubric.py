"""Model-graded types that grade the output against a rubric or criteria in one judge call per
distinct input: llm-rubric, model, llm_judge. Each is one function from a `Graded` context
(its rows and judge) to a frame of outcomes; its prompt (promptfoo's) and its reply parser
(strict: a reply it cannot read is an error) are here."""

from __future__ import annotations

import polars as pl

from ..registry import Value, promptkit_names
from .context import Graded
from .prompts import Messages, render
from .replies import (
    Outcome,
    Unparsable,
    boolean,
    first_json_object,
    reason_text,
    snippet,
    unit_score,
)
from .shapes import BOOLEAN, STRING, UNIT, Shape
from .shared import graded, one_call, text_value

LLM_RUBRIC: Messages = [
    ("system", "You are grading output according to a user-specified rubric. If the statement "
     "in the rubric is true, then the output passes the test. You respond with a JSON object "
     "with this structure: {reason: string, pass: boolean, score: number}\n\nExamples:\n\n"
     "<Output>Hello world</Output>\n<Rubric>Content contains a greeting</Rubric>\n"
     '{"reason": "the content contains the word \'Hello\'", "pass": true, "score": 1.0}\n\n'
     "<Output>Avast ye swabs, repel the invaders!</Output>\n"
     "<Rubric>Does not speak like a pirate</Rubric>\n"
     '{"reason": "\'avast ye\' is a common pirate term", "pass": false, "score": 0.0}'),
    ("user", "<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"),
]

MODEL: Messages = [
    ("system", "You are an evaluator. Apply the user's evaluation instruction to the output "
     "and respond only with a JSON object {\"score\": number between 0 and 1, \"reason\": "
     "string}."),
    ("user", "<Instruction>\n{{ prompt }}\n</Instruction>\n<Output>\n{{ output }}\n</Output>"),
]

LLM_JUDGE: Messages = [
    ("system", "{{ system_prompt }}"),
    ("user", "Criteria: {{ criteria }}\n{{ rubric }}\n\nResponse to evaluate:\n{{ output }}\n\n"
     'Respond only with JSON: {"passed": boolean, "score": number between 0 and 1, '
     '"reasoning": string}'),
]

# the replies each type reads, asked for as JSON schemas with judge `structured: true`
LLM_RUBRIC_SHAPE = Shape("rubric_grade", {"reason": STRING, "pass": BOOLEAN, "score": UNIT})
MODEL_SHAPE = Shape("score", {"reason": STRING, "score": UNIT})
LLM_JUDGE_SHAPE = Shape("judgement", {"reasoning": STRING, "passed": BOOLEAN, "score": UNIT})

LLM_JUDGE_SYSTEM = ("You are an impartial evaluator. Judge the assistant response against "
                    "the criteria and return a score between 0.0 and 1.0 with your reasoning.")


@graded("llm-rubric", Value.OPTIONAL, fields=("rubric",), required=("value|rubric",))
def llm_rubric(g: Graded) -> pl.DataFrame:
    """The judge grades the output against a rubric; JSON {pass, score, reason}."""
    return one_call(g, LLM_RUBRIC,
                   {"output": pl.col("output"), "rubric": text_value(g, "rubric")},
                   lambda _, text: rubric(text, g.threshold), shape=LLM_RUBRIC_SHAPE)


@graded("model", Value.OPTIONAL, fields=("prompt",), required=("value|prompt",), threshold=0.8)
def model(g: Graded) -> pl.DataFrame:
    """CheckLLM: a free-form judge prompt; the judge's score in [0, 1] must reach 0.8."""
    return one_call(g, MODEL,
                   {"output": pl.col("output"), "prompt": text_value(g, "prompt")},
                   lambda _, text: scored(text, g.threshold or 0.8), shape=MODEL_SHAPE)


@graded("llm_judge", Value.NONE, fields=("criteria", "rubric", "min_score", "system_prompt",
                                         "model", "extra"), required=("criteria",))
def llm_judge(g: Graded) -> pl.DataFrame:
    """PromptKit: the judge scores the output against `criteria` (0-1), `min_score` decides."""
    min_score = g.spec.args.get("min_score", g.spec.threshold)
    system = g.spec.args.get("system_prompt") or LLM_JUDGE_SYSTEM
    template = render(LLM_JUDGE, {
        "system_prompt": system, "criteria": "{{ criteria }}", "rubric": "{{ rubric }}",
        "output": "{{ output }}"})
    return one_call(g, template,
                   {"output": pl.col("output"), "criteria": g.arg("criteria"),
                    "rubric": g.arg("rubric")},
                   lambda _, text: judged(text, min_score), shape=LLM_JUDGE_SHAPE)


# PromptKit's llm_judge, `type` + `params` (suites/promptkit.py translates)
promptkit_names("llm_judge", "llm_judge",
                params={k: k for k in ("criteria", "rubric", "model", "system_prompt",
                                       "min_score", "extra")})


def rubric(text: str, threshold: float | None) -> Outcome:
    """llm-rubric: {pass, score, reason}. Needs pass or score; score must be in [0, 1]."""
    obj = first_json_object(text)
    given = obj.get("pass") is not None  # {"pass": null} is no pass, {"score": null} no score
    if not given and obj.get("score") is None:
        raise Unparsable(f"judge reply has neither pass nor score: {snippet(text)}")
    score = _score_or_pass(obj) if obj.get("score") is not None else None
    passed = boolean(obj["pass"]) if given or score is None else score >= (threshold or 0.5)
    if score is None:  # {"pass": true, "score": null} scores 0, as in promptfoo
        score = 0.0 if "score" in obj else float(passed)
    if threshold is not None and score < threshold:
        return False, score, f"Score {score:g} below threshold {threshold:g}: {obj.get('reason')}"
    return passed, score, reason_text(obj.get("reason"))

def _score_or_pass(obj: dict) -> float:
    """The reply's score; one that is not a number falls back to the pass value (1 or 0)
    when the reply gives a pass, as promptfoo 0.123.1 reads `{"pass": true, "score":
    "high"}`; a number outside [0, 1] stays an error."""
    try:
        return unit_score(obj["score"])
    except Unparsable:
        if obj.get("pass") is None or _is_number(obj["score"]):
            raise
        return float(boolean(obj["pass"]))


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)


def scored(text: str, threshold: float, reason_key: str = "reason") -> Outcome:
    """model / llm_judge: {score, reason}; pass is score >= threshold."""
    obj = first_json_object(text)
    if "score" not in obj:
        raise Unparsable(f"judge reply has no score: {snippet(text)}")
    score = unit_score(obj["score"])
    return score >= threshold, score, reason_text(obj.get(reason_key))

def judged(text: str, min_score: float | None) -> Outcome:
    """PromptKit llm_judge: {passed, score, reasoning}; min_score, when given, decides."""
    obj = first_json_object(text)
    if "score" not in obj:
        raise Unparsable(f"judge reply has no score: {snippet(text)}")
    score = unit_score(obj["score"])
    if min_score is not None:
        return score >= min_score, score, reason_text(obj.get("reasoning"))
    if "passed" not in obj:
        raise Unparsable(f"judge reply has no passed (and no min_score is set): {snippet(text)}")
    return boolean(obj["passed"], "passed"), score, reason_text(obj.get("reasoning"))
