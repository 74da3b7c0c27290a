"""Reference-overlap metrics: rouge-n, bleu, gleu as n-gram counting in Polars; meteor per pair.

BLEU, GLEU and ROUGE are computed for the whole batch at once: outputs and references are
tokenised with string expressions, n-grams built with list expressions, and clipped n-gram
matches counted with a group-by and a join (no Python loop over rows). Identical
(output, references) pairs are scored once.
"""

from __future__ import annotations

from typing import Any, Callable

import polars as pl

from ._support.distinct import per_distinct
from ._support.meteor import WordNetMissing, batch_scorer, wordnet_dir
from ._support.whitespace import JS_SPACE, WORD
from .registry import Ctx, Verdict, assertion
from .text import js_string

SEP = "\x1f"
MAX_N = 4


def _references(value: Any, spec: Any) -> list[str] | None:
    if isinstance(value, list):
        if not value or not all(isinstance(v, (str, int, float)) for v in value):
            raise ValueError("value must be a reference string or a list of them")
        return [js_string(v) for v in value]
    if isinstance(value, dict) or value is None:
        raise ValueError("value must be a reference string or a list of them")
    return [js_string(value)]


def _refs_expr(ctx: Ctx) -> pl.Expr:
    # a rendered text value is one reference: a list of it, built in Polars
    return ctx.column(lambda refs: refs, pl.List(pl.String), lambda v: pl.concat_list(v))


K = 0x9E3779B97F4A7C15  # odd 64-bit multiplier to combine token hashes into n-gram hashes


def gram_counts(frame: pl.LazyFrame, keys: list[str], max_n: int) -> pl.LazyFrame:
    """(keys..., n, g, cnt): how often each n-gram (n = 1..max_n) occurs in `tok`."""
    return gram_rows(frame, keys, max_n).group_by(*keys, "n", "g").agg(cnt=pl.len().cast(pl.Int64))


def gram_rows(frame: pl.LazyFrame, keys: list[str], max_n: int) -> pl.LazyFrame:
    """(keys..., n, g): one row per n-gram occurrence (n = 1..max_n) in `tok`.

    Tokens are exploded once into one flat column of 64-bit hashes; an n-gram's hash
    combines the hashes of n consecutive rows (shifts over the flat column, wrapping
    arithmetic), kept only where the n rows belong to the same token list."""
    length = pl.col("tok").list.len().cast(pl.Int64)
    flat = (frame.select(*keys, "tok", start=length.cum_sum() - length, len=length)
            .explode("tok").drop_nulls("tok")
            .with_columns(pos=pl.int_range(pl.len(), dtype=pl.Int64) - pl.col("start"),
                          h=pl.col("tok").hash(17)))
    parts = []
    g = pl.col("h")
    for n in range(1, max_n + 1):
        if n > 1:
            g = g * pl.lit(K, pl.UInt64) + pl.col("h").shift(-(n - 1))
        parts.append(flat.select(*keys, "pos", "len", n=pl.lit(n, pl.Int8), g=g)
                     .filter(pl.col("pos") + n <= pl.col("len")).drop("pos", "len"))
    return pl.concat(parts)


def clipped_matches(cand: pl.LazyFrame, refs: pl.LazyFrame, max_n: int) -> pl.LazyFrame:
    """(id, ref, m1..m<max_n>): Σ_g min(count in output, count in reference) per order.

    `cand` has (id, tok); `refs` has (id, ref, rid, tok) where `rid` numbers the distinct
    reference texts, so a reference shared by every row is counted once."""
    distinct_refs = refs.group_by("rid").agg(pl.col("tok").first())
    rg = gram_counts(distinct_refs, ["rid"], max_n).rename({"cnt": "rc"})
    # only output n-grams the reference also has can match: join first, count the few left
    shared = (gram_rows(cand, ["id"], max_n).join(refs.select("id", "ref", "rid"), on="id")
              .join(rg, on=["rid", "n", "g"]))
    m = (shared.group_by("id", "ref", "n", "g").agg(cnt=pl.len(), rc=pl.col("rc").first())
         .group_by("id", "ref", "n").agg(m=pl.min_horizontal("cnt", "rc").sum()))
    wide = m.group_by("id", "ref").agg(
        *(pl.col("m").filter(pl.col("n") == n).sum().alias(f"m{n}") for n in range(1, max_n + 1)))
    return (refs.select("id", "ref").join(wide, on=["id", "ref"], how="left")
            .with_columns(pl.col(f"m{n}").fill_null(0).cast(pl.Int64)
                          for n in range(1, max_n + 1)))


