"""Types that compare the outputs of one test row (several providers or prompts): select-best
(the judge picks one; its prompt and reply parser are here) and max-score. The engine leaves
their rows pending in each batch; after every batch evaluate/judging/decide.py reads the
stored cases and calls the type's function."""

from __future__ import annotations

import re
from typing import Any

from ...suites.model import AssertionSpec
from ..registry import Kind, Value, assertion
from .context import Graded
from .prompts import Messages, render
from .replies import Outcome, Unparsable, snippet
from .shapes import Shape
from .shared import messages_for

SELECT_BEST: Messages = [
    ("system", "You are comparing multiple pieces of text to see which best fits the "
     "following criteria: {{ criteria }}\n\nHere are the pieces of text:\n\n{{ outputs }}\n\n"
     "Output the index of the text that best fits the criteria. You must output a single "
     "integer."),
]



def select_best_shape(n: int) -> Shape:
    """The reply read, as a JSON schema (judge `structured: true`): an index of the n
    outputs, read as the bare index the free-text reply gives."""
    return Shape("best_index", {"index": {"type": "integer", "minimum": 0, "maximum": n - 1}},
                 lambda obj: str(int(obj["index"])))


@assertion("select-best", kind=Kind.ACROSS, needs_text=False, negatable=False, uses_judge=True)
def select_best(g: Graded, spec: AssertionSpec, groups: list[list[dict[str, Any]]]
                ) -> list[Outcome]:
    """The judge picks the best output of the test for the criteria: it passes, others fail.

    One judge call per group of outputs (the cases of one test row); an outcome per case."""
    messages = messages_for(g, SELECT_BEST)
    criteria = str(g.spec.value)

    def build(group: dict[str, Any]):
        cases = group["cases"]
        if len(cases) < 2:
            return "select-best needs at least 2 outputs of the test"
        listed = "\n".join(f'<Text index="{i}">\n{c["output"] or ""}\n</Text>'
                           for i, c in enumerate(cases))
        return g.chat(render(messages, {"criteria": criteria, "outputs": listed}),
                      select_best_shape(len(cases)))

    wrapped = [{"cases": cases} for cases in groups]
    out: list[Outcome] = []
    for group, reply in zip(wrapped, g.ask(wrapped, build)):
        n = len(group["cases"])

        def parse(text: str, n=n) -> Outcome:
            index = first_number(g.read(select_best_shape(n), text))
            if index >= n:
                raise Unparsable(f"select-best index {index} out of range (0-{n - 1})")
            return True, float(index), None
        winner = g.settle(reply, parse)
        for i in range(n):
            if winner[0] is None:
                out.append(winner)
            elif i == int(winner[1] or 0):
                out.append((True, 1.0, "Output selected as the best"))
            else:
                out.append((False, 0.0, f"Output not selected (output {int(winner[1] or 0)} "
                                        "was)"))
    return out


@assertion("max-score", kind=Kind.ACROSS, value=Value.OPTIONAL, needs_text=False,
           negatable=False)
def max_score(g: Graded | None, spec: AssertionSpec, groups: list[list[dict[str, Any]]]
              ) -> list[Outcome]:
    """The output with the highest (weighted) score of the test's other assertions passes.

    Per group: each case's aggregate of its other scores; the highest one wins."""
    options = spec.value if isinstance(spec.value, dict) else {}
    method, weights = options.get("method", "average"), options.get("weights") or {}
    threshold = options.get("threshold")
    out: list[Outcome] = []
    for cases in groups:
        if len(cases) < 2:
            why = "max-score needs at least 2 outputs of the test"
            out.extend([(None, None, why)] * len(cases))
            continue
        totals: list[float | None] = []
        for c in cases:
            scored = [(weights.get(t, 1.0), s) for t, s in c["scores"] if s is not None]
            if not scored:
                totals.append(None)
                continue
            total = sum(w * s for w, s in scored)
            weight = sum(w for w, _ in scored)
            totals.append(total if method == "sum" else (total / weight if weight else 0.0))
        if any(t is None for t in totals):
            out.extend([(None, None, "max-score: an output has no other scored assertion")]
                       * len(cases))
            continue
        best = max(range(len(totals)), key=lambda i: (totals[i], -i))
        won = threshold is None or totals[best] >= threshold
        for i, t in enumerate(totals):
            if won and i == best:
                out.append((True, 1.0, f"Highest score {t:.4f}"))
            else:
                out.append((False, 0.0, f"Score {t:.4f}, not the highest" if won
                            else f"Max score {totals[best]:.4f} below threshold {threshold}"))
    return out


def first_number(text: str) -> int:
    """The first whole number in the reply (promptfoo reads `\\d+`): "10" is output 10."""
    m = re.search(r"\d+", text.strip())
    if not m:
        raise Unparsable(f"select-best reply has no index: {snippet(text)}")
    return int(m.group(0))
