"""Model-graded types: each is one function from a `Graded` context (its rows and judge)
to a frame of outcomes (case_id, test_index, passed, score, reason; passed null = error).

Prompts follow promptfoo's (assertions/prompts.py); replies are parsed strictly
(assertions/replies.py). Without a judge, these end as `error: no judge configured`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

import polars as pl

from ._support import prompts, replies
from .registry import Kind, Value, assertion

if TYPE_CHECKING:
    from ..judge.grading import Graded

NO_JUDGE = "no judge configured"
PENDING = "decided after all batches (needs every output of the test)"


def graded(name: str, value: Value = Value.REQUIRED, *, fields: tuple[str, ...] = (),
           required: tuple[str, ...] = (), threshold: float | None = None,
           aliases: tuple[str, ...] = (), negatable: bool = True) -> Callable:
    return assertion(name, kind=Kind.JUDGE, value=value, fields=fields, required=required,
                     default_threshold=threshold, aliases=aliases, needs_text=False,
                     negatable=negatable)


def _values(item: dict[str, Any]) -> dict[str, Any]:
    """Render values: the case's vars first, then the type's own names (which win)."""
    vars_ = item.pop("__vars", None)
    base = json.loads(vars_) if vars_ else {}
    return {**base, **item}


def _messages(g: Graded, default: prompts.Messages) -> prompts.Messages:
    return prompts.from_rubric_prompt(g.rubric_prompt) if g.rubric_prompt else default


def _with_vars(g: Graded) -> dict[str, pl.Expr]:
    """The case's vars as an input, only when a custom prompt may use them."""
    return {"__vars": pl.col("vars")} if g.rubric_prompt else {}


def _text_value(g: Graded, *fallbacks: str) -> pl.Expr:
    """The assertion value (objects JSON-stringified), else the first field that is set."""
    value = g.spec.value
    expr = pl.lit(json.dumps(value, ensure_ascii=False)) if isinstance(value, (dict, list)) \
        else g.value
    return pl.coalesce(expr, *(g.arg(f) for f in fallbacks)) if fallbacks else expr


def _needs(item: dict[str, Any], name: str, what: str) -> str | None:
    return None if item.get(name) not in (None, "") else f"needs {what}"


def _simple(g: Graded, default: prompts.Messages, inputs: dict[str, pl.Expr],
            parse: Callable[[dict[str, Any], str], replies.Outcome],
            required: dict[str, str] | None = None) -> pl.DataFrame:
    """One judge call per distinct input; `required` maps an input to what is missing.
    Prompts are rendered as Polars expressions over the distinct inputs where they can be."""
    messages = _messages(g, default)
    rendered = prompts.to_exprs(messages, set(inputs))

    def build(item: dict[str, Any]):
        for name, what in (required or {}).items():
            why = _needs(item, name, what)
            if why:
                return why
        if rendered is not None:
            return g.chat([(role, item[f"__m{i}"]) for i, (role, _) in enumerate(messages)])
        return g.chat(prompts.render(messages, _values(dict(item))))

    extra = {} if rendered is None else {f"__m{i}": e for i, e in enumerate(rendered)}
    return g.each({**inputs, **_with_vars(g)},
                  lambda items: g.judge(items, build, parse), rendered=extra)


@graded("llm-rubric", Value.OPTIONAL, fields=("rubric",), required=("value|rubric",))
def llm_rubric(g: Graded) -> pl.DataFrame:
    """The judge grades the output against a rubric; JSON {pass, score, reason}."""
    return _simple(g, prompts.LLM_RUBRIC,
                   {"output": pl.col("output"), "rubric": _text_value(g, "rubric")},
                   lambda _, text: replies.rubric(text, g.threshold))


@graded("model", Value.OPTIONAL, fields=("prompt",), required=("value|prompt",), threshold=0.8)
def model(g: Graded) -> pl.DataFrame:
    """CheckLLM: a free-form judge prompt; the judge's score in [0, 1] must reach 0.8."""
    return _simple(g, prompts.MODEL,
                   {"output": pl.col("output"), "prompt": _text_value(g, "prompt")},
                   lambda _, text: replies.scored(text, g.threshold or 0.8))


@graded("model-graded-closedqa")
def closedqa(g: Graded) -> pl.DataFrame:
    """The judge says whether the output meets a criterion; its reply ends with Y or N."""
    return _simple(g, prompts.CLOSEDQA,
                   {"input": pl.col("prompt"), "completion": pl.col("output"),
                    "criteria": _text_value(g)},
                   lambda _, text: replies.closedqa(text),
                   {"input": "the case's prompt (a `prompt` column or the test's prompt)"})


@graded("factuality", aliases=("model-graded-factuality",))
def factuality(g: Graded) -> pl.DataFrame:
    """The judge compares the output with a reference answer: categories A-E."""
    scores = g.options.get("factuality") or {}
    return _simple(g, prompts.FACTUALITY,
                   {"input": pl.col("prompt"), "ideal": _text_value(g),
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
