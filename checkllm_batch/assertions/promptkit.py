"""Text and JSON checks that come from PromptKit's vocabulary (see spec/promptkit.py for the
names and `params` it maps onto these): lengths, sentences, fields, banned words, json-path."""

from __future__ import annotations

import re
from typing import Any

import jmespath
import orjson
import polars as pl

from .distinct import Outcome, over_distinct
from .registry import Ctx, Kind, Value, Verdict, assertion
from .text import split_items


def _count(value: Any, spec: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"value must be an integer >= 0, got {value!r}")
    return value


@assertion("min-length", prepare=_count)
def min_length(ctx: Ctx) -> Verdict:
    """The output has at least `value` characters."""
    n = ctx.output.str.len_chars()
    return Verdict(n >= ctx.prepared, f"be at least {ctx.prepared} characters long",
                   detail=pl.format("length {}", n))


@assertion("max-length", prepare=_count)
def max_length(ctx: Ctx) -> Verdict:
    """The output has at most `value` characters."""
    n = ctx.output.str.len_chars()
    return Verdict(n <= ctx.prepared, f"be at most {ctx.prepared} characters long",
                   detail=pl.format("length {}", n))


def _bounds(value: Any, spec: Any) -> tuple[int | None, int | None]:
    lo, hi = spec.args.get("min"), spec.args.get("max", value)
    for bound in (lo, hi):
        if bound is not None:
            _count(bound, spec)
    if lo is None and hi is None:
        raise ValueError("needs `max` (or value) and/or `min`")
    return lo, hi


@assertion("sentence-count", value=Value.OPTIONAL, fields=("min", "max"), prepare=_bounds)
def sentence_count(ctx: Ctx) -> Verdict:
    """The number of sentences (text between runs of . ! ?) is within [min, max]."""
    lo, hi = _bounds(ctx.literal, ctx.spec)
    parts = ctx.output.str.count_matches(r"[^.!?\s][^.!?]*")
    n = pl.when((parts == 0) & (ctx.output.str.strip_chars() != "")).then(1).otherwise(parts)
    ok = pl.lit(True)
    if lo is not None:
        ok = ok & (n >= lo)
    if hi is not None:
        ok = ok & (n <= hi)
    bounds = " and ".join(s for s in (lo is not None and f"at least {lo}",
                                      hi is not None and f"at most {hi}") if s)
    return Verdict(ok, f"have {bounds} sentences", detail=pl.format("{} sentences", n))


def _fields(value: Any, spec: Any) -> list[str]:
    items = split_items(value) if value is not None else []
    if not items:
        raise ValueError("value must list at least one field name")
    return items


@assertion("field-presence", literal_value=True, prepare=_fields)
def field_presence(ctx: Ctx) -> Verdict:
    """Each listed field name appears in the output (any case); score = share found."""
    fields: list[str] = ctx.prepared
    lower = ctx.output.str.to_lowercase()
    hits = [lower.str.contains(f.lower(), literal=True) for f in fields]
    found = pl.sum_horizontal(h.cast(pl.Int32) for h in hits)
    missing = pl.concat_list([pl.when(~h).then(pl.lit(f)) for h, f in zip(hits, fields)])
    return Verdict(found == len(fields), f"mention the fields {', '.join(fields)}",
                   score=found / len(fields),
                   detail=pl.format("found {}/{} fields; missing: {}", found, pl.lit(len(fields)),
                                    missing.list.drop_nulls().list.join(", ")))


def _excludes(value: Any, spec: Any) -> list[str]:
    if spec.args.get("match_mode", "substring") not in ("substring", "word_boundary"):
        raise ValueError('match_mode must be "substring" or "word_boundary"')
    return _fields(value, spec)


@assertion("content-excludes", literal_value=True, fields=("match_mode",), prepare=_excludes)
def content_excludes(ctx: Ctx) -> Verdict:
    """The output contains none of the listed patterns (any case; `match_mode: word_boundary`
    matches whole words only)."""
    patterns: list[str] = ctx.prepared
    lower = ctx.output.str.to_lowercase()
    if ctx.spec.args.get("match_mode", "substring") == "word_boundary":
        words = "|".join(re.escape(p.lower()) for p in patterns)
        found = lower.str.extract_all(rf"\b(?:{words})\b")
    else:
        found = pl.concat_list([pl.when(lower.str.contains(p.lower(), literal=True)).then(pl.lit(p))
                                for p in patterns]).list.drop_nulls()
    return Verdict(found.list.len() == 0, f"contain none of {', '.join(patterns)}",
                   detail=pl.when(found.list.len() > 0).then(pl.format(
                       "found: {}", found.list.unique(maintain_order=True).list.join(", "))))


_FENCE = re.compile(r"```(?:json)?\s*\n([\s\S]*?)\n```")
JSON_PATH_FIELDS = ("expected", "contains", "min_results", "max_results", "min", "max",
                    "allow_wrapped", "extract_json")


def _compile_path(value: Any, spec: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("value must be a JMESPath expression, e.g. order.status")
    try:
        return jmespath.compile(value)
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
            from .jsonchecks import extract_json_objects
            found = extract_json_objects(text[decoder_start:])
            if found:
                return found[0]
    return orjson.loads(text)


def _json_path_check(path: Any, spec: Any):
    args = spec.args

    def check(text: str | None) -> Outcome:
        try:
            data = _json_of(text or "", spec)
        except orjson.JSONDecodeError as e:
            return False, f"invalid JSON: {e}"
        result = path.search(data)
        shown = orjson.dumps(result, default=str).decode()[:200]
        if "expected" in args and not _same(result, args["expected"]):
            return False, f"result {shown} does not match expected value"
        if "contains" in args:
            items = args["contains"] if isinstance(args["contains"], list) else [args["contains"]]
            if not isinstance(result, list):
                return False, f"result {shown} is not an array"
            missing = [i for i in items if not any(_same(r, i) for r in result)]
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

    return check


def _same(a: Any, b: Any) -> bool:
    from .toolcalls import _same as same
    return same(a, b)


@assertion("json-path", kind=Kind.DISTINCT, literal_value=True, fields=JSON_PATH_FIELDS,
           json_ok=True, prepare=_compile_path)
def json_path(ctx: Ctx) -> Verdict:
    """A JMESPath expression over the JSON output gives the expected value / items / range."""
    expect = f"have JSON where {ctx.literal} checks out"
    check = _json_path_check(ctx.prepared, ctx.spec)
    if ctx.spec.args.get("allow_wrapped") or ctx.spec.args.get("extract_json"):
        result = ctx.once(over_distinct(ctx.output, check))
        return Verdict(result.struct.field("ok"), expect, detail=result.struct.field("detail"))
    # Only outputs that start like JSON reach the parser; the rest fail vectorised.
    candidate = ctx.output.str.contains(r"^[ \t\n\r]*[\[{\"\-0-9tfn]")
    result = ctx.once(over_distinct(pl.when(candidate).then(ctx.output), check))
    return Verdict(pl.when(candidate).then(result.struct.field("ok")).otherwise(False), expect,
                   detail=pl.when(candidate).then(result.struct.field("detail"))
                   .otherwise(pl.lit("invalid JSON: does not start like a JSON value")))
