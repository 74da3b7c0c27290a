"""Model-graded types that take several calls or embeddings: RAG context checks,
answer-relevance, g-eval, similar. Each stage sends all of a batch's requests at once."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ._support import prompts, replies
from .graded import _messages, _needs, _text_value, _values, _with_vars, graded
from .registry import Value
from .text import js_string

if TYPE_CHECKING:
    from ..judge.grading import Graded

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


@graded("context-recall", fields=("context",), threshold=0.5)
def context_recall(g: Graded) -> pl.DataFrame:
    """Share of the ground-truth sentences the judge attributes to the context."""
    messages = _messages(g, prompts.CONTEXT_RECALL)

    def build(item: dict[str, Any]):
        why = _needs(item, "context", CONTEXT)
        if why:
            return why
        return g.chat(prompts.render(messages, {"context": _joined(item["context"]),
                                                "groundTruth": item["truth"]}))

    def parse(_: dict[str, Any], text: str) -> replies.Outcome:
        score = replies.attributed(text)
        return score >= (g.threshold or 0.0), score, f"{score:.2f} of sentences attributed"

    return g.each({"context": _context(g), "truth": _text_value(g)},
                  lambda items: g.judge(items, build, parse))


@graded("context-relevance", Value.OPTIONAL, fields=("context", "query"), threshold=0.5)
def context_relevance(g: Graded) -> pl.DataFrame:
    """Share of the context's lines (or chunks) the judge needs to answer the query."""
    messages = _messages(g, prompts.CONTEXT_RELEVANCE)

    def build(item: dict[str, Any]):
        why = _needs(item, "context", CONTEXT) or _needs(item, "query", "a `query` (or vars.query)")
        if why:
            return why
        return g.chat(prompts.render(messages, {"context": _joined(item["context"]),
                                                "query": item["query"]}))

    def parse(item: dict[str, Any], text: str) -> replies.Outcome:
        chunks = _chunks(item["context"])
        units = len([c for c in chunks if c.strip()]) if len(chunks) > 1 else \
            len([ln for ln in chunks[0].splitlines() if ln.strip()])
        score = min(1.0, replies.extracted_lines(text) / max(units, 1))
        return score >= (g.threshold or 0.0), score, f"{score:.2f} of the context is relevant"

    return g.each({"context": _context(g, False), "query": _query(g)},
                  lambda items: g.judge(items, build, parse))


@graded("context-faithfulness", Value.OPTIONAL, fields=("context", "query"), threshold=0.5,
        aliases=("model-graded-faithfulness",))
def context_faithfulness(g: Graded) -> pl.DataFrame:
    """Share of the output's statements the judge finds supported by the context (2 calls)."""
    custom = g.rubric_prompt if isinstance(g.rubric_prompt, list) and len(g.rubric_prompt) == 2 \
        else None
    longform = prompts.from_rubric_prompt(custom[0]) if custom else prompts.FAITHFULNESS_LONGFORM
    nli = prompts.from_rubric_prompt(custom[1]) if custom else prompts.FAITHFULNESS_NLI

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        def first(item):
            return _needs(item, "context", CONTEXT) or g.chat(prompts.render(
                longform, {"question": item["query"] or "", "answer": item["output"]}))
        stage1 = g.ask(items, first)
        statements: list[list[str] | str] = []
        for reply in stage1:
            why = replies.failure(reply)
            lines = [] if why else [ln.strip() for ln in (reply.text or "").splitlines()
                                    if ln.strip()]
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


def _cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / norm) if norm else 0.0


@graded("answer-relevance", Value.OPTIONAL, fields=("query",), threshold=0.5,
        aliases=("model-graded-relevance",))
def answer_relevance(g: Graded) -> pl.DataFrame:
    """Cosine between the query and a question the judge generates from the output."""
    messages = _messages(g, prompts.ANSWER_RELEVANCE)

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        def ask(item):
            return _needs(item, "query", "a `query` (or vars.query, or the prompt)") or \
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
            if why:
                out.append((None, None, why))
                continue
            score = max(0.0, _cosine(a.vector, b.vector))
            out.append((score >= (g.threshold or 0.0), score,
                        f"similarity {score:.3f} to generated question {p['question']!r}"))
        return out

    return g.each({"query": _query(g, True), "output": pl.col("output")}, grade)


