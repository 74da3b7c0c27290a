"""Synthetic outputs for the benchmarks: prose and JSON mixed, 300–800 chars, per-row vars."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import yaml

WORDS = ("the model answer energy light plant cell water carbon sugar leaf sun process green "
         "chemical reaction oxygen produce convert store root growth season climate photon "
         "Photosynthesis Paris France capital city river museum history ancient modern").split()
WORDS_PER_ROW = 120


def outputs(n: int, seed: int = 0, pool: int = 20_000) -> pl.DataFrame:
    """n cases for one default test: output, expected, reference, provider.

    Every output is distinct (it carries its case number), so checks that run once per
    distinct value get no discount from repetition. `reference` is what a dataset's expected
    answer looks like: in 85 % of rows the output with 1-40 characters replaced, in 5 % the
    output itself, in 10 % another row's output (far apart)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(WORDS)
    texts = pl.Series(vocab[rng.integers(0, len(WORDS), (pool, WORDS_PER_ROW))].tolist(),
                      dtype=pl.List(pl.String)).list.join(" ")
    frame = pl.DataFrame({"i": np.arange(n), "prose": texts.gather(rng.integers(0, pool, n)),
                          "length": rng.integers(300, 790, n), "json": rng.random(n) < 0.5,
                          "conf": rng.random(n).round(3)})
    body = pl.concat_str([pl.lit("case "), pl.col("i").cast(pl.String), pl.lit(": "),
                          pl.col("prose")])
    as_json = pl.concat_str([
        pl.lit('{"answer": "'), body.str.slice(0, pl.col("length") - 60),
        pl.lit('", "confidence": '), pl.col("conf").cast(pl.String), pl.lit(', "tags": ["a"]}')])
    output = pl.when(pl.col("json")).then(as_json).otherwise(
        pl.concat_str([pl.lit("Answer: "), body.str.slice(0, pl.col("length"))]))
    frame = frame.select(
        output=output,
        expected=pl.col("prose").str.split(" ").list.get(3),
        provider=pl.when(pl.col("conf") < 0.5).then(pl.lit("model-a")).otherwise(pl.lit("model-b")),
    )
    return frame.insert_column(2, _references(frame["output"], rng))


def _references(outputs: pl.Series, rng: np.random.Generator) -> pl.Series:
    """Each output near-copied (1-40 characters replaced), copied, or swapped for another."""
    n = len(outputs)
    kind, edits = rng.random(n), rng.integers(1, 41, n)
    # the outputs are ASCII: replace bytes in one buffer holding them all, end to end
    arrow = outputs.to_arrow().cast(pa.large_string())
    _, offsets, data = arrow.buffers()
    starts = np.frombuffer(offsets, dtype=np.int64)[:n + 1]
    text = np.frombuffer(data, dtype=np.uint8)[:starts[-1]].copy()
    edited = np.flatnonzero(kind >= 0.15)
    rows = np.repeat(edited, edits[edited])
    lengths = starts[rows + 1] - starts[rows]
    text[starts[rows] + (rng.random(len(rows)) * lengths).astype(np.int64)] = ord("#")
    near = pl.Series(pa.LargeStringArray.from_buffers(n, pa.py_buffer(starts),
                                                      pa.py_buffer(text)))
    other = outputs.gather(rng.integers(0, n, n))
    return (pl.select(pl.when(pl.lit(kind) < 0.05).then(outputs)
                      .when(pl.lit(kind) < 0.15).then(other).otherwise(near))
            .to_series().alias("reference"))


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


def literal_suite(values: dict[str, str]) -> str:
    """SUITE with each `{{var}}` value replaced by one literal (`values[var]`), the same on
    every row: the suite as it reads before its values are moved into vars."""
    suite = yaml.safe_load(SUITE)
    for a in suite["defaultTest"]["assert"]:
        var = str(a.get("value", "")).removeprefix("{{").removesuffix("}}")
        if var in values:
            a["value"] = values[var]
    return yaml.safe_dump(suite, sort_keys=False, allow_unicode=True)


# the JSON Schema of the suite's contains-json, for the per-row loop
SCHEMA = yaml.safe_load(SUITE)["defaultTest"]["assert"][7]["value"]
