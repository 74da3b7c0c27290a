"""The data behind the report's tests x providers matrix: a bounded sample of tests (rows)
with every case of theirs (cells), each case's assertions with their values rendered, as
one JSON document the report's script reads. Tests with a failure or error come first; for a
run of a million cases the file stays small and says how to see the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from ..js import template

if TYPE_CHECKING:
    from .database import Results

MAX_TESTS = 300  # matrix rows embedded in the report
TEXT_CHARS = 2000  # of each output, prompt and vars shown

# A matrix row is a test with its vars (a defaultTest suite: each distinct vars); promptfoo's
# per-prompt rendered_prompt and the label vars (a person's verdicts: labels, never vars) are
# left out of the key, so one test's prompts and its labelled and unlabelled rows share a row.
_KEYED = """
    SELECT c.*, t.status, t.score, t.reason, coalesce(c.test_index, -1) AS test_index_,
           coalesce(json_merge_patch(c.vars, $drop::JSON)::VARCHAR, '') AS row_key
    FROM cases c JOIN test_results t USING (run_id, case_id) WHERE c.run_id = $run"""
_CASES = f"""
WITH c AS (
    SELECT case_id, test_index_ AS test_index, test_id, description, provider, prompt,
           vars::VARCHAR AS vars, row_key, left(output, {TEXT_CHARS}) AS output,
           length(output) AS output_chars, status, score, reason, latency_ms, cost
    FROM ({_KEYED})),
k AS (SELECT test_index, row_key, bool_or(status IN ('fail', 'error')) AS bad,
             bool_or(list_contains($focus::BIGINT[], case_id)) AS focus, min(case_id) AS first
      FROM c GROUP BY ALL),
p AS (SELECT *, row_number() OVER (ORDER BY first) - 1 AS row
      FROM (SELECT * FROM k ORDER BY focus DESC, bad DESC, hash(first) LIMIT $limit))
SELECT p.row, c.* EXCLUDE (row_key) FROM c JOIN p USING (test_index, row_key)
ORDER BY p.row, c.case_id"""
_TOTALS = f"""
SELECT count(*) AS tests, count(*) FILTER (bad) AS bad_tests,
       coalesce(sum(n), 0)::BIGINT AS cases, coalesce(sum(failed), 0)::BIGINT AS failed,
       coalesce(sum(errors), 0)::BIGINT AS errors, coalesce(sum(skipped), 0)::BIGINT AS skipped
FROM (SELECT bool_or(status IN ('fail', 'error')) AS bad, count(*) AS n,
             count(*) FILTER (status = 'fail') AS failed,
             count(*) FILTER (status = 'error') AS errors,
             count(*) FILTER (status = 'skipped') AS skipped
      FROM ({_KEYED}) GROUP BY test_index_, row_key)"""
_ASSERTIONS = """
SELECT a.case_id, a.parent_index, a.assertion_index, a.type, a.metric, a.status, a.score,
       a.reason, s.spec::VARCHAR AS spec
FROM assertion_results a JOIN cases c USING (run_id, case_id)
LEFT JOIN assertions s ON s.run_id = a.run_id AND s.test_index = c.test_index
     AND s.assertion_index = coalesce(a.parent_index, a.assertion_index)
WHERE a.run_id = $run AND a.case_id IN (SELECT unnest($ids::BIGINT[]))
ORDER BY a.case_id, coalesce(a.parent_index, a.assertion_index), a.parent_index IS NOT NULL,
         a.assertion_index"""


def cases_document(results: Results, run_id: str, limit: int = MAX_TESTS,
                   labels: tuple[str, ...] = (), focus: list[int] | None = None
                   ) -> dict[str, Any]:
    """The matrix's data: at most `limit` tests, those holding a `focus` case first (the
    cases other sections link to), then those with a failure or error, then a seeded
    sample; `labels` name the vars that are a person's labels (not part of a test)."""
    drop = orjson.dumps(dict.fromkeys(("rendered_prompt", *labels))).decode()
    params = {"run": run_id, "drop": drop}
    cases = results.query(_CASES, {**params, "limit": limit, "focus": focus or []})
    totals = results.query(_TOTALS, params).row(0, named=True)
    asserts = results.query(_ASSERTIONS, {"run": run_id, "ids": cases["case_id"].to_list()})
    columns = _columns(cases)
    return {
        "run": run_id, "totals": totals, "shown": cases["row"].n_unique() if cases.height else 0,
        "columns": columns, "rows": _rows(cases, labels), "labels": list(labels), "cells": _cells(cases, asserts, columns),
        "types": sorted(set(asserts["type"].drop_nulls())),
        "metrics": sorted(set(asserts["metric"].drop_nulls())),
    }


