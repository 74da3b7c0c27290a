"""context-faithfulness: the judge splits the output into statements, then says which the
context supports (two calls, each stage for the whole batch at once). Its prompts
(promptfoo's) and reply parser are here."""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from ..registry import Value
from .context import Graded
from .prompts import Messages, from_rubric_prompt, render
from .rag import CONTEXT, context_of, joined, query_of
from .replies import Outcome, Unparsable, failure, snippet
from .shapes import STRING, Shape, list_of, one_of, record
from .shared import case_values, graded, needs, with_vars

FAITHFULNESS_LONGFORM: Messages = [
    ("user", "Given a question and answer, create one or several statements from each sentence "
     "in the given answer. Write one statement per line.\nquestion: Who was Albert Einstein "
     "and what is he best known for?\nanswer: He was a German-born theoretical physicist, "
     "widely acknowledged to be one of the greatest and most influential physicists of all "
     "time. He was best known for developing the theory of relativity.\nstatements:\nAlbert "
     "Einstein was born in Germany.\nAlbert Einstein was best known for his theory of "
     "relativity.\n\nquestion: {{ question }}\nanswer: {{ answer }}\nstatements:\n"),
]

FAITHFULNESS_NLI: Messages = [
    ("user", "Prompt: Natural language inference\nConsider the given context and following "
     "statements, then determine whether they are supported by the information present in "
     "the context. Provide a brief explanation for each statement before arriving at the "
     "verdict (Yes/No). Provide a final verdict for each statement in order at the end in "
     "the given format. Do not deviate from the specified format.\n\nContext:\nJohn is a "
     "student at XYZ University. He is pursuing a degree in Computer Science.\nstatements:\n"
     "1. John is majoring in Biology.\n2. John is a student at XYZ University.\nAnswer:\n"
     "1. John is majoring in Biology.\nExplanation: John's major is explicitly mentioned as "
     "Computer Science. Verdict: No.\n2. John is a student at XYZ University.\nExplanation: "
     "The context states it. Verdict: Yes.\nFinal verdict for each statement in order: No. "
     "Yes.\n\nContext:\n{{ context }}\nstatements:\n{{ statements }}\nAnswer:\n"),
]

# the replies read, as JSON schemas (judge `structured: true`), each read as the free text it
# stands for: one statement per line; the final verdict line
STATEMENTS_SHAPE = Shape("statements", {"statements": list_of(STRING, at_least=1)},
                         lambda obj: "\n".join(obj["statements"]))
NLI_SHAPE = Shape(
    "verdicts", {"verdicts": list_of(record(statement=STRING, explanation=STRING,
                                            verdict=one_of("Yes", "No")), at_least=1)},
    lambda obj: "Final verdict for each statement in order: "
    + " ".join(f"{v['verdict']}." for v in obj["verdicts"]))


@graded("context-faithfulness", Value.OPTIONAL, fields=("context", "query"), threshold=0.5,
        aliases=("model-graded-faithfulness",), csv_threshold=0.75)
def context_faithfulness(g: Graded) -> pl.DataFrame:
    """Share of the output's statements the judge finds supported by the context (2 calls)."""
    custom = g.rubric_prompt if isinstance(g.rubric_prompt, list) and len(g.rubric_prompt) == 2 \
        else None
    longform = from_rubric_prompt(custom[0]) if custom else FAITHFULNESS_LONGFORM
    nli = from_rubric_prompt(custom[1]) if custom else FAITHFULNESS_NLI

    def grade(items: list[dict[str, Any]]) -> list[Outcome]:
        def first(item):
            return needs(item, "context", CONTEXT) or g.chat(render(longform, case_values(
                item, {"question": item["query"] or "", "answer": item["output"]})),
                STATEMENTS_SHAPE)
        stage1 = g.ask(items, first)
        statements: list[list[str] | str] = []
        for reply in stage1:
            why = failure(reply)
            lines = [] if why or isinstance(reply, str) else [
                ln.strip() for ln in g.read(STATEMENTS_SHAPE, reply.text or "").splitlines()
                if ln.strip()]
            statements.append(why or (lines if lines else "judge extracted no statements"))

        def second(pair):
            item, found = pair["item"], pair["found"]
            if isinstance(found, str):
                return found
            return g.chat(render(nli, case_values(item, {
                "context": joined(item["context"]), "statements": "\n".join(found)})), NLI_SHAPE)
        pairs = [{"item": i, "found": s} for i, s in zip(items, statements)]
        stage2 = g.ask(pairs, second)
        out = []
        for found, reply in zip(statements, stage2):
            def parse(text, found=found):
                score = nli_supported(g.read(NLI_SHAPE, text), len(found))
                return score >= (g.threshold or 0.0), score, \
                    f"{score:.2f} of {len(found)} statements supported"
            out.append(g.settle(reply, parse))
        return out

    return g.each({"context": context_of(g, False), "query": query_of(g, True),
                   "output": pl.col("output"), **with_vars(g)}, grade)


def nli_supported(text: str, statements: int) -> float:
    """Share of statements supported; a statement without a verdict is unsupported."""
    low = text.lower().strip()
    marker = "final verdict for each statement in order:"
    if marker in low:
        verdicts = [p for p in low[low.index(marker) + len(marker):].split(".") if p.strip()]
        if not verdicts or not all(re.search(r"\b(?:yes|no)\b", v) for v in verdicts):
            raise Unparsable(f"faithfulness reply has unreadable verdicts: {snippet(text)}")
        unsupported = sum("yes" not in v for v in verdicts) + max(0, statements - len(verdicts))
    else:
        no, yes = low.count("verdict: no"), low.count("verdict: yes")
        if not no and not yes:
            raise Unparsable(f"faithfulness reply has no verdicts: {snippet(text)}")
        unsupported = no + max(0, statements - no - yes)
    return min(1.0, max(0.0, 1.0 - unsupported / statements))
