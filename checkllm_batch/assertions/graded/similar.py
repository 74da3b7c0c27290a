"""Embedding similarity: similar (cosine), similar:dot, similar:euclidean between the output's
and the value's embeddings, each distinct text embedded once per batch."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from .._support import replies
from .._support.grading import cosine, graded

if TYPE_CHECKING:
    from ...judge.grading import Graded


def _similar(g: Graded, metric: str) -> pl.DataFrame:
    values = g.spec.value if isinstance(g.spec.value, list) else None
    threshold = g.threshold if g.threshold is not None else 0.75

    def measure(a: list[float], b: list[float]) -> tuple[float, bool, str]:
        if metric == "euclidean":
            d = math.dist(a, b)
            return 1.0 / (1.0 + d), d <= threshold + 1e-9, f"distance {d:.4f}"
        sim = cosine(a, b) if metric == "cosine" else float(np.dot(a, b))
        return min(1.0, max(0.0, sim)), sim >= threshold - 1e-9, f"{metric} similarity {sim:.4f}"

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        def expected(item):
            return values if values is not None else [item["value"]]
        texts = {t for i in items for t in [i["output"], *expected(i)] if t}
        vectors = g.runner.run([g.embed(t) for t in texts])
        out: list[replies.Outcome] = []
        for item in items:
            if not item["output"]:
                out.append((False, 0.0, "output is empty"))
                continue
            mine = vectors[g.embed(item["output"]).hash]
            g.attribute(item, mine, *(vectors.get(g.embed(t).hash) for t in expected(item) if t))
            best: tuple[float, bool, str] | None = None
            why = replies.failure(mine)
            for text in expected(item):
                other = vectors.get(g.embed(text).hash) if text else None
                why = why or (replies.failure(other) if other else "empty expected value")
                if why or other is None:
                    break
                if mine.vector is None or other.vector is None:
                    why = "judge: the embedding reply has no vector"
                    break
                result = measure(mine.vector, other.vector)
                if best is None or result[1] or (not best[1] and result[0] > best[0]):
                    best = result
                if result[1]:
                    break
            out.append((None, None, why) if why or best is None else best[1::-1] + (best[2],))
        return out

    return g.each({"output": pl.col("output"), "value": g.value}, grade)


@graded("similar", aliases=("similar:cosine",), threshold=0.75, csv_threshold=0.8)
def similar(g: Graded) -> pl.DataFrame:
    """Cosine similarity of the output's and the value's embeddings, at least the threshold."""
    return _similar(g, "cosine")


@graded("similar:dot", threshold=0.75)
def similar_dot(g: Graded) -> pl.DataFrame:
    """Dot product of the output's and the value's embeddings, at least the threshold."""
    return _similar(g, "dot")


@graded("similar:euclidean", threshold=0.75)
def similar_euclidean(g: Graded) -> pl.DataFrame:
    """Euclidean distance between the embeddings, at most the threshold."""
    return _similar(g, "euclidean")
