"""Model-graded RAG and conversation checks: context-recall, context-relevance,
context-faithfulness, answer-relevance (an embedding cosine), conversation-relevance. They
take several judge calls or embeddings; each stage sends all of a batch's requests at once."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import polars as pl

from ..registry import Value
from ..text import js_string
from . import prompts, replies
from .shared import (
    cosine,
    graded,
    messages_for,
    needs,
    render_values,
    text_value,
    with_vars,
)

if TYPE_CHECKING:
    from .context import Graded

CONTEXT = "a context (`context` field, `vars.context`, or the prompt)"


def _context(g: Graded, prompt_fallback: bool = True) -> pl.Expr:
    options = [g.arg("context"), g.var("context")]
    return pl.coalesce(*options, *([pl.col("prompt")] if prompt_fallback else []))


def _query(g: Graded, prompt_fallback: bool = False) -> pl.Expr:
    options = [g.arg("query"), g.var("query")]
    return pl.coalesce(*options, *([pl.col("prompt")] if prompt_fallback else []))


def _chunks(text: str) -> list[str]:
    """A context: a JSON list of chunks (a list var), else the text itself."""
    if text.startswith("["):
        try:
            value = json.loads(text)
            if isinstance(value, list):
                return [str(v) for v in value]
        except ValueError:
            pass
    return [text]


def _joined(text: str) -> str:
    return "\n\n".join(_chunks(text))


@graded("context-recall", fields=("context",), threshold=0.5, csv_threshold=0.75)
def context_recall(g: Graded) -> pl.DataFrame:
    """Share of the ground-truth sentences the judge attributes to the context."""
    messages = messages_for(g, prompts.CONTEXT_RECALL)

    def build(item: dict[str, Any]):
        why = needs(item, "context", CONTEXT)
        if why:
            return why
        return g.chat(prompts.render(messages, {"context": _joined(item["context"]),
                                                "groundTruth": item["truth"]}))

    def parse(_: dict[str, Any], text: str) -> replies.Outcome:
        score = replies.attributed(text)
        return score >= (g.threshold or 0.0), score, f"{score:.2f} of sentences attributed"

    return g.each({"context": _context(g), "truth": text_value(g)},
                  lambda items: g.judge(items, build, parse))


@graded("context-relevance", Value.OPTIONAL, fields=("context", "query"), threshold=0.5,
        csv_threshold=0.75)
def context_relevance(g: Graded) -> pl.DataFrame:
    """Share of the context's units (lines, else sentences; or chunks) the judge quotes as needed
    to answer the query."""
    messages = messages_for(g, prompts.CONTEXT_RELEVANCE)

    def build(item: dict[str, Any]):
        why = needs(item, "context", CONTEXT) or needs(item, "query", "a `query` (or vars.query)")
        if why:
            return why
        return g.chat(prompts.render(messages, {"context": _joined(item["context"]),
                                                "query": item["query"]}))

    def parse(item: dict[str, Any], text: str) -> replies.Outcome:
        chunks = _chunks(item["context"])
        listed = item["context"] != chunks[0]  # a list of chunks: one unit each
        units = len([c for c in chunks if c.strip()]) if listed else \
            len(replies.sentences(chunks[0]))
        found = replies.relevant_units(text, _joined(item["context"]),
                                       listed or len(replies.lines(chunks[0])) > 1)
        score = min(found, units) / units if units else 0.0
        return score >= (g.threshold or 0.0), score, f"{score:.2f} of the context is relevant"

    return g.each({"context": _context(g, False), "query": _query(g)},
                  lambda items: g.judge(items, build, parse))


@graded("context-faithfulness", Value.OPTIONAL, fields=("context", "query"), threshold=0.5,
        aliases=("model-graded-faithfulness",), csv_threshold=0.75)
def context_faithfulness(g: Graded) -> pl.DataFrame:
    """Share of the output's statements the judge finds supported by the context (2 calls)."""
    custom = g.rubric_prompt if isinstance(g.rubric_prompt, list) and len(g.rubric_prompt) == 2 \
        else None
    longform = prompts.from_rubric_prompt(custom[0]) if custom else prompts.FAITHFULNESS_LONGFORM
    nli = prompts.from_rubric_prompt(custom[1]) if custom else prompts.FAITHFULNESS_NLI

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        def first(item):
            return needs(item, "context", CONTEXT) or g.chat(prompts.render(
                longform, {"question": item["query"] or "", "answer": item["output"]}))
        stage1 = g.ask(items, first)
        statements: list[list[str] | str] = []
        for reply in stage1:
            why = replies.failure(reply)
            lines = [] if why or isinstance(reply, str) else [
                ln.strip() for ln in (reply.text or "").splitlines() if ln.strip()]
            statements.append(why or (lines if lines else "judge extracted no statements"))

        def second(pair):
            item, found = pair["item"], pair["found"]
            if isinstance(found, str):
                return found
            return g.chat(prompts.render(nli, {"context": _joined(item["context"]),
                                               "statements": "\n".join(found)}))
        pairs = [{"item": i, "found": s} for i, s in zip(items, statements)]
        stage2 = g.ask(pairs, second)
        out = []
        for found, reply in zip(statements, stage2):
            def parse(text, found=found):
                score = replies.nli_supported(text, len(found))
                return score >= (g.threshold or 0.0), score, \
                    f"{score:.2f} of {len(found)} statements supported"
            out.append(g.settle(reply, parse))
        return out

    return g.each({"context": _context(g, False), "query": _query(g, True),
                   "output": pl.col("output")}, grade)