@graded("g-eval", threshold=0.7)
def g_eval(g: Graded) -> pl.DataFrame:
    """G-Eval: the judge writes evaluation steps for the criteria, then scores 0-10."""
    criteria = g.spec.value if isinstance(g.spec.value, list) else [g.spec.value]
    custom = g.rubric_prompt if isinstance(g.rubric_prompt, dict) else {}
    steps_prompt = prompts.from_rubric_prompt(custom["steps"]) if "steps" in custom \
        else prompts.GEVAL_STEPS
    eval_prompt = prompts.from_rubric_prompt(custom["evaluate"]) if "evaluate" in custom \
        else prompts.GEVAL_EVALUATE

    def grade(items: list[dict[str, Any]]) -> list[replies.Outcome]:
        step_replies = g.runner.run([g.chat(prompts.render(steps_prompt, {"criteria": str(c)}))
                                     for c in criteria])
        steps: dict[str, list[str] | str] = {}
        for c in criteria:
            reply = step_replies[g.chat(prompts.render(steps_prompt, {"criteria": str(c)})).hash]
            why = replies.failure(reply)
            try:
                steps[str(c)] = why or replies.geval_steps(reply.text or "")
            except replies.Unparsable as e:
                g.unparsed(reply)
                steps[str(c)] = str(e)
        pairs = [{"item": i, "criteria": str(c)} for i in items for c in criteria]

        def build(pair):
            found = steps[pair["criteria"]]
            if isinstance(found, str):
                return found
            return g.chat(prompts.render(eval_prompt, {
                "criteria": pair["criteria"], "steps": "\n".join(f"- {s}" for s in found),
                "input": pair["item"]["input"] or "", "output": pair["item"]["output"],
                "maxScore": 10}))
        results = g.judge(pairs, build, lambda _, text: (True, *replies.geval_score(text)))
        out = []
        for k in range(len(items)):
            mine = results[k * len(criteria):(k + 1) * len(criteria)]
            bad = next((r for r in mine if r[0] is None), None)
            if bad:
                out.append(bad)
                continue
            score = sum(r[1] for r in mine) / len(mine)
            out.append((score >= (g.threshold or 0.7), score,
                        "; ".join(r[2] or "" for r in mine) or None))
        return out

    return g.each({"input": pl.col("prompt"), "output": pl.col("output")}, grade)


def _similar(g: Graded, metric: str) -> pl.DataFrame:
    values = g.spec.value if isinstance(g.spec.value, list) else None
    threshold = g.threshold if g.threshold is not None else 0.75

    def measure(a: list[float], b: list[float]) -> tuple[float, bool, str]:
        if metric == "euclidean":
            d = math.dist(a, b)
            return 1.0 / (1.0 + d), d <= threshold + 1e-9, f"distance {d:.4f}"
        sim = _cosine(a, b) if metric == "cosine" else float(np.dot(a, b))
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
                if why:
                    break
                result = measure(mine.vector, other.vector)
                if best is None or result[1] or (not best[1] and result[0] > best[0]):
                    best = result
                if result[1]:
                    break
            out.append((None, None, why) if why or best is None else best[1::-1] + (best[2],))
        return out

    return g.each({"output": pl.col("output"), "value": g.value}, grade)


@graded("similar", aliases=("similar:cosine",), threshold=0.75)
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
    custom = _messages(g, []) if g.rubric_prompt else None

    def window_request(pair: dict[str, Any]):
        window = pair["window"]
        if custom:
            return g.chat(prompts.render(custom, {**_values(dict(pair["item"])),
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
        scored = [{"item": item, "score": c[0] / len(t), "irrelevant": c[1]}
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
            if reply is not None and not replies.failure(reply):
                try:
                    reason = replies.first_json_object(reply.text or "").get("reason") or reason
                except replies.Unparsable:  # the count says it: keep that reason
                    g.unparsed(reply)
            score = c[0] / len(t)
            out.append((score >= g.threshold - 1e-12, score, str(reason)))
        return out

    return g.each({"conversation": g.var("_conversation"), "prompt": pl.col("prompt"),
                   "output": pl.col("output"), **_with_vars(g)}, grade)

