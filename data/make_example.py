"""Regenerate the bundled example: data/suite.yaml, data/outputs.jsonl,
data/outputs_b.jsonl and data/audit_suite.yaml (deterministic).

A sentiment classifier over 120 product reviews with gold labels, answered in JSON by three
providers of different quality. The suite checks format (JSON Schema), the label against the
gold `label` var, and counts true/false positives and false negatives for the `positive`
class (promptfoo's F-score recipe, `weight: 0` counters) to derive precision, recall and F1.

data/outputs_b.jsonl is the same reviews answered by the next version of each model, to try
`compare` on (README: the compare example): gpt-4o-mini gets some right answers wrong, the
others change a few answers either way.

Every fourth review's replies carry a person's verdict in a `human` column (pass: the reply
is JSON naming the review's sentiment): the labels `checkllm-batch agreement --label human`
sets the judge of data/audit_suite.yaml against (docs/judge-audit.md). data/suite.yaml
reads no judge and ignores the column.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
LABELS = ["positive", "negative", "neutral"]
PRODUCTS = ["headphones", "coffee maker", "running shoes", "laptop stand", "desk lamp",
            "backpack", "phone case", "blender", "keyboard", "water bottle"]
PHRASES = {
    "positive": ["works perfectly", "exceeded my expectations", "great value for money",
                 "I use it every day and love it", "fantastic build quality"],
    "negative": ["broke after a week", "a waste of money", "stopped working on day two",
                 "customer service never answered", "cheap plastic that cracked"],
    "neutral": ["does what it says", "arrived on time, nothing special", "it is fine I guess",
                "average, like the one I had before", "okay for the price"],
}
# provider: (label accuracy, share of replies that are not valid JSON)
PROVIDERS = {"openai:gpt-4o-mini": (0.92, 0.0), "ollama:llama3-8b": (0.78, 0.06),
             "ollama:mistral-7b": (0.70, 0.12)}

SUITE_HEAD = """\
# Sentiment classifier: 120 reviews with gold labels, outputs from three providers.
# Run: checkllm-batch eval data/suite.yaml --outputs data/outputs.jsonl --db results.duckdb
description: Review sentiment classifier (JSON replies)
defaultTest:
  assert:
    - type: is-json
      value:
        type: object
        required: [sentiment, confidence]
        properties:
          sentiment: {enum: [positive, negative, neutral]}
          confidence: {type: number, minimum: 0, maximum: 1}
    - type: contains
      value: '"sentiment": "{{label}}"'
      metric: accuracy
    - type: not-icontains
      value: as an ai
    - type: levenshtein
      value: '{"sentiment": "{{label}}", "confidence": 0.9}'
      threshold: 40
      weight: 0.5
derivedMetrics:
  - name: precision
    value: true_positives / (true_positives + false_positives)
  - name: recall
    value: true_positives / (true_positives + false_negatives)
  - name: f1
    value: 2 * true_positives / (2 * true_positives + false_positives + false_negatives)
  - name: accuracy_rate
    value: accuracy / __count
tests:
"""
POSITIVE = '\'"sentiment": "positive"\''
AUDIT_HEAD = """\
# The bundled example's replies graded by a judge, to audit it against the `human` labels
# some rows carry (docs/judge-audit.md). Needs a judge: --judge-model (and --judge-base-url
# for a local OpenAI-compatible server).
#   checkllm-batch eval data/audit_suite.yaml --outputs data/outputs.jsonl --db audit.duckdb
#   checkllm-batch agreement --db audit.duckdb --label human
description: Review sentiment classifier, graded by a judge
defaultTest:
  assert:
    - type: llm-rubric
      value: >-
        The reply is a JSON object whose "sentiment" (positive, negative or neutral) is the
        sentiment of this product review: "{{review}}"
      metric: judged_correct
tests:
"""


def human_verdict(output: str, label: str) -> str:
    """What a person checking the reply says: pass when it is JSON naming the right label."""
    try:
        return "pass" if json.loads(output).get("sentiment") == label else "fail"
    except (ValueError, AttributeError):
        return "fail"


# next version: (share of right answers turned wrong, share of wrong answers turned right)
NEXT = {"openai:gpt-4o-mini": (0.12, 0.3), "ollama:llama3-8b": (0.05, 0.1),
        "ollama:mistral-7b": (0.05, 0.1)}


def next_version(rows: list[dict], labels: list[str]) -> list[dict]:
    """The rows answered by each model's next version (its own seeded draw)."""
    rng = random.Random(11)
    out = []
    for row, label in zip(rows, labels):
        worse, better = NEXT[row["provider"]]
        try:
            reply = json.loads(row["output"])
        except ValueError:
            out.append(row)
            continue
        right = reply.get("sentiment") == label
        if rng.random() < (worse if right else better):
            reply["sentiment"] = (rng.choice([x for x in LABELS if x != label]) if right
                                  else label)
        out.append({**row, "output": json.dumps(reply)})
    return out


def main() -> None:
    rng = random.Random(7)
    tests, audit, rows = [], [], []
    for i in range(120):
        label = LABELS[i % 3]
        review = f"The {rng.choice(PRODUCTS)} {rng.choice(PHRASES[label])}."
        name = f"review-{i + 1:03d}"
        if label == "positive":
            counters = (f"      - {{type: contains, value: {POSITIVE}, metric: true_positives, weight: 0}}\n"
                        f"      - {{type: not-contains, value: {POSITIVE}, metric: false_negatives, weight: 0}}\n")
        else:
            counters = f"      - {{type: contains, value: {POSITIVE}, metric: false_positives, weight: 0}}\n"
        tests.append(f"  - description: {name}\n    vars: {{review: {json.dumps(review)}, label: {label}}}\n"
                     f"    assert:\n{counters}")
        audit.append(f"  - description: {name}\n    vars: {{review: {json.dumps(review)}, "
                     f"label: {label}}}\n")
        for provider, (accuracy, broken) in PROVIDERS.items():
            guess = label if rng.random() < accuracy else rng.choice([x for x in LABELS if x != label])
            confidence = round(rng.uniform(0.55, 0.99), 2)
            if rng.random() < broken:
                output = rng.choice([f"The sentiment is {guess}.",
                                     f'{{"sentiment": "{guess}", "confidence": {confidence},}}',
                                     f"As an AI, I think this review is {guess}."])
            else:
                output = json.dumps({"sentiment": guess, "confidence": confidence})
            rows.append({"test_id": name, "provider": provider,
                         "prompt": "Classify the sentiment of: {{review}}", "output": output,
                         "latency_ms": round(rng.uniform(120, 1800)),
                         "cost": round(rng.uniform(0.00005, 0.0004), 6)})
            if i % 4 == 0:  # a person checked every fourth review's replies
                rows[-1]["human"] = human_verdict(output, label)
    (HERE / "suite.yaml").write_text(SUITE_HEAD + "".join(tests))
    (HERE / "outputs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    labels = [LABELS[i // len(PROVIDERS) % 3] for i in range(len(rows))]
    (HERE / "outputs_b.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in next_version(rows, labels)))
    (HERE / "audit_suite.yaml").write_text(AUDIT_HEAD + "".join(audit))


if __name__ == "__main__":
    main()