Scorer = Callable[[pl.LazyFrame, pl.LazyFrame], pl.LazyFrame]  # (cand, refs) -> (id, score)


def _pair_scores(scorer: Scorer, tokenize: Callable[[pl.Expr], pl.Expr]):
    """A batch function over struct{a: output, b: list of references} -> score per row."""

    def distinct(pairs: pl.Series) -> pl.DataFrame:
        uniq = pairs.struct.unnest().with_row_index("id")
        cand = uniq.lazy().select("id", tok=tokenize(pl.col("a")))
        refs = (uniq.lazy().select("id", pl.col("b").alias("r")).explode("r")
                .with_columns(ref=pl.int_range(pl.len()).over("id")))
        texts = (refs.select("r").unique().with_row_index("rid")
                 .with_columns(tok=tokenize(pl.col("r"))))
        refs = refs.join(texts, on="r", how="left", nulls_equal=True).select("id", "ref", "rid",
                                                                              "tok")
        scores = scorer(cand, refs).collect()
        return uniq.select("id").join(scores, on="id", how="left", maintain_order="left"
                                      ).select(pl.col("score").cast(pl.Float64))

    return lambda pairs: per_distinct(pairs, distinct)["score"]


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


def _lengths(cand: pl.LazyFrame, refs: pl.LazyFrame) -> pl.LazyFrame:
    c = cand.select("id", c=pl.col("tok").list.len().cast(pl.Int64))
    return refs.select("id", "ref", r=pl.col("tok").list.len().cast(pl.Int64)).join(c, on="id")


def bleu_scores(cand: pl.LazyFrame, refs: pl.LazyFrame) -> pl.LazyFrame:
    per_ref = _lengths(cand, refs).join(clipped_matches(cand, refs, MAX_N), on=["id", "ref"])
    c = pl.col("c")
    closest = pl.col("r").sort_by((pl.col("r") - c).abs(), pl.col("r")).first()
    per_id = per_ref.group_by("id").agg(c.first(), closest.alias("r"),
                                        *(pl.col(f"m{n}").max() for n in range(1, MAX_N + 1)))
    usable = [(c - n + 1) > 0 for n in range(1, MAX_N + 1)]
    logs = [pl.when(u).then(pl.max_horizontal(pl.col(f"m{n}") / (c - n + 1), 1e-7).log())
            .otherwise(0.0) for n, u in zip(range(1, MAX_N + 1), usable)]
    orders = pl.sum_horizontal([u.cast(pl.Float64) for u in usable])
    mean_log = pl.sum_horizontal(logs) / orders
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
    per_ref = _lengths(cand, refs).join(clipped_matches(cand, refs, MAX_N), on=["id", "ref"])
    same = (refs.select("id", "ref", rt="tok").join(cand.select("id", ct="tok"), on="id")
            .select("id", "ref", same=pl.col("rt") == pl.col("ct")))
    per_ref = per_ref.join(same, on=["id", "ref"])
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
    t = text.str.replace_all(f"[{JS_SPACE}\\x{{85}}]+", " ").str.strip_chars(" ")
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
    per_ref = _lengths(cand, refs).join(clipped_matches(cand, refs, 1), on=["id", "ref"])
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
    value = pl.lit(None, pl.String) if ctx.row is None else ctx.value
    score = ctx.once(pl.struct(a=ctx.output, b=value).map_batches(
        batch_scorer(params), return_dtype=pl.Float64))
    t = ctx.threshold
    return Verdict(score >= t, f"have METEOR >= {t:g}", score=score,
                   detail=pl.when(score.is_null())
                   .then(pl.lit("meteor needs a non-empty output and reference"))
                   .otherwise(pl.format("METEOR {}", score.round(4))))
