"""Text matching (docs/assertions/text.md): contains*, starts-with, equals, regex, word-count,
finish-reason, is-refusal. All vectorised Polars expressions."""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from typing import Any, Callable

import orjson
import polars as pl

from ..js.jsregex import ASTRAL, ASTRAL_CHAR, JsRegex, compile_js
from ..js.jsvalue import js_string, to_number
from ..js.whitespace import JS_SPACE, JS_SPACE_CLASS, WORD
from .batch.distinct import Outcome, over_distinct
from .batch.values import short_value
from .compiled import Ctx, Verdict
from .parsers.refusal import APOSTROPHES, PREFIXES, REFUSAL
from .registry import CsvValue, Value, assertion, promptkit_names


def quoted(value: pl.Expr | str, limit: int = 80, words: str = "") -> pl.Expr:
    """`words` and the value in quotes for a reason, the value shortened to `limit`
    characters (its first limit - 1 and "…"). One concatenation of short pieces: each pass
    over a column of per-row texts copies them."""
    value = value if isinstance(value, pl.Expr) else pl.lit(value)
    last = pl.when(value.str.len_chars() > limit).then(pl.lit("…")).otherwise(
        value.str.slice(limit - 1, 1))
    return pl.concat_str([pl.lit(words + '"'), value.str.slice(0, limit - 1), last, pl.lit('"')])


def on_failing(ctx: Ctx, passed: pl.Expr, text: Callable[[pl.Expr], pl.Expr], over: pl.Expr
               ) -> pl.Expr:
    """`text(over)`, a part of the reason, computed only on the rows whose reason shows it
    (those failing, negation included; null on the others) when the value differs per row:
    quoting or listing each row's own value costs nothing on the rows that pass: their
    value is masked before `text` reads it."""
    if ctx.row is None:
        return text(over)  # a literal: computed once
    return text(pl.when(passed == pl.lit(ctx.spec.negate)).then(over))


def quoting(ctx: Ctx, passed: pl.Expr, words: str, value: pl.Expr) -> pl.Expr:
    """`words "value"` for the reason (value shortened), on the rows whose reason shows it.
    `passed` should be a column (`ctx.once`): it is read again here."""
    return on_failing(ctx, passed, lambda v: quoted(v, words=words), value)


def _scalar(value: Any, spec: Any) -> None:
    if isinstance(value, (dict, list, bool)) or value is None or value == "" or (
            isinstance(value, float) and math.isnan(value)):  # promptfoo refuses NaN too
        raise ValueError("value must be a non-empty string or number")


def _text(value: Any, spec: Any) -> None:
    if not isinstance(value, str) or value == "":
        raise ValueError("value must be a non-empty string (promptfoo rejects a number here)")


# a per-row value is checked too: promptfoo errors on an empty one (a null var renders empty)
SCALAR: dict[str, Any] = {"prepare": _scalar, "prepared_dtype": pl.Boolean,
                          "prepare_column": lambda text: pl.when(text != "").then(True)}


@assertion("contains", **SCALAR)
def contains(ctx: Ctx) -> Verdict:
    """Output contains the value (case-sensitive substring)."""
    found = ctx.once(ctx.output.str.contains(ctx.value, literal=True))
    return Verdict(found, quoting(ctx, found, "contain ", ctx.value))


@assertion("icontains", **SCALAR)
def icontains(ctx: Ctx) -> Verdict:
    """Output contains the value, ignoring case."""
    found = ctx.once(ctx.output.str.to_lowercase().str.contains(ctx.value.str.to_lowercase(),
                                                                literal=True))
    return Verdict(found, quoting(ctx, found, "contain (any case) ", ctx.value))


@assertion("starts-with", **{**SCALAR, "prepare": _text}, csv_threshold=0.75)
def starts_with(ctx: Ctx) -> Verdict:
    """Output starts with the value (no trimming)."""
    found = ctx.once(ctx.output.str.starts_with(ctx.value))
    return Verdict(found, quoting(ctx, found, "start with ", ctx.value))