def _label(provider: str | None, prompt: str | None, prompts: int) -> str:
    name = provider if provider is not None else "(no provider)"
    return f"{name} · {prompt}" if prompts > 1 and prompt is not None else name


def _columns(cases: pl.DataFrame) -> list[str]:
    prompts = cases["prompt"].n_unique()
    pairs = cases.select("provider", "prompt").unique(maintain_order=True).sort(
        "provider", "prompt", nulls_last=False, maintain_order=True)
    return [_label(p, q, prompts) for p, q in pairs.iter_rows()]


def _rows(cases: pl.DataFrame, labels: tuple[str, ...]) -> list[dict[str, Any]]:
    """One per matrix row: its test's name and the vars of its first case (labels apart)."""
    first = cases.unique("row", keep="first", maintain_order=True)
    return [{"test": r["test_id"] or r["description"] or f"case {r['case_id']}",
             "vars": _short(_without(r["vars"], ("rendered_prompt", *labels)))}
            for r in first.iter_rows(named=True)]  # rendering: at most MAX_TESTS rows


def _cells(cases: pl.DataFrame, asserts: pl.DataFrame, columns: list[str]
           ) -> list[dict[str, Any]]:
    by_case: dict[int, list] = {}
    for a in asserts.iter_rows(named=True):  # the sampled cases' assertions only
        by_case.setdefault(a["case_id"], []).append(a)
    prompts = cases["prompt"].n_unique()
    index = {name: i for i, name in enumerate(columns)}
    cells = []
    for c in cases.iter_rows(named=True):
        vars_ = orjson.loads(c["vars"]) if c["vars"] else {}
        cells.append({
            "row": c["row"], "col": index[_label(c["provider"], c["prompt"], prompts)],
            "case": c["case_id"], "status": c["status"], "score": c["score"],
            "reason": c["reason"], "output": c["output"], "chars": c["output_chars"],
            "prompt": c["prompt"], "rendered": _short(_rendered_prompt(c["prompt"], vars_)),
            "vars": _short(c["vars"]), "latency": c["latency_ms"], "cost": c["cost"],
            "asserts": [_assertion(a, vars_) for a in by_case.get(c["case_id"], [])]})
    return cells


def _assertion(a: dict[str, Any], vars_: dict[str, Any]) -> list[Any]:
    """[type, metric, status, score, reason, value rendered with the case's vars, member]"""
    spec = orjson.loads(a["spec"]) if a["spec"] else {}
    if a["parent_index"] is not None:
        children = spec.get("children") or []
        spec = children[a["assertion_index"]] if a["assertion_index"] < len(children) else {}
    value = spec.get("value")
    rendered = template.render(value, vars_) if isinstance(value, str) else value
    if rendered is not None and not isinstance(rendered, str):
        rendered = orjson.dumps(rendered).decode()
    return [a["type"], a["metric"], a["status"], a["score"], a["reason"],
            _short(rendered), a["parent_index"] is not None]


def _rendered_prompt(prompt: str | None, vars_: dict[str, Any]) -> str | None:
    """The prompt as sent: promptfoo's rendered_prompt, else the template rendered."""
    if "rendered_prompt" in vars_:
        return vars_["rendered_prompt"]
    return template.render(prompt, vars_) if prompt and template.is_template(prompt) else None


def _without(text: str | None, names: tuple[str, ...]) -> str | None:
    """Vars (JSON text) without the `names` (the rendered prompt, labels)."""
    if not text:
        return text
    vars_ = orjson.loads(text)
    if not isinstance(vars_, dict) or not set(names) & set(vars_):
        return text
    return orjson.dumps({k: v for k, v in vars_.items() if k not in names}).decode()


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_CHARS:
        return text
    return text[:TEXT_CHARS] + f"… ({len(text):,} characters)"


def script_json(document: dict[str, Any]) -> str:
    """JSON safe inside <script type="application/json">: no '<' can close the element."""
    return orjson.dumps(document, default=str).decode().replace("<", "\\u003c")
