"""METEOR, as promptfoo computes it: greedy exact, Porter-stem and WordNet-synonym stages.

WordNet comes from the local WordNet 3.0 database (Debian's `wordnet-base`, or the
directory in $WNHOME / $WORDNET_DIR); nothing is downloaded. Without it, meteor is an
error naming the missing files, never a silent 0. Scores run once per distinct
(output, references) pair, on every core when there are many.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from .overlap import _references
from .pool import over_distinct_pool
from .registry import Ctx, Kind, Verdict, assertion

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
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return _stemmer().stem(word, to_lowercase=True)


def _match(cand: list[tuple[int, str]], ref: list[tuple[int, str]], same) -> tuple[list, list, list]:
    """promptfoo's greedy stage: candidates from the end, each takes the last matching ref."""
    matches, cand, ref = [], list(cand), list(ref)
    for i in range(len(cand) - 1, -1, -1):
        for j in range(len(ref) - 1, -1, -1):
            if same(cand[i][1], ref[j][1]):
                matches.append((cand[i][0], ref[j][0]))
                del cand[i], ref[j]
                break
    return matches, cand, ref


def _tokens(text: str) -> list[str]:
    return [re.sub(r"\.+$", "", w).lower() for w in re.split(r"\s+", text)]


def single_meteor(candidate: str, reference: str, alpha: float, beta: float, gamma: float
                  ) -> float:
    cand = list(enumerate(_tokens(candidate)))
    ref = list(enumerate(_tokens(reference)))
    exact, c1, r1 = _match(cand, ref, str.__eq__)
    stems, c2, r2 = _match([(i, stem(w)) for i, w in c1], [(i, stem(w)) for i, w in r1],
                           str.__eq__)
    syn, _, _ = _match(c2, r2, lambda c, r: r in synonyms(c))
    matches = sorted(exact + stems + syn)
    m = len(matches)
    if m == 0 or not cand or not ref:
        return 0.0
    p, r = m / len(cand), m / len(ref)
    denominator = alpha * p + (1 - alpha) * r
    if denominator == 0:
        return 0.0
    chunks = 1 + sum(1 for a, b in zip(matches, matches[1:])
                     if b[0] != a[0] + 1 or b[1] != a[1] + 1)
    return (1 - gamma * (chunks / m) ** beta) * (p * r / denominator)


def meteor_check(pair: dict, params: tuple) -> tuple[bool | None, str | None]:
    refs, alpha, beta, gamma = params
    refs = refs if refs is not None else [pair["b"]]
    if not pair["a"] or any(r is None for r in refs):
        return None, "meteor needs a non-empty output and reference"
    try:
        score = max(single_meteor(pair["a"], r, alpha, beta, gamma) for r in refs)
    except WordNetMissing as e:
        return None, str(e)
    return True, repr(score)


def _params(value: Any, spec: Any) -> tuple:
    refs = _references(value, spec) if value is not None else None
    args = spec.args if spec is not None else {}
    out = []
    for key, default in (("alpha", 0.9), ("beta", 3.0), ("gamma", 0.5)):
        v = args.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{key} must be a number")
        out.append(float(v))
    return (tuple(refs) if refs else None, *out)


@assertion("meteor", kind=Kind.DISTINCT, default_threshold=0.5, fields=("alpha", "beta", "gamma"),
           prepare=_params)
def meteor(ctx: Ctx) -> Verdict:
    """METEOR (exact, stem, WordNet-synonym alignment; max over references) >= threshold."""
    try:
        wordnet_dir()
    except WordNetMissing as e:  # every row is an error naming what is missing
        return Verdict(pl.lit(None, pl.Boolean), "have a METEOR score", detail=pl.lit(str(e)))
    params = ctx.prepared if ctx.literal is not None else _params(None, ctx.spec)
    value = pl.lit(None, pl.String) if ctx.literal is not None else ctx.value.cast(pl.String)
    result = over_distinct_pool(pl.struct(a=ctx.output, b=value), meteor_check, params)
    score = result.struct.field("detail").cast(pl.Float64, strict=False)
    ok = result.struct.field("ok")
    t = ctx.threshold
    return Verdict(pl.when(ok.is_null()).then(None).otherwise(score >= t),
                   f"have METEOR >= {t:g}", score=score,
                   detail=pl.when(ok.is_null()).then(result.struct.field("detail"))
                   .otherwise(pl.format("METEOR {}", score.round(4))))