def split_items(value: Any) -> list[str]:
    """promptfoo's list for contains-any/all: a list's items as strings, or a string split as
    its parseCommaSeparatedValues splits it (quotes keep commas; inside quotes `""`, `\\"`
    and `\\\\` escape, any other backslash is kept; `""` is an empty item; repeated
    commas are skipped; a quoted item must be followed by a comma or the end)."""
    if isinstance(value, list):
        return [js_string(v) for v in value]
    if not isinstance(value, str):
        raise ValueError("value must be a list or a comma-separated string")
    items: list[str] = []
    i = 0
    while True:
        while i < len(value) and value[i] in JS_SPACE + ",":
            i += 1
        if i >= len(value):
            return items
        if value[i] != '"':
            end = value.find(",", i)
            end = len(value) if end < 0 else end
            items.append(value[i:end].strip(JS_SPACE))
            i = end
            continue
        item, i = _quoted_item(value, i + 1)
        items.append(item)
        while i < len(value) and value[i] in JS_SPACE:
            i += 1
        if i < len(value) and value[i] != ",":
            raise ValueError(f"expected a comma after the quoted item {item!r} in {value!r}")


def _quoted_item(text: str, i: int) -> tuple[str, int]:
    """The quoted item starting after its opening quote at `i`, and where it ends."""
    buf = []
    while i < len(text):
        pair = text[i:i + 2]
        if pair in ('\\"', "\\\\", '""'):
            buf.append(pair[1])
            i += 2
        elif text[i] == '"':
            return "".join(buf), i + 1
        else:
            buf.append(text[i])
            i += 1
    raise ValueError(f"unterminated quoted item in {text!r}")


def _items(value: Any, spec: Any) -> list[str]:
    if value is None or value == "" or value is False or value == 0:
        raise ValueError("value must list the texts to look for")
    return split_items(value)  # an empty list: contains-any fails, contains-all passes


def listing(items: pl.Expr) -> pl.Expr:
    """A list column as `"a", "b"`: each item a JSON string (quotes, backslashes and line
    breaks escaped), joined by ", "."""
    escaped = pl.element().str.replace_many(["\\", '"', "\n", "\r", "\t"],
                                            ["\\\\", '\\"', "\\n", "\\r", "\\t"])
    quoted_items = pl.concat_str([pl.lit('"'), items.list.eval(escaped).list.join('", "'),
                                  pl.lit('"')])
    return pl.when(items.list.len() == 0).then(pl.lit("")).otherwise(quoted_items)


HITS = pl.Struct({"any": pl.Boolean, "all": pl.Boolean, "missing": pl.String,
                  "found": pl.String, "count": pl.UInt32})


def item_hits(ctx: Ctx, items: pl.Expr, fold: bool, want: tuple[str, ...]) -> pl.Expr:
    """Struct of `want` (any, all, missing, found, count) per row: each item of the row's own
    list looked for in its output, all rows at once (lists exploded, a column pattern,
    regrouped); only the wanted aggregates are computed."""
    hit, item = pl.col("hit"), pl.col("items")
    aggregates = {"any": hit.any(), "all": hit.all(),
                  "missing": item.filter(~hit).str.join(", "),
                  "found": item.filter(hit).unique(maintain_order=True).str.join(", "),
                  "count": hit.sum().cast(pl.UInt32)}
    dtype = pl.Struct({name: HITS.to_schema()[name] for name in want})

    def run(pairs: pl.Series) -> pl.Series:
        frame = pairs.struct.unnest().with_row_index("row")
        text, needle = pl.col("o"), item
        if fold:
            text, needle = text.str.to_lowercase(), needle.str.to_lowercase()
        hits = frame.explode("items", empty_as_null=True).with_columns(  # a row each
            hit=text.str.contains(needle, literal=True)).group_by("row", maintain_order=True).agg(
            **{name: aggregates[name] for name in want})
        valid = frame["o"].is_not_null() & frame["items"].is_not_null()
        none = frame["items"].list.len() == 0  # promptfoo: any of nothing fails, all passes
        nothing = {"any": False, "all": True, "missing": "", "found": "", "count": 0}
        return hits.select(pl.when(pl.lit(valid)).then(pl.struct(
            pl.when(pl.lit(none)).then(pl.lit(nothing[name], HITS.to_schema()[name]))
            .otherwise(name).alias(name) for name in want))).to_series()

    return ctx.once(pl.struct(o=ctx.output, items=items).map_batches(run, return_dtype=dtype))


