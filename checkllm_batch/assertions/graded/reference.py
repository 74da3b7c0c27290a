"""Model-graded types that judge the output against a criterion or a reference answer, one
judge call per distinct input: model-graded-closedqa (Y or N) and factuality (categories
A-E). Their prompts (promptfoo's) and reply parsers are here."""

from __future__ import annotations

import re

import polars as pl

from .context import Graded
from .prompts import Messages
from .replies import Outcome, Unparsable, first_json_object, snippet
from .shapes import STRING, Shape, one_of
from .shared import graded, one_call, text_value

CLOSEDQA: Messages = [
    ("system", "You are assessing a submitted answer on a given task based on a criterion. "
     "Here is the data:\n[BEGIN DATA]\n***\n[Task]: {{ input }}\n***\n[Submission]: "
     "{{ completion }}\n***\n[Criterion]: {{ criteria }}\n***\n[END DATA]\n"
     "Does the submission meet the criterion? First, write out in a step by step manner your "
     "reasoning about the criterion to be sure that your conclusion is correct. Avoid simply "
     "stating the correct answers at the outset. Then print only the single character \"Y\" "
     "or \"N\" (without quotes or punctuation) on its own line corresponding to the correct "
     "answer. At the end, repeat just the letter again by itself on a new line.\n\nReasoning:"),
]

FACTUALITY: Messages = [
    ("system", "You are a precise factuality evaluator that compares a submitted answer to an "
     "expert answer. Ignore differences in style, grammar, or punctuation; focus on the "
     "factual content. Choose one option:\n(A) The submitted answer is a subset of the expert "
     "answer and is fully consistent with it.\n(B) The submitted answer is a superset of the "
     "expert answer and is fully consistent with it.\n(C) The submitted answer contains all "
     "the same details as the expert answer.\n(D) There is a disagreement between the "
     "submitted answer and the expert answer.\n(E) The answers differ, but these differences "
     "don't matter from the perspective of factuality.\n"
     'Respond ONLY with JSON: {"category": "A" | "B" | "C" | "D" | "E", "reason": "..."}'),
    ("user", "<question>{{ input }}</question>\n<expert_answer>{{ ideal }}</expert_answer>\n"
     "<submitted_answer>{{ completion }}</submitted_answer>"),
]

# the replies read, as JSON schemas (judge `structured: true`): closedqa's reasoning then its
# letter, read as the free-text reply it stands for (the reasoning, the letter on its line)
CLOSEDQA_SHAPE = Shape("closedqa", {"reasoning": STRING, "answer": one_of("Y", "N")},
                       lambda obj: f"{obj['reasoning']}\n{obj['answer']}")
FACTUALITY_SHAPE = Shape("factuality", {"reason": STRING,
                                        "category": one_of("A", "B", "C", "D", "E")})


@graded("model-graded-closedqa")
def closedqa(g: Graded) -> pl.DataFrame:
    """The judge says whether the output meets a criterion; its reply ends with Y or N."""
    return one_call(g, CLOSEDQA,
                   {"input": pl.col("prompt"), "completion": pl.col("output"),
                    "criteria": text_value(g)},
                   lambda _, text: closedqa_verdict(text),
                   {"input": "the case's prompt (a `prompt` column or the test's prompt)"},
                   shape=CLOSEDQA_SHAPE)


@graded("factuality", aliases=("model-graded-factuality",), test_options=("factuality",))
def factuality(g: Graded) -> pl.DataFrame:
    """The judge compares the output with a reference answer: categories A-E."""
    scores = g.options.get("factuality") or {}
    return one_call(g, FACTUALITY,
                   {"input": pl.col("prompt"), "ideal": text_value(g),
                    "completion": pl.col("output")},
                   lambda _, text: factuality_verdict(text, scores),
                   {"input": "the case's prompt (a `prompt` column or the test's prompt)"},
                   shape=FACTUALITY_SHAPE)


def closedqa_verdict(text: str) -> Outcome:
    end = text.rstrip()
    if end.endswith("Y"):
        return True, 1.0, "The submission meets the criterion"
    if end.endswith("N"):
        return False, 0.0, f"The submission does not meet the criterion: {snippet(text, 200)}"
    raise Unparsable(f"closedqa reply does not end with Y or N: {snippet(text[-80:])}")

FACTUALITY_KEYS = {"A": "subset", "B": "superset", "C": "agree", "D": "disagree",
                   "E": "differButFactual"}

def factuality_verdict(text: str, scores: dict[str, float]) -> Outcome:
    reason, category = None, None
    try:
        obj = first_json_object(text)
        if isinstance(obj.get("category"), str) and obj["category"]:
            category, reason = obj["category"].strip().upper(), obj.get("reason")
    except Unparsable:
        pass
    if category is None:  # no JSON verdict: the first "(X)" or "X)", as promptfoo reads it
        m = re.search(r"\(?([A-Ea-e])\)", text)
        category = m.group(1).upper() if m else ""
    if category not in FACTUALITY_KEYS:
        raise Unparsable(f"factuality reply has no category A-E: {snippet(text)}")
    default = 0.0 if category == "D" else 1.0
    score = float(scores.get(FACTUALITY_KEYS[category], default))
    return score > 0, score, f"category {category}: {reason or FACTUALITY_KEYS[category]}"
