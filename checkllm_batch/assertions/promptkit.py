"""Text and JSON checks that come from PromptKit's vocabulary (see assertions/reading/promptkit.py for the
names and `params` it maps onto these): lengths, sentences, fields, banned words, json-path."""

from __future__ import annotations

import dataclasses
import operator
import re
from typing import Any

import jmespath
import orjson
import polars as pl

from ..js import template
from ..js.jsonvalue import same_value
from .batch.distinct import Outcome
from .batch.values import number
from .compiled import Ctx, Verdict
from .registry import Kind, Value, assertion, promptkit_names
from .text import item_hits, plain_items, split_items


def _count(value: Any, spec: Any) -> int:
    n = number(value)
    if n is None or n < 0 or n != int(n):
        raise ValueError(f"value must be an integer >= 0, got {value!r}")
    return int(n)


LENGTH: dict[str, Any] = {"prepare": _count, "prepared_dtype": pl.Int64}


@assertion("min-length", **LENGTH)
def min_length(ctx: Ctx) -> Verdict:
    """The output has at least `value` characters."""
    n = ctx.output.str.len_chars()
    return Verdict(n >= ctx.prepared, pl.format("be at least {} characters long", ctx.prepared),
                   detail=pl.format("length {}", n))


@assertion("max-length", **LENGTH)
def max_length(ctx: Ctx) -> Verdict:
    """The output has at most `value` characters."""
    n = ctx.output.str.len_chars()
    return Verdict(n <= ctx.prepared, pl.format("be at most {} characters long", ctx.prepared),
                   detail=pl.format("length {}", n))


def _bounds(value: Any, spec: Any) -> tuple[int | None, int | None]:
    lo, hi = spec.args.get("min"), spec.args.get("max", value)
    lo, hi = (None if b is None else _count(b, spec) for b in (lo, hi))
    if lo is None and hi is None:
        raise ValueError("needs `max` (or value) and/or `min`")
    return lo, hi


def _sentences_expect(bounds: tuple[int | None, int | None]) -> str:
    lo, hi = bounds
    return "have " + " and ".join(s for s in (lo is not None and f"at least {lo}",
                                              hi is not None and f"at most {hi}") if s) \
        + " sentences"


@assertion("sentence-count", value=Value.OPTIONAL, fields=("min", "max"), prepare=_bounds)
def sentence_count(ctx: Ctx) -> Verdict:
    """The number of sentences (text between runs of . ! ?) is within [min, max]."""
    lo, hi = (ctx.column(operator.itemgetter(i), pl.Int64) for i in (0, 1))
    parts = ctx.output.str.count_matches(r"[^.!?\s][^.!?]*")
    n = pl.when((parts == 0) & (ctx.output.str.strip_chars() != "")).then(1).otherwise(parts)
    ok = (lo.is_null() | (n >= lo)) & (hi.is_null() | (n <= hi))
    return Verdict(ok, ctx.column(_sentences_expect, pl.String),
                   detail=pl.format("{} sentences", n))


def _fields(value: Any, spec: Any) -> list[str]:
    items = split_items(value) if value is not None else []
    if not items:
        raise ValueError("value must list at least one field name")
    return items


@assertion("field-presence", prepare=_fields, prepared_dtype=pl.List(pl.String),
           prepare_column=plain_items)
def field_presence(ctx: Ctx) -> Verdict:
    """Each listed field name appears in the output (any case); score = share found."""
    hits = item_hits(ctx, ctx.prepared, fold=True, want=("count", "missing"))
    found, total = hits.struct.field("count"), ctx.prepared.list.len()
    return Verdict(found == total,
                   pl.concat_str([pl.lit("mention the fields "), ctx.prepared.list.join(", ")]),
                   score=found / total,
                   detail=pl.format("found {}/{} fields; missing: {}", found, total,
                                    hits.struct.field("missing")))


def _excludes(value: Any, spec: Any) -> list[str]:
    if spec.args.get("match_mode", "substring") not in ("substring", "word_boundary"):
        raise ValueError('match_mode must be "substring" or "word_boundary"')
    return _fields(value, spec)


def _words_found(text: str | None, patterns: tuple[list[str], str]) -> Outcome:
    items, mode = patterns
    if mode != "word_boundary":
        return None, None
    words = "|".join(re.escape(p.lower()) for p in items)
    found = list(dict.fromkeys(re.findall(rf"\b(?:{words})\b", (text or "").lower())))
    return not found, ("found: " + ", ".join(found)) if found else None


def _exclusions(value: Any, spec: Any) -> tuple[list[str], str]:
    return _excludes(value, spec), spec.args.get("match_mode", "substring")


@assertion("content-excludes", fields=("match_mode",), prepare=_exclusions)
def content_excludes(ctx: Ctx) -> Verdict:
    """The output contains none of the listed patterns (any case; `match_mode: word_boundary`
    matches whole words only)."""
    items = ctx.column(lambda p: p[0], pl.List(pl.String), vectorised=plain_items)
    expect = pl.concat_str([pl.lit("contain none of "), items.list.join(", ")])
    hits = item_hits(ctx, items, fold=True, want=("count", "found"))
    found = hits.struct.field("found")
    by_text = Verdict(hits.struct.field("count") == 0, expect, detail=pl.when(found != "")
                      .then(pl.concat_str([pl.lit("found: "), found])))
    mode = ctx.spec.args.get("match_mode", "substring")
    if not template.has_template(mode) and mode != "word_boundary":
        return by_text  # the same mode on every row, and not by word
    by_word = ctx.column(lambda p: p[1] == "word_boundary", pl.Boolean)
    words = ctx.checked(_words_found, expect, where=by_word)
    return Verdict(pl.when(by_word).then(words.passed).otherwise(by_text.passed), expect,
                   detail=pl.when(by_word).then(words.detail).otherwise(by_text.detail))


