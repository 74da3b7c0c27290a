"""Default grading prompts, following promptfoo's (reference §6), as (role, template) lists.

Templates use `{{ name }}`; `render` fills them from a dict. A user's `rubricPrompt` (a
string, or a JSON list of {role, content} messages) replaces the default.
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from ...js import nunjucks

Messages = list[tuple[str, str]]
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
_ANY_TAG = re.compile(r"\{\{|\{%|\{#")

LLM_RUBRIC: Messages = [
    ("system", "You are grading output according to a user-specified rubric. If the statement "
     "in the rubric is true, then the output passes the test. You respond with a JSON object "
     "with this structure: {reason: string, pass: boolean, score: number}\n\nExamples:\n\n"
     "<Output>Hello world</Output>\n<Rubric>Content contains a greeting</Rubric>\n"
     '{"reason": "the content contains the word \'Hello\'", "pass": true, "score": 1.0}\n\n'
     "<Output>Avast ye swabs, repel the invaders!</Output>\n"
     "<Rubric>Does not speak like a pirate</Rubric>\n"
     '{"reason": "\'avast ye\' is a common pirate term", "pass": false, "score": 0.0}'),
    ("user", "<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"),
]

MODEL: Messages = [
    ("system", "You are an evaluator. Apply the user's evaluation instruction to the output "
     "and respond only with a JSON object {\"score\": number between 0 and 1, \"reason\": "
     "string}."),
    ("user", "<Instruction>\n{{ prompt }}\n</Instruction>\n<Output>\n{{ output }}\n</Output>"),
]

LLM_JUDGE: Messages = [
    ("system", "{{ system_prompt }}"),
    ("user", "Criteria: {{ criteria }}\n{{ rubric }}\n\nResponse to evaluate:\n{{ output }}\n\n"
     'Respond only with JSON: {"passed": boolean, "score": number between 0 and 1, '
     '"reasoning": string}'),
]
LLM_JUDGE_SYSTEM = ("You are an impartial evaluator. Judge the assistant response against "
                    "the criteria and return a score between 0.0 and 1.0 with your reasoning.")

CLOSEDQA: Messages = [
    ("system", "You are assessing a submitted answer on a given task based on a criterion. "
     "Here is the data:\n[BEGIN DATA]\n***\n[Task]: {{ input }}\n***\n[Submission]: "
     "{{ completion }}\n***\n[Criterion]: {{ criteria }}\n***\n[END DATA]\n"
     "Does the submission meet the criterion? First, write out in a step by step manner your "
     "reasoning about the criterion to be sure that your conclusion is correct. Avoid simply "
     "stating the correct answers at the outset. Then print only the single character \"Y\" "
     "or \"N\" (without quotes or punctuation) on its own line corresponding to the correct "
     "answer. At the end, repeat just the letter again by itself on a new line.\n\nReasoning:"),
]

FACTUALITY: Messages = [
    ("system", "You are a precise factuality evaluator that compares a submitted answer to an "
     "expert answer. Ignore differences in style, grammar, or punctuation; focus on the "
     "factual content. Choose one option:\n(A) The submitted answer is a subset of the expert "
     "answer and is fully consistent with it.\n(B) The submitted answer is a superset of the "
     "expert answer and is fully consistent with it.\n(C) The submitted answer contains all "
     "the same details as the expert answer.\n(D) There is a disagreement between the "
     "submitted answer and the expert answer.\n(E) The answers differ, but these differences "
     "don't matter from the perspective of factuality.\n"
     'Respond ONLY with JSON: {"category": "A" | "B" | "C" | "D" | "E", "reason": "..."}'),
    ("user", "<question>{{ input }}</question>\n<expert_answer>{{ ideal }}</expert_answer>\n"
     "<submitted_answer>{{ completion }}</submitted_answer>"),
]

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

ANSWER_RELEVANCE: Messages = [
    ("user", "Generate a question for the given answer.\nAnswer:\nThe PSLV-C56 mission is "
     "scheduled to be launched on Sunday, 30 July 2023 at 06:30 IST / 01:00 UTC. It will be "
     "launched from the Satish Dhawan Space Centre, Sriharikota, Andhra Pradesh, India\n"
     "Question: When is the scheduled launch date and time for the PSLV-C56 mission, and "
     "where will it be launched from?\n\nAnswer:{{ answer }}\nQuestion:"),
]

GEVAL_STEPS: Messages = [
    ("user", "Given an evaluation criteria which outlines how you should judge some text, "
     "generate 3-4 concise evaluation steps for that criteria. Return ONLY minified JSON on "
     'one line: {"steps": ["step 1", "step 2", ...]}\n\nEvaluation criteria:\n'
     "{{ criteria }}\n\nJSON:"),
]

GEVAL_EVALUATE: Messages = [
    ("user", "You will be given one Reply for a Source Text below. Your task is to rate the "
     "Reply on one metric, following the evaluation steps.\n\nEvaluation criteria:\n"
     "{{ criteria }}\n\nEvaluation steps:\n{{ steps }}\n\nSource Text:\n{{ input }}\n\n"
     "Reply:\n{{ output }}\n\nReturn ONLY minified JSON on one line: {\"score\": an integer "
     "from 0 to {{ maxScore }}, \"reason\": \"...\"}\n\nJSON:"),
]

SELECT_BEST: Messages = [
    ("system", "You are comparing multiple pieces of text to see which best fits the "
     "following criteria: {{ criteria }}\n\nHere are the pieces of text:\n\n{{ outputs }}\n\n"
     "Output the index of the text that best fits the criteria. You must output a single "
     "integer."),
]


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


def to_exprs(messages: Messages, columns: set[str]) -> list[pl.Expr] | None:
    """Each message rendered as a Polars expression over input columns (concat_str), or
    None when the template names something that is not a column (then render per item)."""
    out = []
    for _, text in messages:
        if _full_template(text):
            return None
        parts: list[pl.Expr] = []
        pos = 0
        for m in _VAR.finditer(text):
            if m.group(1) not in columns:
                return None
            parts += [pl.lit(text[pos:m.start()]),
                      pl.col(m.group(1)).cast(pl.String).fill_null("")]
            pos = m.end()
        parts.append(pl.lit(text[pos:]))
        out.append(pl.concat_str(parts))
    return out


def render(messages: Messages, values: dict[str, Any]) -> Messages:
    """The messages with `values` filled in; a user's prompt with more than `{{ name }}`
    (filters such as `{{ output | dump }}`, `{% if %}`) renders as Nunjucks does."""
    return [(role, _render_text(text, values)) for role, text in messages]


def _full_template(text: str) -> bool:
    return bool(_ANY_TAG.search(_VAR.sub("", text)))


def _render_text(text: str, values: dict[str, Any]) -> str:
    if _full_template(text):
        try:
            return nunjucks.render(text, values)
        except nunjucks.TemplateError:
            pass  # a filter failing on this item's values: its placeholders filled plainly
    return _VAR.sub(lambda m: _text(values.get(m.group(1))), text)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def from_rubric_prompt(value: Any) -> Messages:
    """A user's rubricPrompt: a plain prompt, or a (JSON) list of {role, content} messages."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [("user", value)]
    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return [(str(m.get("role", "user")), str(m["content"])) for m in value]
    if isinstance(value, str):
        return [("user", value)]
    raise ValueError("rubricPrompt must be a string or a list of {role, content} messages")
