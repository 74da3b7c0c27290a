"""Reference-overlap metrics: rouge-n, bleu, gleu as n-gram counting in Polars; meteor per pair.

BLEU, GLEU and ROUGE are computed for the whole batch at once: outputs and references are
tokenised with string expressions, n-grams built with list expressions, and clipped n-gram
matches counted with a group-by and a join, or, for references of each row's own, with one
sort (no Python loop over rows). Identical (output, references) pairs are scored once.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import polars as pl

from ..js.whitespace import JS_SPACE_CLASS, WORD
from .batch.distinct import per_distinct
from .compiled import Ctx, Verdict
from .parsers.meteor import WordNetMissing, batch_scorer, wordnet_dir
from .registry import assertion

MAX_N = 4


def _references(value: Any, spec: Any) -> list[str] | None:
    """A reference string or a non-empty list of them (promptfoo rejects numbers)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError("value must be a reference string or a list of them")
    return list(value)


def _refs_expr(ctx: Ctx) -> pl.Expr:
    # a rendered text value is one reference: a list of it, built in Polars
    return ctx.column(lambda refs: refs, pl.List(pl.String), lambda v: pl.concat_list(v))


K = 0x9E3779B97F4A7C15  # odd 64-bit multiplier to combine token hashes into n-gram hashes


def gram_counts(frame: pl.LazyFrame, keys: list[str], max_n: int) -> pl.LazyFrame:
    """(keys..., n, g, cnt): how often each n-gram (n = 1..max_n) occurs in `tok`."""
    return gram_rows(frame, keys, max_n).group_by(*keys, "n", "g").agg(cnt=pl.len().cast(pl.Int64))


