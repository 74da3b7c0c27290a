"""G-Eval: the judge writes evaluation steps for each criterion (once a batch), then scores
each output 0-10 against them. Its prompts (promptfoo's) and reply parsers are here."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import polars as pl

from .context import Graded
from .prompts import Messages, from_rubric_prompt, render
from .replies import Outcome, Unparsable, failure, snippet
from .shapes import STRING, Shape, list_of
from .shared import case_values, graded, with_vars

GEVAL_STEPS: Messages = [
    ("user", "Given an evaluation criteria which outlines how you should judge some text, "
     "generate 3-4 concise evaluation steps for that criteria. Return ONLY minified JSON on "
     'one line: {"steps": ["step 1", "step 2", ...]}\n\nEvaluation criteria:\n'
     "{{ criteria }}\n\nJSON:"),
]

GEVAL_EVALUATE: Messages = [
    ("user", "You will be given one Reply for a Source Text below. Your task is to rate the "
     "Reply on one metric, following the evaluation steps.\n\nEvaluation criteria:\n"
     "{{ criteria }}\n\nEvaluation steps:\n{{ steps }}\n\nSource Text:\n{{ input }}\n\n"
     "Reply:\n{{ output }}\n\nReturn ONLY minified JSON on one line: {\"score\": an integer "
     "from 0 to {{ maxScore }}, \"reason\": \"...\"}\n\nJSON:"),
]

# the replies read, as JSON schemas (judge `structured: true`), read as one line of JSON
GEVAL_STEPS_SHAPE = Shape("evaluation_steps", {"steps": list_of(STRING, at_least=1)})
GEVAL_SCORE_SHAPE = Shape("geval_score", {"reason": STRING, "score": {
    "type": "integer", "minimum": 0, "maximum": 10}})


@graded("g-eval", threshold=0.7)
def g_eval(g: Graded) -> pl.DataFrame:
    """G-Eval: the judge writes evaluation steps for the criteria, then scores 0-10."""
    criteria = g.spec.value if isinstance(g.spec.value, list) else [g.spec.value]
    custom = g.rubric_prompt if isinstance(g.rubric_prompt, dict) else {}
    steps_prompt = from_rubric_prompt(custom["steps"]) if "steps" in custom \
        else GEVAL_STEPS
    eval_prompt = from_rubric_prompt(custom["evaluate"]) if "evaluate" in custom \
        else GEVAL_EVALUATE

    def grade(items: list[dict[str, Any]]) -> list[Outcome]:
        def ask_steps(c: Any):
            return g.chat(render(steps_prompt, {"criteria": str(c)}), GEVAL_STEPS_SHAPE)
        step_replies = g.runner.run([ask_steps(c) for c in criteria])
        steps: dict[str, list[str] | str] = {}
        for c in criteria:
            reply = step_replies[ask_steps(c).hash]
            why = failure(reply)
            try:
                steps[str(c)] = why or geval_steps(g.read(GEVAL_STEPS_SHAPE, reply.text or ""))
            except Unparsable as e:
                g.unparsed(reply)
                steps[str(c)] = str(e)
        pairs = [{"item": i, "criteria": str(c)} for i in items for c in criteria]

        def build(pair):
            found = steps[pair["criteria"]]
            if isinstance(found, str):
                return found
            return g.chat(render(eval_prompt, case_values(pair["item"], {
                "criteria": pair["criteria"], "steps": "\n".join(f"- {s}" for s in found),
                "input": pair["item"]["input"] or "", "output": pair["item"]["output"],
                "maxScore": 10})), GEVAL_SCORE_SHAPE)
        results = g.judge(pairs, build, lambda _, text: (
            True, *geval_score(g.read(GEVAL_SCORE_SHAPE, text))))
        out = []
        for k in range(len(items)):
            mine = results[k * len(criteria):(k + 1) * len(criteria)]
            bad = next((r for r in mine if r[0] is None), None)
            if bad:
                out.append(bad)
                continue
            # past `bad`, every reply was read: geval_score gave each a score
            score = sum(r[1] or 0.0 for r in mine) / len(mine)
            out.append((score >= (g.threshold or 0.7), score,
                        "; ".join(r[2] or "" for r in mine) or None))
        return out

    return g.each({"input": pl.col("prompt"), "output": pl.col("output"), **with_vars(g)},
                  grade)


def geval_steps(text: str) -> list[str]:
    for line in text.splitlines():
        start = line.find('{"steps"')
        end = line.rfind("}")
        if start >= 0 and end > start:
            try:
                steps = json.loads(line[start:end + 1])["steps"]
            except (ValueError, KeyError, TypeError):
                break
            if isinstance(steps, list) and steps and all(
                    isinstance(s, str) and s.strip() for s in steps):
                return steps
            break
    raise Unparsable(f'g-eval steps reply has no one-line {{"steps": [...]}}: {snippet(text)}')

def geval_score(text: str, max_score: int = 10) -> tuple[float, str | None]:
    for line in text.splitlines():
        m = re.search(r"\{.*\}", line)
        if m:
            try:
                obj = json.loads(m.group(0))
            except ValueError:
                continue
            if isinstance(obj, dict) and "score" in obj:
                raw = _number(obj["score"])
                if raw is None or not 0 <= raw <= max_score:
                    raise Unparsable(f"g-eval score {obj['score']!r} is not a number in "
                                     f"[0, {max_score}]")
                if not isinstance(obj.get("reason"), str) or not obj["reason"].strip():
                    raise Unparsable(f"g-eval reply has no reason: {snippet(text)}")
                return raw / max_score, obj["reason"]
    raise Unparsable(f'g-eval reply has no one-line {{"score": ...}}: {snippet(text)}')

def _number(value: Any) -> float | None:
    """A finite number, or a numeric string (promptfoo's Number()); else None."""
    if isinstance(value, str) and value.strip():
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