def _list_verdict(ctx: Ctx, fold: bool, every: bool) -> Verdict:
    text = ctx.output.str.to_lowercase() if fold else ctx.output
    items: list[str] | None = ctx.fixed
    if items is not None:  # the same list on every row: Polars' multi-pattern search
        hits = [text.str.contains(s.lower() if fold else s, literal=True) for s in items]
        missing: pl.Expr | None
        if not items:  # promptfoo: any of nothing fails, all of nothing passes
            found, missing = pl.lit(every), pl.lit("")
        else:
            found = pl.all_horizontal(hits) if every else text.str.contains_any(
                [s.lower() for s in items] if fold else items)
            missing = pl.concat_list([pl.when(~h).then(pl.lit(s)) for h, s in zip(hits, items)]
                                     ).list.drop_nulls().list.join(", ")
    else:
        result = item_hits(ctx, ctx.prepared, fold, ("all", "missing") if every else ("any",))
        found = result.struct.field("all" if every else "any")
        missing = result.struct.field("missing") if every else None
    prefix = pl.lit(f"contain{' (any case)' if fold else ''} {'all' if every else 'one'} of ")
    expect = on_failing(ctx, found, lambda items: pl.concat_str([prefix, listing(items)]),
                        ctx.prepared)
    detail = (pl.when(missing != "").then(pl.concat_str([pl.lit("missing: "), missing]))
              if every else None)
    return Verdict(found, expect, detail=detail)




def plain_items(text: pl.Expr) -> pl.Expr:
    """split_items in Polars for text without quotes (null for the rest, and for no items)."""
    plain = ~text.str.contains('"', literal=True) & text.str.contains(f"[^,{JS_SPACE_CLASS}]")
    items = text.str.split(",").list.eval(pl.element().str.strip_chars(JS_SPACE))
    return pl.when(plain).then(items.list.filter(pl.element() != ""))


ITEMS: dict[str, Any] = {"prepare": _items, "prepared_dtype": pl.List(pl.String), "prepare_column": plain_items,
                         "csv_value": CsvValue.ITEMS}


@assertion("contains-any", **ITEMS)
def contains_any(ctx: Ctx) -> Verdict:
    """Output contains at least one of the listed values."""
    return _list_verdict(ctx, fold=False, every=False)


@assertion("icontains-any", **ITEMS)
def icontains_any(ctx: Ctx) -> Verdict:
    """Output contains at least one of the listed values, ignoring case."""
    return _list_verdict(ctx, fold=True, every=False)


@assertion("contains-all", **ITEMS)
def contains_all(ctx: Ctx) -> Verdict:
    """Output contains every listed value."""
    return _list_verdict(ctx, fold=False, every=True)


@assertion("icontains-all", **ITEMS)
def icontains_all(ctx: Ctx) -> Verdict:
    """Output contains every listed value, ignoring case."""
    return _list_verdict(ctx, fold=True, every=True)