def token_rows(frame: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """(keys..., pos, len, h): one row per token of `tok`, in order, with its position in
    its list, the list's length and its 64-bit hash."""
    length = pl.col("tok").list.len().cast(pl.Int64)
    # hashed inside the lists: the exploded column is one of numbers, not of strings
    return (frame.select(*keys, h=pl.col("tok").list.eval(pl.element().hash(17)),
                         start=length.cum_sum() - length, len=length)
            .explode("h").drop_nulls("h")
            .select(*keys, pos=pl.int_range(pl.len(), dtype=pl.Int64) - pl.col("start"),
                    len="len", h="h"))


def gram_rows(frame: pl.LazyFrame, keys: list[str], max_n: int) -> pl.LazyFrame:
    """(keys..., n, g): one row per n-gram occurrence (n = 1..max_n) in `tok`.

    Tokens are exploded once into one flat column of 64-bit hashes; an n-gram's hash
    combines the hashes of n consecutive rows (shifts over the flat column, wrapping
    arithmetic), kept only where the n rows belong to the same token list."""
    flat = token_rows(frame, keys)
    parts = []
    g = pl.col("h")
    for n in range(1, max_n + 1):
        if n > 1:
            g = g * pl.lit(K, pl.UInt64) + pl.col("h").shift(-(n - 1))
        parts.append(flat.select(*keys, "pos", "len", n=pl.lit(n, pl.Int8), g=g)
                     .filter(pl.col("pos") + n <= pl.col("len")).drop("pos", "len"))
    return pl.concat(parts)


def clipped_matches(cand: pl.LazyFrame, refs: pl.LazyFrame, max_n: int,
                    shared: bool | None = None) -> pl.LazyFrame:
    """One row per (output, reference) pair: id, ctok (the output's tokens), tok (the
    reference's), c and r (their lengths) and m1..m<max_n>, Σ_g min(count in output,
    count in reference) per order.

    `cand` has (id, tok); `refs` has (id, ref, rid, tok) where `rid` tells apart the distinct
    reference texts. References `shared` by many rows (a literal value; by default, when
    there are at most half as many distinct references as pairs, or when the batch is too
    large for `_Layout`'s key) are counted once and joined; references of their own (a
    per-row value) are matched by one sort."""
    # collected: every use below must see the same pair numbers (a join's order may differ
    # from one run of a lazy plan to the next)
    pairs = (refs.join(cand.select("id", ctok="tok"), on="id").with_row_index("pair")
             .with_columns(c=pl.col("ctok").list.len().cast(pl.Int64),
                           r=pl.col("tok").list.len().cast(pl.Int64)).collect().lazy())
    distinct, count, tokens = pairs.select(
        pl.col("rid").n_unique(), pl.len(), (pl.col("c") + pl.col("r")).sum()).collect().row(0)
    layout = _Layout(count, tokens, max_n)
    if shared is None:
        shared = distinct * 2 <= count or not layout.fits
    counts = (_shared_matches(pairs, max_n) if shared else _own_matches(pairs, layout)).collect()
    return pairs.with_columns(_per_pair(counts, count, n).alias(f"m{n}")
                              for n in range(1, max_n + 1))


def _per_pair(counts: pl.DataFrame, pairs: int, n: int) -> pl.Series:
    """The matches of order n for pairs 0..pairs-1 (0 where `counts` has none)."""
    order = counts.filter(n=n)
    return pl.zeros(pairs, pl.Int64, eager=True).scatter(order["pair"], order["m"])


def _shared_matches(pairs: pl.LazyFrame, max_n: int) -> pl.LazyFrame:
    """(pair, n, m) of the orders with matches: each distinct reference's n-grams counted
    once, and only the output n-grams the reference also has counted after the join."""
    distinct_refs = pairs.group_by("rid").agg(pl.col("tok").first())
    rg = gram_counts(distinct_refs, ["rid"], max_n).rename({"cnt": "rc"})
    shared = gram_rows(pairs.select("pair", "rid", tok="ctok"), ["pair", "rid"], max_n).join(
        rg, on=["rid", "n", "g"])
    return (shared.group_by("pair", "n", "g").agg(cnt=pl.len(), rc=pl.col("rc").first())
            .group_by("pair", "n").agg(m=pl.min_horizontal("cnt", "rc").sum()))


class _Layout:
    """The 128-bit key of a token position in `_own_matches`: the pair, the ids (`width`
    bits each) of the max_n tokens from there on, 0 past the end of the side, then the side
    (output 0, reference 1). A token's id is its number among the batch's distinct tokens
    (from 1). Two 64-bit halves: `hi` holds the pair and the first `head` ids, `lo` the
    other ids and the side."""

    def __init__(self, pairs: int, tokens: int, max_n: int):
        self.max_n, self.head = max_n, max_n // 2
        self.width = tokens.bit_length()  # numbers run up to `tokens`
        self.fits = (pairs.bit_length() + self.head * self.width <= 63
                     and (max_n - self.head) * self.width + 1 <= 64)

    def key(self) -> pl.Expr:
        def number(k: int) -> pl.Expr:  # the id of the token k places on, 0 past the side's end
            return (pl.when(pl.col("pos") + k < pl.col("len")).then(pl.col("t").shift(-k))
                    .otherwise(0).cast(pl.UInt64))

        step = pl.lit(2**self.width, pl.UInt64)
        hi, lo = pl.col("pair").cast(pl.UInt64), pl.lit(0, pl.UInt64)
        for k in range(self.head):
            hi = hi * step + number(k)
        for k in range(self.head, self.max_n):
            lo = lo * step + number(k)
        return hi.cast(pl.Int128) * 2**64 + (lo * 2 + pl.col("side")).cast(pl.Int128)

    def prefix(self, n: int) -> list[pl.Expr]:
        """The pair and first n numbers: the part held in hi (and the part held in lo)."""
        w = self.width
        if n <= self.head:
            return [pl.col("hi") // 2**(w * (self.head - n))]
        return [pl.col("hi"), pl.col("lo") // 2**(1 + w * (self.max_n - n))]


def _numbered_tokens(pairs: pl.LazyFrame) -> pl.LazyFrame:
    """(pair, side, pos, len, t): the tokens of both sides, each list in order, with their
    ids (`_Layout`)."""
    sides = pl.concat([pairs.select("pair", side=pl.lit(side, pl.UInt64), tok=column)
                       for side, column in ((0, "ctok"), (1, "tok"))])
    flat = token_rows(sides, ["pair", "side"]).collect()
    distinct = flat["h"].unique(maintain_order=True)  # (a third of the time of unordered)
    numbers = pl.int_range(1, len(distinct) + 1, dtype=pl.UInt32, eager=True)
    # replaced eagerly: the same replace inside the lazy query costs more
    ids = flat["h"].replace_strict(distinct, numbers, return_dtype=pl.UInt32)
    return flat.lazy().select("pair", "side", "pos", "len", t=ids)


def _own_matches(pairs: pl.LazyFrame, layout: _Layout) -> pl.LazyFrame:
    """(pair, n, m) of the orders with matches, for references that are mostly each pair's
    own. Every token position of both sides becomes one 128-bit key (`_Layout`: the pair,
    the numbers of the tokens that start there, the side). Sorted once, the positions that
    start equal n-grams of one pair lie together for every order n at once (keys that
    agree on the pair and the first n numbers); such a run holds c positions of the output
    and r of the reference, min(c, r) clipped matches. One sort of one key per token,
    instead of one per n-gram and order. Unigrams alone are counted by a group-by."""
    if layout.max_n == 1:
        return _own_unigram_matches(pairs)
    ordered = _numbered_tokens(pairs).select(key=layout.key()).collect()["key"].sort()
    lo = pl.col("key").cast(pl.UInt64, wrap_numerical=True)
    halves = ordered.to_frame().lazy().select(
        hi=(pl.col("key") // 2**64).cast(pl.UInt64), lo=lo,
        o=(lo % 2 == 0).cum_sum().cast(pl.Int64), r=(lo % 2).cum_sum().cast(pl.Int64))
    return pl.concat([_order_matches(halves, layout, n) for n in range(1, layout.max_n + 1)])


def _own_unigram_matches(pairs: pl.LazyFrame) -> pl.LazyFrame:
    """(pair, n, m) of order 1: one group-by on (pair, token hash) counts each token's
    positions on both sides (all, and the reference's r); min(all - r, r) clipped matches."""
    sides = pl.concat([pairs.select("pair", side=pl.lit(side, pl.UInt32),
                                    h=pl.col(column).list.eval(pl.element().hash(17)))
                       for side, column in ((0, "ctok"), (1, "tok"))])
    counted = (sides.explode("h").drop_nulls("h").group_by("pair", "h")
               .agg(r=pl.col("side").sum(), c=pl.len() - pl.col("side").sum()))
    return (counted.filter(pl.col("r") > 0, pl.col("c") > 0).group_by("pair")
            .agg(m=pl.min_horizontal("c", "r").sum().cast(pl.Int64))
            .with_columns(n=pl.lit(1, pl.Int8)))


def _order_matches(halves: pl.LazyFrame, layout: _Layout, n: int) -> pl.LazyFrame:
    """(pair, n, m) for order n from the sorted keys' halves and the running counts of
    output (o) and reference (r) positions."""
    prefix = layout.prefix(n)
    last = prefix[-1] % 2**layout.width  # the n-th token's number
    ends = pl.any_horizontal(p != p.shift(-1) for p in prefix).fill_null(True)
    o, r = pl.col("o"), pl.col("r")
    runs = halves.filter(ends).select(
        pair=(prefix[0] // 2**(layout.width * min(n, layout.head))).cast(pl.UInt32),
        has_gram=last != 0, c=o - o.shift(1, fill_value=0), r=r - r.shift(1, fill_value=0))
    return (runs.filter(pl.col("has_gram") & (pl.col("c") > 0) & (pl.col("r") > 0))
            .group_by(pl.col("pair").set_sorted()).agg(m=pl.min_horizontal("c", "r").sum())
            .with_columns(n=pl.lit(n, pl.Int8)))


Scorer = Callable[[pl.LazyFrame, pl.LazyFrame], pl.LazyFrame]  # (cand, refs) -> (id, score)


def _pair_scores(scorer: Scorer, tokenize: Callable[[pl.Expr], pl.Expr]):
    """A batch function over struct{a: output, b: list of references} -> score per row."""

    def distinct(pairs: pl.Series) -> pl.DataFrame:
        uniq = pairs.struct.unnest().with_row_index("id")
        cand = uniq.lazy().select("id", tok=tokenize(pl.col("a")))
        refs = uniq.select("id", r="b", ref=pl.int_ranges(pl.col("b").list.len())).explode(
            "r", "ref").with_columns(rid=pl.col("r").hash())
        scores = scorer(cand, _tokenized(refs, tokenize)).collect()
        return uniq.select("id").join(scores, on="id", how="left", maintain_order="left"
                                      ).select(pl.col("score").cast(pl.Float64))

    return lambda pairs: per_distinct(pairs, distinct)["score"]


def _tokenized(refs: pl.DataFrame, tokenize: Callable[[pl.Expr], pl.Expr]) -> pl.LazyFrame:
    """(id, ref, rid, tok): each reference text `r` tokenised once. `rid` is the text's
    64-bit hash (as `per_distinct` de-duplicates: a collision needs ~4e9 distinct texts in
    one batch to be likely); where every text is distinct, each is tokenised in place."""
    first = refs["rid"].is_first_distinct()
    if first.all():
        return refs.lazy().select("id", "ref", "rid", tok=tokenize(pl.col("r")))
    texts = refs.lazy().filter(first).select("rid", tok=tokenize(pl.col("r")))
    return refs.lazy().select("id", "ref", "rid").join(texts, on="rid", how="left",
                                                        maintain_order="left")


def _score(ctx: Ctx, scorer: Scorer, tokenize) -> pl.Expr:
    return ctx.once(pl.struct(a=ctx.output, b=_refs_expr(ctx)).map_batches(
        _pair_scores(scorer, tokenize), return_dtype=pl.Float64))


def _graded(ctx: Ctx, name: str, score: pl.Expr) -> Verdict:
    t = ctx.threshold
    return Verdict(score >= t, f"have {name} >= {t:g}", score=score,
                   detail=pl.format(f"{name} {{}}", score.round(4)))


# --- BLEU (promptfoo [N]: standard brevity penalty, unusable orders dropped) ----------------

def bleu_tokens(text: pl.Expr) -> pl.Expr:
    return text.str.to_lowercase().str.extract_all(WORD)


def bleu_scores(cand: pl.LazyFrame, refs: pl.LazyFrame) -> pl.LazyFrame:
    per_ref = clipped_matches(cand, refs, MAX_N)
    c = pl.col("c")
    # a blank reference is one empty token to promptfoo ("".split(/\s+/) is [""]): length 1
    r = pl.max_horizontal("r", 1)
    closest = r.sort_by((r - c).abs(), r).first()
    per_id = per_ref.group_by("id").agg(c.first(), closest.alias("r"),
                                        *(pl.col(f"m{n}").max() for n in range(1, MAX_N + 1)))
    usable = [(c - n + 1) > 0 for n in range(1, MAX_N + 1)]
    logs = [pl.when(u).then(pl.max_horizontal(pl.col(f"m{n}") / (c - n + 1), 1e-7).log())
            .otherwise(0.0) for n, u in zip(range(1, MAX_N + 1), usable)]
    orders = pl.sum_horizontal([u.cast(pl.Float64) for u in usable])
    # weighted (w / Σw) and added order by order from 1 up, as promptfoo adds them: the same
    # float to the last bit (pl.sum_horizontal adds in another order)
    weight = 0.25 / (orders * 0.25)
    mean_log = functools.reduce(lambda acc, log: acc + log * weight, logs, pl.lit(0.0))
    bp = pl.when(c > pl.col("r")).then(1.0).otherwise((1 - pl.col("r") / c).exp())
    score = pl.when(orders == 0).then(0.0).otherwise(bp * mean_log.exp())
    return per_id.select("id", score=score)


@assertion("bleu", default_threshold=0.5, prepare=_references)
def bleu(ctx: Ctx) -> Verdict:
    """Sentence BLEU-4 against the reference(s), standard brevity penalty (promptfoo [N])."""
    return _graded(ctx, "BLEU", _score(ctx, bleu_scores, bleu_tokens))


# --- GLEU -----------------------------------------------------------------------------------

def gleu_tokens(text: pl.Expr) -> pl.Expr:
    words = bleu_tokens(text).list.eval(pl.element().str.strip_chars_end("."))
    return pl.when(words.list.eval(pl.element() != "").list.any()).then(words).otherwise(
        pl.lit([], pl.List(pl.String)))


def gleu_scores(cand: pl.LazyFrame, refs: pl.LazyFrame) -> pl.LazyFrame:
    per_ref = clipped_matches(cand, refs, MAX_N).with_columns(same=pl.col("tok") == pl.col("ctok"))
    m = pl.sum_horizontal(pl.col(f"m{n}") for n in range(1, MAX_N + 1))
    ct = pl.sum_horizontal(pl.max_horizontal(pl.col("c") - n + 1, 0) for n in range(1, MAX_N + 1))
    rt = pl.sum_horizontal(pl.max_horizontal(pl.col("r") - n + 1, 0) for n in range(1, MAX_N + 1))
    score = (pl.when(pl.col("c") == 0).then(0.0).when(pl.col("same")).then(1.0)
             .when((ct == 0) | (rt == 0)).then(0.0)
             .otherwise(pl.min_horizontal(m / ct, m / rt)))
    return per_ref.group_by("id").agg(score.max().alias("score"))


@assertion("gleu", default_threshold=0.5, prepare=_references)
def gleu(ctx: Ctx) -> Verdict:
    """Sentence GLEU (Google-BLEU, n = 1..4) against the reference(s): max over references."""
    return _graded(ctx, "GLEU", _score(ctx, gleu_scores, gleu_tokens))


# --- ROUGE-1 --------------------------------------------------------------------------------

def _pad(text: pl.Expr, pattern: str) -> pl.Expr:
    return text.str.replace_all(pattern, " $0 ")


_KEEP = "\x02"  # a quote already classified, restored at the end
_OPENS = r"[[\s\p{P}<]--[.!?]]"  # what may stand before an opening double quote


def _double_quotes(t: pl.Expr) -> pl.Expr:
    """js-rouge's quote pass: a `"` opens (``) where it follows the start, a space or
    punctuation other than .!? and no quote is open; any other `"` closes ('')."""
    t = t.str.replace_all("``", f" {_KEEP}`` ", literal=True).str.replace_all(
        "''", f" {_KEEP}'' ", literal=True)  # written Treebank quotes stay quote tokens
    t = t.str.replace_all(f'(^|{_OPENS})"([^"]*)"', f"$1 {_KEEP}`` $2 {_KEEP}'' ")
    t = t.str.replace_all(f'(^|{_OPENS})"(.)', f"$1 {_KEEP}`` $2")
    t = t.str.replace_all(r'(^|[\s\p{Ps}<])"$', f"$1 {_KEEP}`` ")
    return t.str.replace_all('"', " '' ", literal=True).str.replace_all(_KEEP, "", literal=True)


def _final_period(t: pl.Expr) -> pl.Expr:
    """Only the text's last period splits off, unless it ends an acronym like `u.s.`."""
    acronym = t.str.contains(r"(^|[^A-Za-z0-9_])[A-Za-z]\.[A-Za-z]\.[\])}>'\s]*$")
    return pl.when(acronym).then(t).otherwise(
        t.str.replace(r"([^.])\.([\])}>'\s]*)$", "$1 .$2 "))


_CONTRACTIONS = (("can", "not"), ("d", "'ye"), ("gim", "me"), ("gon", "na"), ("got", "ta"),
                 ("lem", "me"), ("more", "'n"), ("'t", "is"), ("'t", "was"))


def _contractions(t: pl.Expr) -> pl.Expr:
    # twice: a boundary character consumed by one match cannot start the next
    for _ in range(2):
        for a, b in _CONTRACTIONS:
            t = t.str.replace_all(f"(?i)(^|[^\\w])({a})({b})([^\\w]|$)", "$1 $2 $3 $4")
        t = t.str.replace_all(r"(?i)(^|[^\w])(wan)(na) ", "$1 $2 $3 ")
    return t


def treebank_tokens(text: pl.Expr) -> pl.Expr:
    """js-rouge 3.2.3's treeBankTokenize, as promptfoo's rouge-n runs it on the whole text
    (no sentence segmentation: only the last period splits off)."""
    t = text.str.replace_all(f"[{JS_SPACE_CLASS}\\x{{85}}]+", " ").str.strip_chars(" ")
    t = _double_quotes(t).str.replace_all(r"\.\.\.", " ... ")
    # 1,000 and 10:30 stay whole: those separators hide as \x04 / \x05 while the rest are padded
    t = t.str.replace_all(r":(\p{Nd})", "\x04$1").str.replace_all(r",(\p{Nd})", "\x05$1")
    t = _pad(t, r"[:,]").str.replace_all("\x04", ":", literal=True) \
        .str.replace_all("\x05", ",", literal=True)
    t = _final_period(_pad(t, r"[;@#$%&]"))
    t = _pad(_pad(t, r"[?!]"), r"[\]\[(){}<>]").str.replace_all("--", " -- ")
    t = pl.concat_str([pl.lit(" "), t, pl.lit(" ")])
    t = t.str.replace_all(r"([^'])' ", "$1 ' ").str.replace_all(r"'([sSmMdD]) ", " '$1 ")
    t = t.str.replace_all(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", " $1 ")
    return _contractions(t).str.extract_all(r"[^ ]+")


def rouge1_scores(cand: pl.LazyFrame, refs: pl.LazyFrame) -> pl.LazyFrame:
    per_ref = clipped_matches(cand, refs, 1)
    p, r = pl.col("m1") / pl.col("c"), pl.col("m1") / pl.col("r")
    f1 = pl.when(pl.col("m1") == 0).then(0.0).otherwise(2 * p * r / (p + r))
    score = pl.when((pl.col("c") == 0) | (pl.col("r") == 0)).then(0.0).otherwise(f1)
    return per_ref.group_by("id").agg(score.max().alias("score"))


def rouge_tokens(text: pl.Expr) -> pl.Expr:
    """promptfoo lower-cases output and reference before js-rouge tokenises them."""
    return treebank_tokens(text.str.to_lowercase())


def _one_reference(value: Any, spec: Any) -> list[str]:
    if not isinstance(value, str):
        raise ValueError("value must be a reference string (promptfoo rejects other values)")
    return [value]


@assertion("rouge-n", default_threshold=0.75, prepare=_one_reference, csv_threshold=0.75)
def rouge_n(ctx: Ctx) -> Verdict:
    """ROUGE-1 F1 (clipped unigram overlap, lower-cased, Treebank tokens) >= threshold;
    an empty output or reference scores 0."""
    return _graded(ctx, "ROUGE-N", _score(ctx, rouge1_scores, rouge_tokens))


def _meteor_params(value: Any, spec: Any) -> tuple:
    refs = _references(value, spec) if value is not None else None
    args = spec.args if spec is not None else {}
    out = []
    for key, default in (("alpha", 0.9), ("beta", 3.0), ("gamma", 0.5)):
        v = args.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{key} must be a number")
        out.append(float(v))
    return (tuple(refs) if refs else None, *out)


@assertion("meteor", default_threshold=0.5, fields=("alpha", "beta", "gamma"), prepare=_meteor_params)
def meteor(ctx: Ctx) -> Verdict:
    """METEOR (exact, stem, WordNet-synonym alignment; max over references) >= threshold."""
    try:
        wordnet_dir()
    except WordNetMissing as e:  # every row is an error naming what is missing
        return Verdict(pl.lit(None, pl.Boolean), "have a METEOR score", detail=pl.lit(str(e)))
    params = ctx.fixed if ctx.row is None else _meteor_params(None, ctx.spec)
    # each row's references: its rendered text, or each rendered item of a list value
    value = pl.lit(None, pl.List(pl.String)) if ctx.row is None else ctx.column(
        lambda p: list(p[0]), pl.List(pl.String), lambda v: pl.concat_list(v))
    score = ctx.once(pl.struct(a=ctx.output, b=value).map_batches(
        batch_scorer(params), return_dtype=pl.Float64))
    t = ctx.threshold
    return Verdict(score >= t, f"have METEOR >= {t:g}", score=score,
                   detail=pl.when(score.is_null())
                   .then(pl.lit("meteor needs a non-empty output and reference"))
                   .otherwise(pl.format("METEOR {}", score.round(4))))
