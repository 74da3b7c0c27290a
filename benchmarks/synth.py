"""Synthetic outputs for the benchmarks: prose and JSON mixed, 300–800 chars, per-row vars."""

from __future__ import annotations

import numpy as np
import polars as pl

WORDS = ("the model answer energy light plant cell water carbon sugar leaf sun process green "
         "chemical reaction oxygen produce convert store root growth season climate photon "
         "Photosynthesis Paris France capital city river museum history ancient modern").split()
WORDS_PER_ROW = 120


def outputs(n: int, seed: int = 0, pool: int = 20_000) -> pl.DataFrame:
    """n cases for one default test: output, expected, reference, provider.

    Every output is distinct (it carries its case number), so checks that run once per
    distinct value get no discount from repetition."""
    rng = np.random.default_rng(seed)
    vocab = np.array(WORDS)
    texts = pl.Series(vocab[rng.integers(0, len(WORDS), (pool, WORDS_PER_ROW))].tolist(),
                      dtype=pl.List(pl.String)).list.join(" ")
    frame = pl.DataFrame({"i": np.arange(n), "prose": texts.gather(rng.integers(0, pool, n)),
                          "length": rng.integers(300, 790, n), "json": rng.random(n) < 0.5,
                          "conf": rng.random(n).round(3), "typo": rng.integers(0, 8, n)})
    body = pl.concat_str([pl.lit("case "), pl.col("i").cast(pl.String), pl.lit(": "),
                          pl.col("prose")])
    as_json = pl.concat_str([
        pl.lit('{"answer": "'), body.str.slice(0, pl.col("length") - 60),
        pl.lit('", "confidence": '), pl.col("conf").cast(pl.String), pl.lit(', "tags": ["a"]}')])
    output = pl.when(pl.col("json")).then(as_json).otherwise(
        pl.concat_str([pl.lit("Answer: "), body.str.slice(0, pl.col("length"))]))
    return frame.select(
        output=output,
        expected=pl.col("prose").str.split(" ").list.get(3),
        # a near copy of the output: a few characters changed at the start
        reference=pl.concat_str([pl.lit("x").repeat_by(pl.col("typo")).list.join(""),
                                 output.str.slice(pl.col("typo"))]),
        provider=pl.when(pl.col("conf") < 0.5).then(pl.lit("model-a")).otherwise(pl.lit("model-b")),
    )


SUITE = """\
description: benchmark suite, 10 assertions per case
defaultTest:
  assert:
    - type: contains
      value: "{{expected}}"
    - type: icontains-any
      value: [photosynthesis, paris, oxygen]
    - type: regex
      value: "\\\\b(energy|light)\\\\b"
    - type: not-contains
      value: "As an AI language model"
    - type: starts-with
      value: "Answer:"
    - type: levenshtein
      value: "{{reference}}"
    - type: is-json
    - type: contains-json
      value:
        type: object
        required: [answer, confidence]
        properties:
          confidence: {type: number, minimum: 0, maximum: 1}
    - type: equals
      value: "{{reference}}"
    - type: similarity
      value: "{{reference}}"
"""
# The same suite with one value for every row where SUITE reads each row's vars.
LITERAL_SUITE = (SUITE.replace('"{{expected}}"', '"energy"')
                 .replace('"{{reference}}"', '"Answer: case 1: the model answer energy light"'))