def _canonical(value: Any) -> Any:
    """JSON value normalised so that == is JavaScript's deep strict equality."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):  # -0 differs from 0, as in isDeepStrictEqual
        return ("num", float(value), math.copysign(1.0, value) if value == 0 else 1.0)
    if isinstance(value, list):
        return ("list", tuple(_canonical(v) for v in value))
    return ("obj", frozenset((k, _canonical(v)) for k, v in value.items()))


def _expected(value: Any, spec: Any) -> tuple[Any, Any] | None:
    """(canonical form, value) of a mapping or list value, compared as JSON; None for text."""
    if isinstance(value, (dict, list)) or value is None:
        return _canonical(value), value
    return None


_MINUS_ZERO = re.compile(r"-0(?![\d.eE])")  # the integer -0 (or the text "-0" in a string)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parsed(text: str) -> Any:
    """The JSON text parsed as JSON.parse reads it: an integer `-0` keeps its sign (orjson
    reads it as 0; promptfoo's deep equality tells -0 from 0), and a number beyond the
    doubles is ±Infinity (orjson refuses it): those texts are read again by `json`."""
    if not _MINUS_ZERO.search(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text, parse_int=float, parse_constant=_no_constant)


def _same_json(text: str | None, expected: tuple[Any, Any]) -> Outcome:
    if text is None:
        return False, "output is not valid JSON"
    try:
        return _canonical(_parsed(text)) == expected[0], None
    except (ValueError, TypeError, RecursionError):  # json: nesting near 1000
        return False, "output is not valid JSON"


@assertion("equals", json_ok=True, null_value=True, prepare=_expected)
def equals(ctx: Ctx) -> Verdict:
    """Output equals the value exactly; a mapping/list value is compared as parsed JSON."""
    as_text = ctx.fixed is None if ctx.row is None else not ctx.row.structured
    if as_text:  # a scalar, or a rendered template: text
        same = ctx.once(ctx.output == ctx.value)
        return Verdict(same, quoting(ctx, same, "equal ", ctx.value))
    return ctx.checked(_same_json, lambda expected: "equal the JSON value "
                       + json.dumps(expected[1], ensure_ascii=False))


def _regex(value: Any, spec: Any) -> JsRegex:
    if not isinstance(value, str) or not value:
        raise ValueError("value must be a non-empty regular expression string")
    return compile_js(value)


def _row_regex(value: Any, spec: Any) -> JsRegex:
    """A per-row pattern, translated; Rust compiles it once, in the match itself."""
    if not isinstance(value, str) or not value:
        raise ValueError("value must be a non-empty regular expression string")
    return compile_js(value, rust_checked=False)


@functools.lru_cache(maxsize=4096)
def _checked(source: str) -> JsRegex:
    return compile_js(source)


def _js_test(text: str | None, rx: JsRegex) -> Outcome:
    """JavaScript's RegExp.test in Python, for a pattern Rust cannot run or text that needs
    UTF-16 code units."""
    if text is None:
        return None, None
    if not rx.backtracking:  # a per-row pattern Rust could not compile: the other engine's?
        try:
            rx = _checked(rx.source)
        except ValueError as e:
            return None, f"value {short_value(rx.source)}: {e}"
    if rx.units is not None and ASTRAL_CHAR.search(text):
        return rx.search_units(text), None
    return rx.search(text), None


def js_matches(rx: JsRegex, text: pl.Expr) -> pl.Expr:
    """Whether each text matches, as JavaScript's `RegExp.test` says: in Rust where it can,
    else once per distinct text in Python."""
    if rx.backtracking and rx.units is None:
        return over_distinct(text, lambda t: (rx.search(t), None)).struct.field("ok")
    if rx.units is None:
        return text.str.contains(rx.pattern)
    astral = text.str.contains(ASTRAL)
    found = text.str.contains(rx.pattern) if not rx.backtracking else \
        over_distinct(text, lambda t: (rx.search(t), None)).struct.field("ok")
    by_units = over_distinct(pl.when(astral).then(text),
                             lambda t: (None if t is None else rx.search_units(t), None))
    return pl.when(astral).then(by_units.struct.field("ok")).otherwise(found)


# a pattern without a JavaScript metacharacter matches where its text occurs: a substring
_PLAIN = r"^[^\\^$.|?*+()\[\]{}]+$"


@assertion("regex", prepare=_regex, prepare_row=_row_regex)
def regex(ctx: Ctx) -> Verdict:
    """Output matches the JavaScript regular expression (search anywhere, no flags)."""
    rx: JsRegex | None = ctx.fixed
    if rx is not None:
        return Verdict(ctx.once(js_matches(rx, ctx.output)), f"match /{rx.source}/")
    # per row: plain-text patterns are substring searches; Rust runs the other patterns it
    # can (a column of patterns, each compiled once); the patterns it cannot, and
    # UTF-16-sensitive ones on text beyond U+FFFF, run in Python once per distinct pair
    plain = ctx.once(ctx.value.str.contains(_PLAIN))
    rust = ctx.column(lambda r: None if r.backtracking else r.pattern, pl.String,
                      lambda v: pl.when(plain).then(v))
    by_units = ctx.column(lambda r: r.units is not None, pl.Boolean,
                          lambda v: pl.when(plain).then(False))
    matched = ctx.once(ctx.output.str.contains(pl.when(plain).then(None).otherwise(rust),
                                               strict=False))  # null: Rust cannot compile
    found = pl.when(plain).then(ctx.output.str.contains(ctx.value, literal=True)
                                ).otherwise(matched)
    # (the text is searched for characters beyond U+FFFF only where the pattern needs it)
    slow_rows = ~plain & (rust.is_null() | (matched.is_null() & ctx.output.is_not_null())
                          | (by_units & pl.when(by_units).then(ctx.output).str.contains(ASTRAL)))
    slow = ctx.checked(_js_test, "", where=slow_rows, valid=plain)
    passed = ctx.once(pl.when(slow_rows).then(slow.passed).otherwise(found))
    return Verdict(passed, on_failing(ctx, passed, lambda source: pl.concat_str(
        [pl.lit("match /"), source, pl.lit("/")]), ctx.value), detail=slow.detail)


def _word_range(value: Any, spec: Any) -> tuple[float, float, str]:
    """[min, max] as promptfoo reads the value, and what the reason expects: an exact count
    (a number, or text that is one) gives min == max; a mapping its `min` and/or `max`,
    which must be in order. Bounds compare as JavaScript compares them with a count
    (`Number()`: " 3 " is 3, null is 0); a bound that is no number compares false either
    way (`min` +inf, `max` -inf)."""
    if not isinstance(value, dict):
        exact = to_number(value) if isinstance(value, str) or (
            isinstance(value, (int, float)) and not isinstance(value, bool)) else math.nan
        if math.isnan(exact):
            raise ValueError("value must be a number or a mapping with `min` and/or `max`")
        return exact, exact, f"have exactly {exact:g} words"
    if set(value) - {"min", "max"} or not value:
        raise ValueError("value must be a number or a mapping with `min` and/or `max`")
    low, high = (to_number(value[k]) if k in value else None for k in ("min", "max"))
    if low is not None and high is not None and not low <= high:
        raise ValueError(f"min ({value['min']}) must be less than or equal to max "
                         f"({value['max']})")
    expect = " and ".join(f"at {word} {value[k]}" for k, word in (("min", "least"),
                                                                   ("max", "most")) if k in value)
    return (-math.inf if low is None else math.inf if math.isnan(low) else low,
            math.inf if high is None else -math.inf if math.isnan(high) else high,
            f"have {expect} words")


@assertion("word-count", prepare=_word_range)
def word_count(ctx: Ctx) -> Verdict:
    """The number of whitespace-separated words equals the value, or lies in [min, max]."""
    low, high = (ctx.column(operator.itemgetter(i), pl.Float64) for i in (0, 1))
    words = ctx.output.str.count_matches(WORD)
    within = (words >= low) & (words <= high)
    return Verdict(within, ctx.column(operator.itemgetter(2), pl.String),
                   detail=pl.format("{} words", words))


def _reason(value: Any, spec: Any) -> str:
    if not isinstance(value, str) or value == "":
        raise ValueError("value must be a finish reason such as stop, length or tool_calls "
                         "(a string)")
    return value


@assertion("finish-reason", needs_text=False, prepare=_reason, prepared_dtype=pl.String)
def finish_reason(ctx: Ctx) -> Verdict:
    """The case's `finish_reason` equals the value, ignoring case."""
    recorded = pl.col("finish_reason")
    same = recorded.str.to_lowercase() == ctx.prepared.str.to_lowercase()
    detail = (pl.when(recorded.is_null())
              .then(pl.lit("no finish_reason recorded for this case"))
              .otherwise(pl.format('finish reason "{}"', recorded)))
    # as promptfoo: a case with no finish reason fails (and `not-finish-reason` passes)
    return Verdict(pl.when(recorded.is_null()).then(False).otherwise(same),
                   pl.format('stop with finish reason "{}"', ctx.prepared), detail=detail)


@assertion("is-refusal", value=Value.NONE, needs_text=False)
def is_refusal(ctx: Ctx) -> Verdict:
    """The output reads as a refusal (promptfoo's prefixes and phrases); no text counts as one."""
    text = ctx.output.str.to_lowercase().str.strip_chars(JS_SPACE).str.replace_all(APOSTROPHES, "'")
    refused = (pl.any_horizontal([text.str.starts_with(p) for p in PREFIXES])
               | text.str.contains(REFUSAL))
    kind = pl.col("output_kind")
    # promptfoo: an output that is not text (a JSON value, null) or is empty is assumed a
    # refusal that scores 0: `is-refusal` passes, `not-is-refusal` fails. Scores here are
    # before the engine's negation.
    no_text = (kind != "text") | (text.str.len_chars() == 0)
    zero = 1.0 if ctx.spec.negate else 0.0
    raw = pl.when(no_text).then(True).otherwise(refused)
    score = pl.when(no_text).then(zero).otherwise(refused.cast(pl.Float64))
    detail = (pl.when(kind == "json").then(pl.lit("output is not text: assumed a refusal"))
              .when(kind == "null").then(pl.lit("output is null: assumed a refusal"))
              .when(no_text).then(pl.lit("empty output counts as a refusal")))
    return Verdict(raw, "be a refusal", score=score, detail=detail)


# PromptKit's names for these checks (assertions/reading/promptkit.py translates `type` + `params`)
promptkit_names("icontains-all", "contains", "content_includes", params={"patterns": "value"})
promptkit_names("regex", "regex", "content_matches", params={"pattern": "value"})
promptkit_names("icontains-any", "contains_any", "content_includes_any",
                params={"patterns": "value"})
