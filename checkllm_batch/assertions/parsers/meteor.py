"""METEOR's internals (the `meteor` type is in overlap.py), as promptfoo computes it: greedy exact, Porter-stem and WordNet-synonym stages.

WordNet comes from the local WordNet 3.0 database (Debian's `wordnet-base`, or the
directory in $WNHOME / $WORDNET_DIR); nothing is downloaded. Without it, meteor is an
error naming the missing files, never a silent 0. The alignment stages are joins
over flat token frames (Polars); Python only stems each distinct word, looks up each
distinct word's synonyms, and settles the few rows where synonym matches compete.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ...js.whitespace import JS_SPACE_CLASS

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

WORDNET_DIRS = ("/usr/share/wordnet", "/usr/local/share/wordnet", "/usr/share/wordnet/dict")
POS = ("noun", "verb", "adj", "adv")


class WordNetMissing(RuntimeError):
    pass


def wordnet_dir() -> Path:
    env = [os.environ[k] for k in ("WORDNET_DIR", "WNHOME") if os.environ.get(k)]
    for d in [*env, *(str(Path(e) / "dict") for e in env), *WORDNET_DIRS]:
        if all((Path(d) / f"index.{p}").is_file() for p in POS):
            return Path(d)
    raise WordNetMissing(
        "meteor needs the WordNet 3.0 database (index.noun, data.noun, ...): install Debian's "
        "`wordnet-base` (apt-get install wordnet-base) or set WORDNET_DIR; looked in "
        + ", ".join([*env, *WORDNET_DIRS]))


@lru_cache(maxsize=1)
def _index() -> dict[str, list[tuple[str, int]]]:
    """lemma -> [(pos, synset offset)] over the four parts of speech."""
    root = wordnet_dir()
    index: dict[str, list[tuple[str, int]]] = {}
    for pos in POS:
        with open(root / f"index.{pos}", encoding="utf-8", errors="replace") as f:
            for line in f:  # row-wise: reading the WordNet index file once
                if line.startswith(" "):
                    continue
                parts = line.split()
                n_ptr = int(parts[3])
                n_syn = int(parts[2])
                offsets = parts[4 + n_ptr + 2: 4 + n_ptr + 2 + n_syn]
                index.setdefault(parts[0], []).extend((pos, int(o)) for o in offsets)
    return index


@lru_cache(maxsize=1)
def _data_files() -> dict[str, Any]:
    root = wordnet_dir()
    return {pos: open(root / f"data.{pos}", "rb") for pos in POS}


_MARKER = re.compile(r"\([a-z]+\)$")


@lru_cache(maxsize=200_000)
def synonyms(word: str) -> frozenset[str]:
    """The word and every single-word lemma of its synsets (as natural's WordNet.lookup)."""
    out = {word}
    for pos, offset in _index().get(word.replace(" ", "_"), ()):
        f = _data_files()[pos]
        f.seek(offset)
        parts = f.readline().decode("utf-8", "replace").split()
        count = int(parts[3], 16)
        for i in range(count):
            lemma = _MARKER.sub("", parts[4 + 2 * i])
            if "_" not in lemma:
                out.add(lemma)
    return frozenset(out)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("porter")


_LOGI = re.compile(r"[aeiouy][^aeiouy].*logi$")


def _natural(word: str, stemmed: str) -> str:
    """Snowball's original Porter stemmer, adjusted to stem like `natural` (promptfoo's):
    words of two letters stay, and -logi becomes -log (Porter's later rule). On 20,000
    WordNet nouns this differs from `natural` on 4."""
    if len(word) <= 2:
        return word
    if _LOGI.search(stemmed):
        return stemmed[:-1]
    return stemmed


def stem_words(words: list[str]) -> list[str]:
    lowered = [w.lower() for w in words]
    return [_natural(w, s) for w, s in zip(lowered, _stemmer().stemWords(lowered))]


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return stem_words([word])[0]


# --- the vectorised path: alignment stages as joins over flat token frames ------------------

JS_SPACE_RUN = f"[{JS_SPACE_CLASS}]+"
KEY = ["id", "ref"]


def meteor_tokens(text: pl.Expr) -> pl.Expr:
    """JavaScript `text.split(/\\s+/)`, trailing periods stripped, lower-cased."""
    return (text.str.replace_all(JS_SPACE_RUN, "\x00").str.split("\x00")
            .list.eval(pl.element().str.strip_chars_end(".").str.to_lowercase()))


def _flat(frame: pl.LazyFrame, keys: list[str], pos: str) -> pl.LazyFrame:
    length = pl.col("tok").list.len().cast(pl.Int64)
    return (frame.select(*keys, "tok", start=length.cum_sum() - length).explode("tok")
            .drop_nulls("tok").with_columns(
                (pl.int_range(pl.len(), dtype=pl.Int64) - pl.col("start")).alias(pos))
            .select(*keys, pos, w="tok"))


def _rank_desc(frame: pl.DataFrame, by: list[str], pos: str) -> pl.DataFrame:
    """k = 1 for the last occurrence of each `by` group (by position), 2 for the one before...
    A sort and a scan instead of a windowed rank."""
    frame = frame.sort([*by, pos], descending=[*([False] * len(by)), True])
    new_group = pl.any_horizontal([pl.col(c) != pl.col(c).shift(1) for c in by]).fill_null(True)
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    start = pl.when(new_group).then(index).otherwise(None).forward_fill()
    return frame.with_columns(k=index - start)


def _greedy_equal(cand: pl.DataFrame, ref: pl.DataFrame, word: str) -> pl.DataFrame:
    """promptfoo's exact stage on `word`: the k-th last candidate occurrence of a word takes
    the k-th last reference occurrence of it. Returns matches (id, ref, ci, rj)."""
    by = [*KEY, "wh"]  # sorting on a 64-bit hash of the word is much cheaper than on text
    cand = cand.with_columns(wh=pl.col(word).hash(3))
    ref = ref.with_columns(wh=pl.col(word).hash(3))
    return (_rank_desc(cand, by, "ci").join(_rank_desc(ref, by, "rj"), on=[*by, "k"])
            .select(*KEY, "ci", "rj"))


_STEMS: dict[str, str] = {}  # stems seen by this process


def _stems(words: pl.Series) -> pl.DataFrame:
    """Each distinct word and its stem (Snowball's C stemmer over the new words at once)."""
    uniq = words.unique().drop_nulls().to_list()
    new = [w for w in uniq if w not in _STEMS]
    if len(_STEMS) + len(new) > 2_000_000:
        _STEMS.clear()
    _STEMS.update(zip(new, stem_words(new)))
    return pl.DataFrame({"w": uniq, "out": [_STEMS[w] for w in uniq]},
                        schema={"w": pl.String, "out": pl.String})


def _synonym_matches(cand: pl.DataFrame, ref: pl.DataFrame) -> pl.DataFrame:
    """The synonym stage: candidate words from the end, each taking the last unmatched
    reference word among its synonyms. Candidate pairs come from joins; pairs that compete
    with no other pair are matches at once; only competing groups run the greedy loop."""
    schema: dict[str, PolarsDataType] = {"id": cand.schema["id"], "ref": pl.Int64, "ci": pl.Int64, "rj": pl.Int64}
    words = cand["w"].unique().drop_nulls().to_list()
    targets = set(ref["w"].unique().drop_nulls().to_list())
    # equal stems were all paired by the stem stage, so only other synonyms can match here
    table = pl.DataFrame([(w, s) for w in words for s in synonyms(w)  # row-wise: distinct
                          if s != w and s in targets],                # words only
                         schema={"w": pl.String, "syn": pl.String}, orient="row")
    pairs = (cand.join(table, on="w").join(ref.rename({"w": "syn"}), on=[*KEY, "syn"])
             .select(*KEY, "ci", "rj"))
    if pairs.is_empty():
        return pl.DataFrame(schema=schema)
    lone = ((pl.len().over([*KEY, "ci"]) == 1) & (pl.len().over([*KEY, "rj"]) == 1))
    pairs = pairs.with_columns(lone=lone)
    competing = (~pl.col("lone")).any().over(KEY)
    contested = pairs.filter(competing)
    settled = pairs.filter(~competing).select(list(schema))
    contested = contested.sort([*KEY, "ci", "rj"], descending=[False, False, True, True])
    out: list[tuple] = []
    group: tuple | None = None
    used_c: set[int] = set()
    used_r: set[int] = set()
    for i, r, ci, rj in zip(*(contested[c].to_list() for c in (*KEY, "ci", "rj"))):
        if (i, r) != group:  # row-wise: only pairs in groups where synonym matches compete
            group, used_c, used_r = (i, r), set(), set()
        if ci not in used_c and rj not in used_r:
            used_c.add(ci)
            used_r.add(rj)
            out.append((i, r, ci, rj))
    return pl.concat([settled, pl.DataFrame(out, schema=schema, orient="row")])


def meteor_scores(pairs: pl.DataFrame, alpha: float, beta: float, gamma: float) -> pl.DataFrame:
    """(id, score) for a frame of distinct (id, a: output, b: list of references)."""
    refs = (pairs.lazy().select("id", r="b").explode("r")
            .with_columns(ref=pl.int_range(pl.len(), dtype=pl.Int64).over("id")))
    words = _flat(pairs.lazy().select("id", tok=meteor_tokens(pl.col("a"))), ["id"], "ci")
    ref = _flat(refs.select(*KEY, tok=meteor_tokens(pl.col("r"))), KEY, "rj").collect()
    cand = words.join(refs.select(KEY), on="id").collect()  # the output, once per reference
    exact = _greedy_equal(cand, ref, "w")
    cand1 = cand.join(exact, on=[*KEY, "ci"], how="anti")
    ref1 = ref.join(exact, on=[*KEY, "rj"], how="anti")
    stems = _stems(pl.concat([cand1["w"], ref1["w"]]))
    cand1 = cand1.join(stems, on="w", how="left").with_columns(w="out").drop("out")
    ref1 = ref1.join(stems, on="w", how="left").with_columns(w="out").drop("out")
    stemmed = _greedy_equal(cand1, ref1, "w")
    cand2 = cand1.join(stemmed, on=[*KEY, "ci"], how="anti")
    ref2 = ref1.join(stemmed, on=[*KEY, "rj"], how="anti")
    matches = pl.concat([exact, stemmed, _synonym_matches(cand2, ref2)]).sort([*KEY, "ci"])
    step = ((pl.col("ci") - pl.col("ci").shift(1) != 1)
            | (pl.col("rj") - pl.col("rj").shift(1) != 1)).fill_null(True)
    per_pair = matches.group_by(KEY).agg(m=pl.len(), chunks=step.sum())
    lengths = (cand.group_by(KEY).agg(c=pl.len())
               .join(ref.group_by(KEY).agg(r=pl.len()), on=KEY, how="full", coalesce=True))
    p, r = pl.col("m") / pl.col("c"), pl.col("m") / pl.col("r")
    denominator = alpha * p + (1 - alpha) * r
    fmean = p * r / denominator
    score = (pl.when((pl.col("m") == 0) | (denominator == 0)).then(0.0)
             .otherwise((1 - gamma * (pl.col("chunks") / pl.col("m")) ** beta) * fmean))
    scored = (refs.select(KEY).collect().join(lengths, on=KEY, how="left")
              .join(per_pair, on=KEY, how="left").with_columns(pl.col("m").fill_null(0)))
    return scored.group_by("id").agg(score.fill_null(0.0).max().alias("score"))


def batch_scorer(params: tuple):
    """A map_batches function: METEOR of each (a: output, b: references) pair of a batch, with
    params (references or None when each row brings its own, alpha, beta, gamma)."""
    refs, alpha, beta, gamma = params

    def run(pairs: pl.Series) -> pl.Series:
        frame = pairs.struct.unnest().with_row_index("row")
        if refs is not None:
            frame = frame.with_columns(b=pl.lit(pl.Series([list(refs)])).first())
        bad = (pl.col("a").is_null() | (pl.col("a") == "")
               | pl.col("b").list.eval(pl.element().is_null()).list.any())
        uniq = (frame.filter(~bad).select("a", "b").unique(maintain_order=True)
                .with_row_index("id"))
        scores = meteor_scores(uniq, alpha, beta, gamma)
        back = (frame.join(uniq, on=["a", "b"], how="left", nulls_equal=True)
                .join(scores, on="id", how="left").sort("row"))
        return back["score"].cast(pl.Float64)

    return run
