"""A mixed graded suite over simple factual questions, for the real judge server: half the
outputs right, half wrong, so a judge that reads them has something to tell apart.

The suite has the five types of issue 33's measurement (llm-rubric, model-graded-closedqa,
factuality, answer-relevance, similar); `cases(n)` gives n rows (n <= 2 * len(CAPITALS))."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import yaml

CAPITALS = [
    ("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Germany", "Berlin"),
    ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Canada", "Ottawa"), ("Peru", "Lima"),
    ("Kenya", "Nairobi"), ("Norway", "Oslo"), ("Greece", "Athens"), ("Poland", "Warsaw"),
    ("Portugal", "Lisbon"), ("Ireland", "Dublin"), ("Austria", "Vienna"), ("Cuba", "Havana"),
    ("Chile", "Santiago"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"),
    ("Hungary", "Budapest"), ("Thailand", "Bangkok"), ("Russia", "Moscow"),
    ("China", "Beijing"), ("India", "New Delhi"), ("Mexico", "Mexico City"),
    ("Argentina", "Buenos Aires"), ("Belgium", "Brussels"), ("Denmark", "Copenhagen"),
    ("Turkey", "Ankara"), ("Vietnam", "Hanoi"),
]

ASSERTIONS: list[dict[str, Any]] = [
    {"type": "llm-rubric", "value": "The answer names {{ capital }} as the capital"},
    {"type": "model-graded-closedqa", "value": "The answer names {{ capital }}"},
    {"type": "factuality", "value": "The capital of {{ country }} is {{ capital }}."},
    {"type": "answer-relevance", "threshold": 0.3},
    {"type": "similar", "value": "The capital of {{ country }} is {{ capital }}.",
     "threshold": 0.6},
]


def suite(judge: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"defaultTest": {"assert": ASSERTIONS}}
    if judge:
        out["judge"] = judge
    return out


def write(path: Path, judge: dict[str, Any] | None = None) -> Path:
    path.write_text(yaml.safe_dump(suite(judge), sort_keys=False))
    return path


def cases(n: int = 60) -> pl.DataFrame:
    """Row i asks for the capital of CAPITALS[i // 2]; odd rows answer with the next
    country's capital (wrong)."""
    rows = []
    for i in range(n):
        country, capital = CAPITALS[i // 2 % len(CAPITALS)]
        said = capital if i % 2 == 0 else CAPITALS[(i // 2 + 1) % len(CAPITALS)][1]
        rows.append({"prompt": f"What is the capital of {country}?",
                     "query": f"What is the capital of {country}?",
                     "output": f"The capital of {country} is {said}.",
                     "country": country, "capital": capital})
    return pl.DataFrame(rows)
