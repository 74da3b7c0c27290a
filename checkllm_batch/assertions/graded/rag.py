"""Model-graded RAG checks: context-recall, context-relevance, answer-relevance (an embedding
cosine), and the inputs they and context-faithfulness (faithfulness.py) read: the context,
the query, a context's chunks. Each stage sends all of a batch's requests at once. Their
prompts (promptfoo's) and reply parsers are here."""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from ..registry import Value
from .context import Graded
from .prompts import Messages, render
from .replies import Outcome, Unparsable, failure, snippet
from .shapes import BOOLEAN, STRING, Shape, list_of, record
from .shared import case_values, cosine, graded, messages_for, needs, text_value, with_vars

CONTEXT_RECALL: Messages = [
    ("user", "Given a context, and an answer, analyze each sentence in the answer and classify "
     "if the sentence can be attributed to the given context or not. Write one line per "
     "sentence, ending with [Attributed] or [Not Attributed].\n\ncontext: Albert Einstein "
     "(14 March 1879 - 18 April 1955) was a German-born theoretical physicist, widely held to "
     "be one of the greatest scientists of all time. He received the 1921 Nobel Prize in "
     "Physics for his services to theoretical physics.\nanswer: Albert Einstein born in 14 "
     "March 1879 was German-born theoretical physicist. He received the 1921 Nobel Prize in "
     "Physics. He published 4 papers in 1905.\nclassification:\n1. Albert Einstein born in 14 "
     "March 1879 was German-born theoretical physicist. The date of birth is mentioned in the "
     "context. [Attributed]\n2. He received the 1921 Nobel Prize in Physics. The exact sentence "
     "is present in the context. [Attributed]\n3. He published 4 papers in 1905. There is no "
     "mention of papers in the context. [Not Attributed]\n\ncontext: {{ context }}\n"
     "answer: {{ groundTruth }}\nclassification:\n"),
]

CONTEXT_RELEVANCE: Messages = [
    ("user", "Please extract relevant sentences from the provided context that is absolutely "
     "required to answer the following query. If no relevant sentences are found, or if you "
     'believe the query cannot be answered from the given context, return the phrase '
     '"Insufficient Information". While extracting candidate sentences you\'re not allowed '
     "to make any changes to sentences from given context. Return one sentence per line.\n\n"
     "Query: {{ query }}\nContext: {{ context }}\nSentences:"),
]

ANSWER_RELEVANCE: Messages = [
    ("user", "Generate a question for the given answer.\nAnswer:\nThe PSLV-C56 mission is "
     "scheduled to be launched on Sunday, 30 July 2023 at 06:30 IST / 01:00 UTC. It will be "
     "launched from the Satish Dhawan Space Centre, Sriharikota, Andhra Pradesh, India\n"
     "Question: When is the scheduled launch date and time for the PSLV-C56 mission, and "
     "where will it be launched from?\n\nAnswer:{{ answer }}\nQuestion:"),
]

# the replies read, as JSON schemas (judge `structured: true`), each read as the free text
# it stands for: classified lines, quoted sentences, the generated question
CONTEXT_RECALL_SHAPE = Shape(
    "attributions", {"sentences": list_of(record(sentence=STRING, attributed=BOOLEAN), 1)},
    lambda obj: "\n".join(_classified(s) for s in obj["sentences"]))
CONTEXT_RELEVANCE_SHAPE = Shape(
    "relevant_sentences", {"sentences": list_of(STRING)},
    lambda obj: "\n".join(obj["sentences"]) or "Insufficient Information")
ANSWER_RELEVANCE_SHAPE = Shape("question", {"question": STRING}, lambda obj: obj["question"])

CONTEXT = "a context (`context` field, `vars.context`, or the prompt)"


def _classified(item: dict[str, Any]) -> str:
    mark = "Attributed" if item["attributed"] is True else "Not Attributed"
    return f"{item['sentence']} [{mark}]"


def context_of(g: Graded, prompt_fallback: bool = True) -> pl.Expr:
    options = [g.arg("context"), g.var("context")]
    return pl.coalesce(*options, *([pl.col("prompt")] if prompt_fallback else []))


def query_of(g: Graded, prompt_fallback: bool = False) -> pl.Expr:
    options = [g.arg("query"), g.var("query")]
    return pl.coalesce(*options, *([pl.col("prompt")] if prompt_fallback else []))


def chunks_of(text: str) -> list[str]:
    """A context: a JSON list of chunks (a list var), else the text itself."""
    if text.startswith("["):
        try:
            value = json.loads(text)
            if isinstance(value, list):
                return [str(v) for v in value]
        except ValueError:
            pass
    return [text]


def joined(text: str) -> str:
    return "\n\n".join(chunks_of(text))


@graded("context-recall", fields=("context",), threshold=0.5, csv_threshold=0.75)
def context_recall(g: Graded) -> pl.DataFrame:
    """Share of the ground-truth sentences the judge attributes to the context."""
    messages = messages_for(g, CONTEXT_RECALL)

    def build(item: dict[str, Any]):
        why = needs(item, "context", CONTEXT)
        if why:
            return why
        return g.chat(render(messages, case_values(item, {
            "context": joined(item["context"]), "groundTruth": item["truth"]})),
            CONTEXT_RECALL_SHAPE)

    def parse(_: dict[str, Any], text: str) -> Outcome:
        score = attributed(g.read(CONTEXT_RECALL_SHAPE, text))
        return score >= (g.threshold or 0.0), score, f"{score:.2f} of sentences attributed"

    return g.each({"context": context_of(g), "truth": text_value(g), **with_vars(g)},
                  lambda items: g.judge(items, build, parse))


