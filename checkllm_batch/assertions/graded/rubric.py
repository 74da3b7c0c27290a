"""Model-graded types that grade the output against a rubric or criteria in one judge call per
distinct input (llm-rubric, model, model-graded-closedqa, factuality, llm_judge), and g-eval
(steps first, then a score). Each is one function from a `Graded` context (its rows and judge)
to a frame of outcomes (case_id, test_index, passed, score, reason; passed null = error).
Prompts follow promptfoo's (_support/prompts.py); replies are parsed strictly
(_support/replies.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import polars as pl

from ..registry import Value, promptkit_names
from . import prompts, replies
from .shared import graded, messages_for, needs, render_values, text_value, with_vars

if TYPE_CHECKING:
    from .context import Graded

def _simple(g: Graded, default: prompts.Messages, inputs: dict[str, pl.Expr],
            parse: Callable[[dict[str, Any], str], replies.Outcome],
            required: dict[str, str] | None = None) -> pl.DataFrame:
    """One judge call per distinct input; `required` maps an input to what is missing.
    Prompts are rendered as Polars expressions over the distinct inputs where they can be."""
    messages = messages_for(g, default)
    rendered = prompts.to_exprs(messages, set(inputs))

    def build(item: dict[str, Any]):
        for name, what in (required or {}).items():
            why = needs(item, name, what)
            if why:
                return why
        if rendered is not None:
            return g.chat([(role, item[f"__m{i}"]) for i, (role, _) in enumerate(messages)])
        return g.chat(prompts.render(messages, render_values(dict(item))))

    extra = {} if rendered is None else {f"__m{i}": e for i, e in enumerate(rendered)}
    return g.each({**inputs, **with_vars(g)},
                  lambda items: g.judge(items, build, parse), rendered=extra)


@graded("llm-rubric", Value.OPTIONAL, fields=("rubric",), required=("value|rubric",))
def llm_rubric(g: Graded) -> pl.DataFrame:
    """The judge grades the output against a rubric; JSON {pass, score, reason}."""
    return _simple(g, prompts.LLM_RUBRIC,
                   {"output": pl.col("output"), "rubric": text_value(g, "rubric")},
                   lambda _, text: replies.rubric(text, g.threshold))


@graded("model", Value.OPTIONAL, fields=("prompt",), required=("value|prompt",), threshold=0.8)
def model(g: Graded) -> pl.DataFrame:
    """CheckLLM: a free-form judge prompt; the judge's score in [0, 1] must reach 0.8."""
    return _simple(g, prompts.MODEL,
                   {"output": pl.col("output"), "prompt": text_value(g, "prompt")},
                   lambda _, text: replies.scored(text, g.threshold or 0.8))


@graded("model-graded-closedqa")
def closedqa(g: Graded) -> pl.DataFrame:
    """The judge says whether the output meets a criterion; its reply ends with Y or N."""
    return _simple(g, prompts.CLOSEDQA,
                   {"input": pl.col("prompt"), "completion": pl.col("output"),
                    "criteria": text_value(g)},
                   lambda _, text: replies.closedqa(text),
                   {"input": "the case's prompt (a `prompt` column or the test's prompt)"})


@graded("factuality", aliases=("model-graded-factuality",), test_options=("factuality",))
def factuality(g: Graded) -> pl.DataFrame:
    """The judge compares the output with a reference answer: categories A-E."""
    scores = g.options.get("factuality") or {}
    return _simple(g, prompts.FACTUALITY,
                   {"input": pl.col("prompt"), "ideal": text_value(g),
                    "completion": pl.col("output")},
                   lambda _, text: replies.factuality(text, scores),
                   {"input": "the case's prompt (a `prompt` column or the test's prompt)"})


@graded("llm_judge", Value.NONE, fields=("criteria", "rubric", "min_score", "system_prompt",
                                         "model", "extra"), required=("criteria",))
def llm_judge(g: Graded) -> pl.DataFrame:
    """PromptKit: the judge scores the output against `criteria` (0-1), `min_score` decides."""
    min_score = g.spec.args.get("min_score", g.spec.threshold)
    system = g.spec.args.get("system_prompt") or prompts.LLM_JUDGE_SYSTEM
    template = prompts.render(prompts.LLM_JUDGE, {
        "system_prompt": system, "criteria": "{{ criteria }}", "rubric": "{{ rubric }}",
        "output": "{{ output }}"})
    return _simple(g, template,
                   {"output": pl.col("output"), "criteria": g.arg("criteria"),
                    "rubric": g.arg("rubric")},
                   lambda _, text: replies.judged(text, min_score))


@graded("g-eval", threshold=0.7)
def g_eval(g: Graded) -> pl.DataFrame:
    """G-Eval: the judge writes evaluation steps for the criteria, then scores 0-10."""
    criteria = g.spec.value if isinstance(g.spec.value, list) else [g.spec.value]
    custom = g.rubric_prompt if isinstance(g.rubric_prompt, dict) else {}
    steps_prompt = prompts.from_rubric_prompt(custom["steps"]) if "steps" in custom \
        else prompts.GEVAL_STEPS
    eval_prompt = prompts.from_rubric_prompt(custom["evaluate"]) if "evaluate" in custom \
        else prompts.GEVAL_EVALUATE

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        step_replies = g.runner.run([g.chat(prompts.render(steps_prompt, {"criteria": str(c)}))
                                     for c in criteria])
        steps: dict[str, list[str] | str] = {}
        for c in criteria:
            reply = step_replies[g.chat(prompts.render(steps_prompt, {"criteria": str(c)})).hash]
            why = replies.failure(reply)
            try:
                steps[str(c)] = why or replies.geval_steps(reply.text or "")
            except replies.Unparsable as e:
                g.unparsed(reply)
                steps[str(c)] = str(e)
        pairs = [{"item": i, "criteria": str(c)} for i in items for c in criteria]

        def build(pair):
            found = steps[pair["criteria"]]
            if isinstance(found, str):
                return found
            return g.chat(prompts.render(eval_prompt, {
                "criteria": pair["criteria"], "steps": "\n".join(f"- {s}" for s in found),
                "input": pair["item"]["input"] or "", "output": pair["item"]["output"],
                "maxScore": 10}))
        results = g.judge(pairs, build, lambda _, text: (True, *replies.geval_score(text)))
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

    return g.each({"input": pl.col("prompt"), "output": pl.col("output")}, grade)


# PromptKit's llm_judge, `type` + `params` (suites/promptkit.py translates)
promptkit_names("llm_judge", "llm_judge",
                params={k: k for k in ("criteria", "rubric", "model", "system_prompt",
                                       "min_score", "extra")})