@graded("answer-relevance", Value.OPTIONAL, fields=("query",), threshold=0.5,
        aliases=("model-graded-relevance",), csv_threshold=0.75)
def answer_relevance(g: Graded) -> pl.DataFrame:
    """Cosine between the query and a question the judge generates from the output."""
    messages = messages_for(g, prompts.ANSWER_RELEVANCE)

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        def ask(item):
            return needs(item, "query", "a `query` (or vars.query, or the prompt)") or \
                g.chat(prompts.render(messages, {"answer": item["output"]}))
        questions = g.ask(items, ask)
        texts = [r if isinstance(r, str) else r.text for r in questions]
        pairs = [{"item": i, "query": i["query"], "question": q, "why": replies.failure(r)}
                 for i, q, r in zip(items, texts, questions)]
        vectors = g.runner.run([g.embed(t) for p in pairs if not p["why"]
                                for t in (p["query"], p["question"])])
        out: list[replies.Outcome] = []
        for p in pairs:
            if p["why"]:
                out.append((None, None, p["why"]))
                continue
            a, b = vectors[g.embed(p["query"]).hash], vectors[g.embed(p["question"]).hash]
            g.attribute(p["item"], a, b)
            why = replies.failure(a) or replies.failure(b)
            if why or a.vector is None or b.vector is None:
                out.append((None, None, why or "judge: the embedding reply has no vector"))
                continue
            score = max(0.0, cosine(a.vector, b.vector))
            out.append((score >= (g.threshold or 0.0), score,
                        f"similarity {score:.3f} to generated question {p['question']!r}"))
        return out

    return g.each({"query": _query(g, True), "output": pl.col("output")}, grade)


NOT_RELEVANT = "Response is not relevant to the conversation context"