_FENCE = re.compile(r"```(?:json)?\s*\n([\s\S]*?)\n```")
JSON_PATH_FIELDS = ("expected", "contains", "min_results", "max_results", "min", "max",
                    "allow_wrapped", "extract_json")


def _compile_path(value: Any, spec: Any) -> tuple[Any, Any]:
    """(the compiled JMESPath expression, the spec whose fields it is checked against)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("value must be a JMESPath expression, e.g. order.status")
    numbers = {k: number(v) if isinstance(v, str) else v for k, v in spec.args.items()
               if k in ("min", "max", "min_results", "max_results")}
    flags = {k: v.strip().lower() == "true" if isinstance(v, str) else v
             for k, v in spec.args.items() if k in ("allow_wrapped", "extract_json")}
    try:
        return jmespath.compile(value), dataclasses.replace(
            spec, args={**spec.args, **numbers, **flags})
    except jmespath.exceptions.JMESPathError as e:
        raise ValueError(f"invalid JMESPath expression: {e}") from None


def _json_of(text: str, spec: Any) -> Any:
    if spec.args.get("allow_wrapped"):
        m = _FENCE.search(text)
        if m:
            text = m.group(1).strip()
    if spec.args.get("extract_json"):
        starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
        if starts:
            decoder_start = min(starts)
            from ..js.jsontext import extract_json_objects
            found = extract_json_objects(text[decoder_start:])
            if found:
                return found[0]
    return orjson.loads(text)


def _json_path_check(text: str | None, prepared: tuple[Any, Any]) -> Outcome:
    path, spec = prepared
    args = spec.args
    try:
        data = _json_of(text or "", spec)
    except orjson.JSONDecodeError as e:
        return False, f"invalid JSON: {e}"
    result = path.search(data)
    shown = orjson.dumps(result, default=str).decode()[:200]
    if "expected" in args and not same_value(result, args["expected"]):
        return False, f"result {shown} does not match expected value"
    if "contains" in args:
        items = args["contains"] if isinstance(args["contains"], list) else [args["contains"]]
        if not isinstance(result, list):
            return False, f"result {shown} is not an array"
        missing = [i for i in items if not any(same_value(r, i) for r in result)]
        if missing:
            return False, f"expected item {missing[0]!r} not found in {shown}"
    lo, hi = args.get("min"), args.get("max")
    if lo is not None or hi is not None:
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            return False, f"result {shown} is not a number"
        if (lo is not None and result < lo) or (hi is not None and result > hi):
            return False, f"value {result} is outside [{lo}, {hi}]"
    if args.get("min_results") or args.get("max_results"):
        if not isinstance(result, list):
            return False, f"result {shown} is not an array"
        n, lo, hi = len(result), args.get("min_results"), args.get("max_results")
        if (lo and n < lo) or (hi and n > hi):
            return False, f"array has {n} items"
    return True, None


@assertion("json-path", kind=Kind.DISTINCT, fields=JSON_PATH_FIELDS,
           json_ok=True, prepare=_compile_path)
def json_path(ctx: Ctx) -> Verdict:
    """A JMESPath expression over the JSON output gives the expected value / items / range."""
    def expect(p: tuple[Any, Any]) -> str:
        return f"have JSON where {p[0].expression} checks out"

    if any(ctx.spec.args.get(k) for k in ("allow_wrapped", "extract_json")):  # or templated
        return ctx.checked(_json_path_check, expect)
    # Only outputs that start like JSON reach the parser; the rest fail vectorised.
    candidate = ctx.output.str.contains(r"^[ \t\n\r]*[\[{\"\-0-9tfn]")
    verdict = ctx.checked(_json_path_check, expect, where=candidate)
    return Verdict(pl.when(candidate).then(verdict.passed).otherwise(False), verdict.expect,
                   detail=pl.when(candidate).then(verdict.detail)
                   .otherwise(pl.lit("invalid JSON: does not start like a JSON value")))


# PromptKit's names for these checks (assertions/reading/promptkit.py translates `type` + `params`)
EXCLUDES = {"patterns": "value", "words": "value", "match_mode": "match_mode"}
promptkit_names("content-excludes", "content_excludes", "content_not_includes", params=EXCLUDES)
promptkit_names("content-excludes", "banned_words", params=EXCLUDES,
                fixed={"match_mode": "word_boundary"})
promptkit_names("min-length", "min_length",
                params={"min": "value", "min_characters": "value", "min_chars": "value"})
promptkit_names("max-length", "max_length", "length",
                params={"max": "value", "max_characters": "value", "max_chars": "value"})
promptkit_names("sentence-count", "sentence_count", "max_sentences",
                params={"max": "max", "max_sentences": "max", "min": "min"})
promptkit_names("field-presence", "field_presence", "required_fields",
                params={"fields": "value", "required_fields": "value"})
promptkit_names("json-path", "json_path",
                params={"expression": "value", "jmespath_expression": "value",
                        **{k: k for k in JSON_PATH_FIELDS}})
