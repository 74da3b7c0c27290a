"""Embedding similarity: similar (cosine), similar:dot, similar:euclidean between the output's
and the value's embeddings, each distinct text embedded once per batch."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import polars as pl

from ...js import template
from . import replies
from .context import Graded
from .shared import cosine, graded

# the types of this module, stored by these names: their judge is the embedding model
EMBEDDING_TYPES = ("similar", "similar:dot", "similar:euclidean")
EPSILON = sys.float_info.epsilon  # promptfoo's Number.EPSILON on both sides of the threshold


def _strings(value: Any, spec: Any) -> None:
    if not isinstance(value, (str, list)) or value == []:
        raise ValueError("value must be a string or a non-empty list of strings "
                         "(promptfoo rejects any other value here)")


def _similar(g: Graded, metric: str) -> pl.DataFrame:
    values = g.spec.value if isinstance(g.spec.value, list) else [g.spec.value]
    threshold = g.threshold if g.threshold is not None else 0.75
    negate = g.spec.negate

    def measure(a: list[float], b: list[float]) -> tuple[float, bool, str]:
        """(score, raw pass, reason). As promptfoo, `not-` passes at the threshold too: its
        raw pass is the strict side, which the negation flips."""
        if len(a) != len(b):
            raise ValueError("the embeddings differ in length")
        if metric == "euclidean":
            d = math.dist(a, b)
            near = d < threshold - EPSILON if negate else d <= threshold + EPSILON
            return 1.0 / (1.0 + d), near, f"distance {d:.4f}"
        sim = cosine(a, b) if metric == "cosine" else float(np.dot(a, b))
        close = not sim <= threshold + EPSILON if negate else sim >= threshold - EPSILON
        score = min(1.0, max(0.0, sim)) if math.isfinite(sim) else sim  # NaN / inf: as is
        return score, close, f"{metric} similarity {sim:.4f}"

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        def expected(item: dict[str, Any]) -> list[str | None]:
            return [item[f"value{i}"] for i in range(len(values))]
        texts = {t for i in items for t in [i["output"], *expected(i)] if t is not None}
        vectors = g.runner.run([g.embed(t) for t in texts])
        out: list[replies.Outcome] = []
        for item in items:
            mine = vectors[g.embed(item["output"]).hash]
            g.attribute(item, mine, *(vectors.get(g.embed(t).hash) for t in expected(item)
                                      if t is not None))
            best: tuple[float, bool, str] | None = None
            why = replies.failure(mine)
            for value, text in zip(values, expected(item)):
                other = vectors.get(g.embed(text).hash) if text is not None else None
                why = why or (replies.failure(other) if other else "the value did not render")
                if not isinstance(value, str):  # promptfoo's embedding call refuses it
                    why = why or f"cannot embed the non-string value {value!r}"
                if why or other is None:
                    break
                if mine.vector is None or other.vector is None:
                    why = "judge: the embedding reply has no vector"
                    break
                try:
                    with np.errstate(all="ignore"):  # an overflow is a NaN or inf, as in promptfoo
                        result = measure(mine.vector, other.vector)
                except ValueError as e:
                    why = str(e)
                    break
                if best is None or result[1] or (not best[1] and result[0] > best[0]):
                    best = result
                if result[1]:
                    break
            out.append((None, None, why) if why or best is None else best[1::-1] + (best[2],))
        return out

    inputs = {f"value{i}": template.text(v, g.rows) for i, v in enumerate(values)}
    return g.each({"output": pl.col("output"), **inputs}, grade)


@graded("similar", aliases=("similar:cosine",), threshold=0.75, csv_threshold=0.8,
        prepare=_strings)
def similar(g: Graded) -> pl.DataFrame:
    """Cosine similarity of the output's and the value's embeddings, at least the threshold."""
    return _similar(g, "cosine")


@graded("similar:dot", threshold=0.75, prepare=_strings)
def similar_dot(g: Graded) -> pl.DataFrame:
    """Dot product of the output's and the value's embeddings, at least the threshold."""
    return _similar(g, "dot")


@graded("similar:euclidean", threshold=0.75, prepare=_strings)
def similar_euclidean(g: Graded) -> pl.DataFrame:
    """Euclidean distance between the embeddings, at most the threshold."""
    return _similar(g, "euclidean")
