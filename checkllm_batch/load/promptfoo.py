"""promptfoo's own results file (`promptfoo eval -o results.json` or `.jsonl`) read as a
dataset of pre-generated outputs: one row per result, with its output, provider, prompt,
vars, latency and cost, so a promptfoo user's earlier run can be scored here.

Per result: `output` is `response.output` (null when the provider failed: its
`response.error` becomes the `provider_error` var); `provider` the provider's label, else
its id; `prompt` the prompt's label (the template: metrics group by it) and
`rendered_prompt` the prompt as sent; `test_id` the test's description; `latency_ms` and
`cost` promptfoo's; `finish_reason` and `metadata` the response's `finishReason` and
`metadata` (an agent's `skillCalls`, for skill-used) when it has them. Every test var is a
column, except one named like a column above (promptfoo's own verdicts are left out: they
are what is being re-scored)."""

from __future__ import annotations

from typing import Any

CORE = ("output", "provider", "prompt", "rendered_prompt", "test_id", "latency_ms", "cost",
        "provider_error", "finish_reason", "metadata")
# the response's fields that become columns when present: name there -> column
RESPONSE = {"error": "provider_error", "finishReason": "finish_reason", "metadata": "metadata"}


def is_result(record: dict[str, Any]) -> bool:
    """A line of `promptfoo eval -o results.jsonl`."""
    return "testCase" in record and "response" in record and "provider" in record


def results_of(document: Any) -> list[dict[str, Any]] | None:
    """The result records of `promptfoo eval -o results.json`, or None if it is not one."""
    if not isinstance(document, dict):
        return None
    results = document.get("results")
    if isinstance(results, dict) and isinstance(results.get("results"), list):
        return results["results"]
    return None


def row(result: dict[str, Any]) -> dict[str, Any]:
    response = result.get("response") or {}
    provider = result.get("provider") or {}
    prompt = result.get("prompt") or {}
    test = result.get("testCase") or {}
    vars_ = result.get("vars") or test.get("vars") or {}
    out = {
        "output": response.get("output"),
        "provider": provider.get("label") or provider.get("id") if isinstance(provider, dict)
        else str(provider),
        "prompt": prompt.get("label") or prompt.get("raw"),
        "rendered_prompt": prompt.get("raw"),
        "test_id": test.get("description"),
        "latency_ms": result.get("latencyMs", response.get("latencyMs")),
        "cost": result.get("cost", response.get("cost")),
    }
    out |= {column: response[field] for field, column in RESPONSE.items()
            if response.get(field) is not None}
    return {**{k: v for k, v in vars_.items() if k not in CORE}, **out}
