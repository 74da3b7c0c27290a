"""What the model-graded types share: their registration, one judge call per distinct input,
the values a prompt is rendered with, the prompt a custom `rubricPrompt` replaces, and
embedding cosine."""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
import polars as pl

from ..registry import Kind, Value, assertion
from . import prompts
from .context import Graded
from .replies import Outcome
from .shapes import Shape


def graded(name: str, value: Value = Value.REQUIRED, *, fields: tuple[str, ...] = (),
           required: tuple[str, ...] = (), threshold: float | None = None,
           aliases: tuple[str, ...] = (), negatable: bool = True,
           test_options: tuple[str, ...] = (), csv_threshold: float | None = None,
           prepare: Callable[[Any, Any], Any] | None = None) -> Callable:
    """Register the decorated function as the model-graded (Kind.JUDGE) type `name`
    (`prepare`: a parse-time check of its value)."""
    return assertion(name, kind=Kind.JUDGE, value=value, fields=fields, required=required,
                     default_threshold=threshold, aliases=aliases, needs_text=False,
                     negatable=negatable, test_options=test_options, csv_threshold=csv_threshold,
                     prepare=prepare)


def one_call(g: Graded, default: prompts.Messages, inputs: dict[str, pl.Expr],
             parse: Callable[[dict[str, Any], str], Outcome],
             required: dict[str, str] | None = None, shape: Shape | None = None) -> pl.DataFrame:
    """One judge call per distinct input; `required` maps an input to what is missing.
    Prompts are rendered as Polars expressions over the distinct inputs where they can be.
    `shape`: the reply's JSON, asked for with judge `structured: true`."""
    messages = messages_for(g, default)
    rendered = prompts.to_exprs(messages, set(inputs))

    def build(item: dict[str, Any]):
        for name, what in (required or {}).items():
            why = needs(item, name, what)
            if why:
                return why
        if rendered is not None:
            return g.chat([(role, item[f"__m{i}"]) for i, (role, _) in enumerate(messages)],
                          shape)
        return g.chat(prompts.render(messages, render_values(dict(item))), shape)

    def read(item: dict[str, Any], text: str) -> Outcome:
        return parse(item, g.read(shape, text))

    extra = {} if rendered is None else {f"__m{i}": e for i, e in enumerate(rendered)}
    return g.each({**inputs, **with_vars(g)},
                  lambda items: g.judge(items, build, read), rendered=extra)


def render_values(item: dict[str, Any]) -> dict[str, Any]:
    """Render values: the case's vars first, then the type's own names (which win)."""
    vars_ = item.pop("__vars", None)
    base = json.loads(vars_) if vars_ else {}
    return {**base, **item}


def case_values(item: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """A custom prompt's values: the case's vars (when `with_vars` read them), then the
    type's own names, which win."""
    vars_ = item.get("__vars")
    return {**(json.loads(vars_) if vars_ else {}), **own}


def messages_for(g: Graded, default: prompts.Messages) -> prompts.Messages:
    return prompts.from_rubric_prompt(g.rubric_prompt) if g.rubric_prompt else default


def with_vars(g: Graded) -> dict[str, pl.Expr]:
    """The case's vars as an input, only when a custom prompt may use them."""
    return {"__vars": pl.col("vars")} if g.rubric_prompt else {}


def text_value(g: Graded, *fallbacks: str) -> pl.Expr:
    """The assertion value (objects JSON-stringified), else the first field that is set."""
    value = g.spec.value
    expr = pl.lit(json.dumps(value, ensure_ascii=False)) if isinstance(value, (dict, list)) \
        else g.value
    return pl.coalesce(expr, *(g.arg(f) for f in fallbacks)) if fallbacks else expr


def needs(item: dict[str, Any], name: str, what: str) -> str | None:
    return None if item.get(name) not in (None, "") else f"needs {what}"


def cosine(a: list[float], b: list[float]) -> float:
    """x.y / (|x| |y|) with the norms as promptfoo sums them (sqrt of the sum of squares):
    components large enough to overflow give NaN or an infinity, as there; a zero vector 0."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(all="ignore"):
        norm = float(np.sqrt(x @ x) * np.sqrt(y @ y))
        return float(x @ y / norm) if norm else 0.0