@graded("context-relevance", Value.OPTIONAL, fields=("context", "query"), threshold=0.5,
        csv_threshold=0.75)
def context_relevance(g: Graded) -> pl.DataFrame:
    """Share of the context's units (lines, else sentences; or chunks) the judge quotes as needed
    to answer the query."""
    messages = messages_for(g, CONTEXT_RELEVANCE)

    def build(item: dict[str, Any]):
        why = needs(item, "context", CONTEXT) or needs(item, "query", "a `query` (or vars.query)")
        if why:
            return why
        return g.chat(render(messages, case_values(item, {
            "context": joined(item["context"]), "query": item["query"]})),
            CONTEXT_RELEVANCE_SHAPE)

    def parse(item: dict[str, Any], text: str) -> Outcome:
        text = g.read(CONTEXT_RELEVANCE_SHAPE, text)
        chunks = chunks_of(item["context"])
        listed = item["context"] != chunks[0]  # a list of chunks: one unit each
        units = len([c for c in chunks if c.strip()]) if listed else \
            len(sentences(chunks[0]))
        found = relevant_units(text, joined(item["context"]),
                                       listed or len(lines(chunks[0])) > 1)
        score = min(found, units) / units if units else 0.0
        return score >= (g.threshold or 0.0), score, f"{score:.2f} of the context is relevant"

    return g.each({"context": context_of(g, False), "query": query_of(g), **with_vars(g)},
                  lambda items: g.judge(items, build, parse))


@graded("answer-relevance", Value.OPTIONAL, fields=("query",), threshold=0.5,
        aliases=("model-graded-relevance",), csv_threshold=0.75)
def answer_relevance(g: Graded) -> pl.DataFrame:
    """Cosine between the query and a question the judge generates from the output."""
    messages = messages_for(g, ANSWER_RELEVANCE)

    def grade(items: list[dict[str, Any]]) -> list[Outcome]:
        def ask(item):
            return needs(item, "query", "a `query` (or vars.query, or the prompt)") or \
                g.chat(render(messages, case_values(item, {"answer": item["output"]})),
                       ANSWER_RELEVANCE_SHAPE)
        questions = g.ask(items, ask)
        texts = [r if isinstance(r, str) else g.read(ANSWER_RELEVANCE_SHAPE, r.text or "")
                 for r in questions]
        pairs = [{"item": i, "query": i["query"], "question": q, "why": failure(r)}
                 for i, q, r in zip(items, texts, questions)]
        vectors = g.runner.run([g.embed(t) for p in pairs if not p["why"]
                                for t in (p["query"], p["question"])])
        out: list[Outcome] = []
        for p in pairs:
            if p["why"]:
                out.append((None, None, p["why"]))
                continue
            a, b = vectors[g.embed(p["query"]).hash], vectors[g.embed(p["question"]).hash]
            g.attribute(p["item"], a, b)
            why = failure(a) or failure(b)
            if why or a.vector is None or b.vector is None:
                out.append((None, None, why or "judge: the embedding reply has no vector"))
                continue
            score = max(0.0, cosine(a.vector, b.vector))
            out.append((score >= (g.threshold or 0.0), score,
                        f"similarity {score:.3f} to generated question {p['question']!r}"))
        return out

    return g.each({"query": query_of(g, True), "output": pl.col("output"), **with_vars(g)},
                  grade)


def attributed(text: str) -> float:
    lines = [ln.lower() for ln in text.splitlines() if ln.strip()]
    classified = [ln for ln in lines if "[attributed]" in ln or "[not attributed]" in ln]
    if not classified:
        raise Unparsable(f"context-recall reply classifies no sentence: {snippet(text)}")
    return sum("[attributed]" in ln for ln in classified) / len(classified)

_MARKER_ONLY = re.compile(r"^\d+[.)]$")

_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*])\s*")

def lines(text: str) -> list[str]:
    """The non-blank lines, as they are (promptfoo's splitIntoSentences)."""
    return [ln for ln in text.split("\n") if ln.strip()]

def sentences(text: str) -> list[str]:
    """Units of a text: its non-blank lines when it has two or more, else its sentences
    (split after . ! ?); bare list markers ("1.") are no unit."""
    found = lines(text)
    parts = found if len(found) > 1 else re.split(r"(?<=[.!?])\s+", text)
    return [p.strip() for p in parts if p.strip() and not _MARKER_ONLY.match(p.strip())]

def relevant_units(text: str, context: str, presegmented: bool) -> int:
    """context-relevance: distinct units the judge quoted (by line for a context given by line
    or chunk, else by sentence); 0 for "Insufficient Information". A reply quoting nothing of
    the context is unreadable."""
    if "Insufficient Information" in text:
        return 0
    quoted = set(lines(text) if presegmented else sentences(text))
    flat = " ".join(context.lower().split())
    if quoted and not any(" ".join(_LIST_MARKER.sub("", q, count=1).lower().split()) in flat
                          for q in quoted):
        raise Unparsable(f"context-relevance reply quotes nothing of the context: {snippet(text)}")
    return len(quoted)