def _turns(item: dict[str, Any]) -> list[dict[str, Any]] | str:
    """The conversation: `vars._conversation` ({input, output} turns) when it has any, else
    the case's (prompt, output) as one turn; or why there is none."""
    raw = item.get("conversation")
    try:
        turns = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except ValueError:
        return "vars._conversation is not JSON: a list of {input, output} turns"
    if turns and isinstance(turns, list):
        if not all(isinstance(t, dict) for t in turns):
            return "vars._conversation must be a list of {input, output} turns"
        return turns
    if item.get("prompt") is None or item.get("output") is None:
        return "needs the case's prompt and output (or vars._conversation)"
    return [{"input": item["prompt"], "output": item["output"]}]


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@graded("conversation-relevance", Value.NONE, threshold=0.5)
def conversation_relevance(g: Graded) -> pl.DataFrame:
    """Share of the conversation's windows (config.windowSize turns, 5) whose last answer the
    judge finds relevant; a summary call explains the irrelevant ones."""
    config = g.spec.args.get("config") or {}
    size = int(config.get("windowSize") or 5)
    custom = messages_for(g, []) if g.rubric_prompt else None

    def window_request(pair: dict[str, Any]):
        window = pair["window"]
        if custom:
            return g.chat(prompts.render(custom, {**render_values(dict(pair["item"])),
                                                  "messages": window}))
        roles = [{"role": r, "content": _as_text(t[k])} for t in window
                 for r, k in (("user", "input"), ("assistant", "output"))]
        return g.chat(prompts.render(prompts.CONVERSATION_VERDICT, {
            "messages": json.dumps(roles, indent=2, ensure_ascii=False)}))

    def tally(answers: list) -> tuple[int, list[str]] | str:
        """(relevant windows, the judge's reasons for the others), or why there is none."""
        relevant, irrelevant = 0, []
        for reply in answers:
            why = replies.failure(reply)
            if why:
                return why
            try:
                found = replies.first_json_object(reply.text or "")
                if found.get("verdict") not in ("yes", "no"):
                    raise replies.Unparsable(
                        "Conversation relevance grader returned an invalid verdict")
            except replies.Unparsable as e:
                g.unparsed(reply)
                return f"Error parsing output: {e}"
            relevant += found["verdict"] == "yes"
            reason = found.get("reason")
            if found["verdict"] == "no" and reason and reason != NOT_RELEVANT:
                irrelevant.append(str(reason))
        return relevant, irrelevant

    def summary(pair: dict[str, Any]):
        return g.chat(prompts.render(prompts.CONVERSATION_REASON, {
            "score": js_string(pair["score"]),
            "irrelevancies": json.dumps(pair["irrelevant"], indent=2, ensure_ascii=False)}))

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        turns = [_turns(item) for item in items]
        windows = [{"item": item, "window": t[max(0, i - size + 1):i + 1]}
                   for item, t in zip(items, turns) if not isinstance(t, str)
                   for i in range(len(t))]
        answers = iter(g.ask(windows, window_request))
        counted = [t if isinstance(t, str) else tally([next(answers) for _ in t]) for t in turns]
        scored: list[dict[str, Any]] = [{"item": item, "score": c[0] / len(t), "irrelevant": c[1]}
                  for item, t, c in zip(items, turns, counted) if not isinstance(c, str)]
        explain = [p for p in scored if p["irrelevant"] and p["score"] < 1]
        summaries = {id(p["item"]): r for p, r in zip(explain, g.ask(explain, summary))}
        out: list[replies.Outcome] = []
        for item, t, c in zip(items, turns, counted):
            if isinstance(c, str):
                out.append((None, None, c))
                continue
            reason = f"{c[0]} out of {len(t)} conversation windows were relevant"
            reply = summaries.get(id(item))
            if reply is not None and not isinstance(reply, str) and not replies.failure(reply):
                try:
                    reason = replies.first_json_object(reply.text or "").get("reason") or reason
                except replies.Unparsable:  # the count says it: keep that reason
                    g.unparsed(reply)
            score = c[0] / len(t)
            assert g.threshold is not None  # the type's default_threshold is 0.5
            out.append((score >= g.threshold - 1e-12, score, str(reason)))
        return out

    return g.each({"conversation": g.var("_conversation"), "prompt": pl.col("prompt"),
                   "output": pl.col("output"), **with_vars(g)}, grade)

