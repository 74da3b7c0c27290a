"""What a model-graded type function gets: its rows, its judge, and helpers that turn the
distinct inputs of a batch into requests, send them all at once, and parse the replies."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import polars as pl

from ...js import template
from ...judge.protocol import JudgeRunner, Reply, Request, chat, embedding
from ...suites.judge import JudgeConfig
from ...suites.model import AssertionSpec
from .replies import Outcome, Unparsable, failure, verdict_probability
from .shapes import Shape

OUTCOME_SCHEMA = {"passed": pl.Boolean, "score": pl.Float64, "reason": pl.String}
Build = Callable[[dict[str, Any]], "Request | str"]  # a request, or why there is none


@dataclass
class Graded:
    spec: AssertionSpec
    rows: pl.DataFrame  # case_id, test_index, output, prompt, vars, var.<name>...
    threshold: float | None
    runner: JudgeRunner
    config: JudgeConfig
    model: str
    rubric_prompt: Any = None  # the user's override, if any
    options: dict[str, Any] = field(default_factory=dict)  # the tests' merged `options`
    costs: dict[int, float] = field(default_factory=dict)  # id(item) -> cost of its calls
    repeat: int = 0  # the n-th grading of these rows (judge `repeat`): cached apart
    # id(item) -> the verdict token's probability in its reply (judge top_logprobs)
    sure: dict[int, float | None] = field(default_factory=dict)

    @property
    def value(self) -> pl.Expr:
        return template.text(self.spec.value, self.rows) \
            if not isinstance(self.spec.value, (list, dict)) else pl.lit(None, pl.String)

    def arg(self, name: str) -> pl.Expr:
        """An assertion field (a literal or a `{{var}}` template) as a column."""
        value = self.spec.args.get(name)
        if value is None:
            return pl.lit(None, pl.String)
        return template.text(value, self.rows)

    def var(self, name: str) -> pl.Expr:
        """A test var (or outputs column) as text; a list var stays its JSON text."""
        column = template.var_column(name)
        if column in self.rows.columns:
            return pl.col(column)
        return pl.col("vars").str.json_path_match(f"$.{name}")

    def chat(self, messages: list[tuple[str, str]], shape: Shape | None = None) -> Request:
        """A chat request; with judge `structured: true`, constrained to the type's `shape`."""
        structured = shape.response_format() if shape and self.config.structured else None
        asked = self.config.top_logprobs
        return chat(self.model, messages, repeat=self.repeat,
                    temperature=self.config.temperature, max_tokens=self.config.max_tokens,
                    response_format=structured, logprobs=True if asked else None,
                    top_logprobs=asked)

    def read(self, shape: Shape | None, text: str) -> str:
        """A reply as its type's parser reads it: a structured reply of `shape` becomes the
        free text it stands for (the same verdict); without the setting, unchanged."""
        return shape.read(text) if shape and self.config.structured else text

    def embed(self, text: str) -> Request:
        return embedding(self.config.embedding_model, text)

    def each(self, inputs: dict[str, pl.Expr],
             grade: Callable[[list[dict[str, Any]]], list[Outcome]],
             rendered: dict[str, pl.Expr] | None = None) -> pl.DataFrame:
        """Grade each distinct combination of `inputs` once; join the outcomes to the rows.
        `rendered`: columns computed over the distinct inputs (the prompts), given to grade."""
        names = list(inputs)
        frame = self.rows.select("case_id", "test_index", *(e.alias(n) for n, e in inputs.items()))
        uniq = frame.select(names).unique(maintain_order=True)
        if rendered:
            uniq = uniq.with_columns(**rendered)
        self.runner.stats.graded += frame.height
        items = uniq.to_dicts()
        outcomes = grade(items)
        columns = {"passed": [o[0] for o in outcomes], "score": [o[1] for o in outcomes],
                   "reason": [o[2] for o in outcomes],
                   "cost": [self.costs.get(id(item), 0.0) for item in items]}
        schema = {**OUTCOME_SCHEMA, "cost": pl.Float64}
        if self.config.top_logprobs:  # how sure the judge was of each verdict
            columns["confidence"] = [self.sure.get(id(item)) if o[0] is not None else None
                                     for item, o in zip(items, outcomes)]
            schema["confidence"] = pl.Float64
        table = uniq.select(names).with_columns(pl.DataFrame(columns, schema=schema))
        joined = frame.join(table, on=names, how="left", nulls_equal=True, maintain_order="left")
        return joined.select("case_id", "test_index", *schema)

    def attribute(self, item: dict[str, Any], *replies: Reply | str | None) -> None:
        """Count these replies' cost towards the cases of `item` (CheckLLM `cost`)."""
        origin = item.get("item", item) if isinstance(item.get("item"), dict) else item
        for reply in replies:
            if isinstance(reply, Reply) and reply.cost:
                self.costs[id(origin)] = self.costs.get(id(origin), 0.0) + reply.cost
            if isinstance(reply, Reply) and reply.logprobs:  # the last reply read decides
                self.sure[id(origin)] = verdict_probability(reply.logprobs)

    def ask(self, items: list[dict[str, Any]], build: Build) -> list[Reply | str]:
        """Send every item's request in one go; a Reply per item, or why there is none."""
        built = [build(item) for item in items]
        replies = self.runner.run([b for b in built if isinstance(b, Request)])
        out = [replies[b.hash] if isinstance(b, Request) else b for b in built]
        for item, reply in zip(items, out):
            self.attribute(item, reply)
        return out

    def judge(self, items: list[dict[str, Any]], build: Build,
              parse: Callable[[dict[str, Any], str], Outcome]) -> list[Outcome]:
        """One request per item, its reply parsed strictly: any failure is an error outcome."""
        return [self.settle(reply, partial(parse, item))
                for item, reply in zip(items, self.ask(items, build))]

    def settle(self, reply: Reply | str, parse: Callable[[str], Outcome]) -> Outcome:
        """The outcome of a reply: its parse, or an error outcome saying why there is none.
        A reply that does not parse is recorded as `unparsed` (asked again next run)."""
        why = failure(reply)
        if why is not None:
            return None, None, why
        assert isinstance(reply, Reply)
        try:
            return parse(reply.text or "")
        except Unparsable as e:
            self.unparsed(reply)
            return None, None, str(e)

    def unparsed(self, reply: Reply | str) -> None:
        """This reply could not be read: never serve it from the cache again."""
        if isinstance(reply, Reply):
            self.runner.unparsed(reply)

