"""conversation-relevance: the judge says whether each window of a conversation ends with a
relevant answer; a summary call explains the irrelevant ones. Its prompts (promptfoo's,
a port of DeepEval's) are here; replies are JSON objects read as every type reads them."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from ...js.jsvalue import js_string
from ..registry import Value
from .context import Graded
from .prompts import Messages, render
from .replies import Outcome, Unparsable, failure, first_json_object
from .shapes import STRING, Shape, one_of
from .shared import graded, messages_for, render_values, with_vars

# promptfoo's conversation-relevance (its DeepEval port): `{{ messages }}` and the reason
# prompt's `{{ irrelevancies }}` are JSON, indented by 2 as promptfoo writes them
CONVERSATION_VERDICT: Messages = [
    ("user", "Based on the given list of message exchanges between a user and an LLM, generate "
     "a JSON object to indicate whether the LAST `assistant` message is relevant to context in "
     "messages. The JSON will have 2 fields: 'verdict' and 'reason'.\nThe 'verdict' key should "
     "STRICTLY be either 'yes' or 'no', which states whether the last `assistant` message is "
     "relevant according to the context in messages \nProvide a 'reason' ONLY if the answer is "
     "'no'. \nYou MUST USE the previous messages (if any) provided in the list of messages to "
     "make an informed judgement on relevancy.\n\n**\nIMPORTANT: Please make sure to only "
     "return in JSON format.\nExample Messages:\n[\n    {\n        \"role\": \"user\",\n"
     "        \"content\": \"Hi! I have something I want to tell you\"\n    },\n    {\n"
     "        \"role\": \"assistant\",\n        \"content\": \"Sure, what is it?\"\n    },\n"
     "    {\n        \"role\": \"user\",\n        \"content\": \"I've a sore throat, what "
     "meds should I take?\"\n    },\n    {\n        \"role\": \"assistant\",\n"
     "        \"content\": \"Not sure, but isn't it a nice day today?\"\n    }\n]\n\n"
     "Example JSON:\n{\n    \"verdict\": \"no\",\n    \"reason\": \"The LLM responded "
     "'isn't it a nice day today' to a message that asked about how to treat a sore throat, "
     "which is completely irrelevant.\"\n}\n===== END OF EXAMPLE ======\nYou MUST ONLY "
     "provide a verdict for the LAST message on the list but MUST USE context from the "
     "previous messages.\nYou DON'T have to provide a reason if the answer is 'yes'.\nONLY "
     "provide a 'no' answer if the LLM response is COMPLETELY irrelevant to the message "
     "input.\nVague LLM responses to vague inputs, such as greetings DOES NOT count as "
     "irrelevancies!\n**\n\nMessages:\n{{ messages }}\n\nJSON:"),
]

CONVERSATION_REASON: Messages = [
    ("user", "Below is a list of irrelevancies drawn from some messages in a conversation, "
     "which you have minimal knowledge of. It is a list of strings explaining why the "
     "'assistant' messages are irrelevant to the 'user' messages.\nGiven the relevancy score, "
     "which is a 0-1 score indicating how irrelevant the OVERALL AI messages are in a "
     "conversation (higher the better), CONCISELY summarize the irrelevancies to justify the "
     "score. \n\n** \nIMPORTANT: Please make sure to only return in JSON format, with the "
     "'reason' key providing the reason.\nExample JSON:\n{\n    \"reason\": \"The score is "
     "<relevancy_score> because <your_reason>.\"\n}\n\nAlways quote WHICH MESSAGE and the "
     "INFORMATION in the reason in your final reason.\nBe sure in your reason, as if you know "
     "what the `assistant` messages from messages in a conversation is from the "
     "irrelevancies.\n**\n\nRelevancy Score:\n{{ score }}\n\nIrrelevancies:\n"
     "{{ irrelevancies }}\n\nJSON:"),
]

# the replies read, as JSON schemas (judge `structured: true`); both are JSON already
VERDICT_SHAPE = Shape("relevance_verdict", {"reason": STRING, "verdict": one_of("yes", "no")})
REASON_SHAPE = Shape("relevance_reason", {"reason": STRING})


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
            return g.chat(render(custom, {**render_values(dict(pair["item"])),
                                          "messages": window}), VERDICT_SHAPE)
        roles = [{"role": r, "content": _as_text(t[k])} for t in window
                 for r, k in (("user", "input"), ("assistant", "output"))]
        return g.chat(render(CONVERSATION_VERDICT, {
            "messages": json.dumps(roles, indent=2, ensure_ascii=False)}), VERDICT_SHAPE)

    def tally(answers: list) -> tuple[int, list[str]] | str:
        """(relevant windows, the judge's reasons for the others), or why there is none."""
        relevant, irrelevant = 0, []
        for reply in answers:
            why = failure(reply)
            if why:
                return why
            try:
                found = first_json_object(reply.text or "")
                if found.get("verdict") not in ("yes", "no"):
                    raise Unparsable(
                        "Conversation relevance grader returned an invalid verdict")
            except Unparsable as e:
                g.unparsed(reply)
                return f"Error parsing output: {e}"
            relevant += found["verdict"] == "yes"
            reason = found.get("reason")
            if found["verdict"] == "no" and reason and reason != NOT_RELEVANT:
                irrelevant.append(str(reason))
        return relevant, irrelevant

    def summary(pair: dict[str, Any]):
        return g.chat(render(CONVERSATION_REASON, {
            "score": js_string(pair["score"]),
            "irrelevancies": json.dumps(pair["irrelevant"], indent=2, ensure_ascii=False)}),
            REASON_SHAPE)

    def grade(items: list[dict[str, Any]]) -> list[Outcome]:
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
        out: list[Outcome] = []
        for item, t, c in zip(items, turns, counted):
            if isinstance(c, str):
                out.append((None, None, c))
                continue
            reason = f"{c[0]} out of {len(t)} conversation windows were relevant"
            reply = summaries.get(id(item))
            if reply is not None and not isinstance(reply, str) and not failure(reply):
                try:
                    reason = first_json_object(reply.text or "").get("reason") or reason
                except Unparsable:  # the count says it: keep that reason
                    g.unparsed(reply)
            score = c[0] / len(t)
            assert g.threshold is not None  # the type's default_threshold is 0.5
            out.append((score >= g.threshold - 1e-12, score, str(reason)))
        return out

    return g.each({"conversation": g.var("_conversation"), "prompt": pl.col("prompt"),
                   "output": pl.col("output"), **with_vars(g)}, grade)
