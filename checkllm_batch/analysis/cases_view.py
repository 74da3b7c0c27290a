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
# per-prompt rendered_prompt is left out of the key so one test's prompts share a row.
_CASES = f"""
WITH c AS (
    SELECT c.case_id, coalesce(c.test_index, -1) AS test_index, c.test_id, c.description,
           c.provider, c.prompt, c.vars::VARCHAR AS vars,
           coalesce(json_merge_patch(c.vars, '{{"rendered_prompt": null}}')::VARCHAR, '')
               AS row_key,
           left(c.output, {TEXT_CHARS}) AS output, length(c.output) AS output_chars,
           t.status, t.score, t.reason, c.latency_ms, c.cost
    FROM cases c JOIN test_results t USING (run_id, case_id) WHERE c.run_id = $run),
k AS (SELECT test_index, row_key, bool_or(status <> 'pass') AS bad, min(case_id) AS first
      FROM c GROUP BY ALL),
p AS (SELECT *, row_number() OVER (ORDER BY first) - 1 AS row
      FROM (SELECT * FROM k ORDER BY bad DESC, hash(first) LIMIT $limit))
SELECT p.row, c.* EXCLUDE (row_key) FROM c JOIN p USING (test_index, row_key)
ORDER BY p.row, c.case_id"""
_TOTALS = """
SELECT count(*) AS tests, count(*) FILTER (bad) AS bad_tests, coalesce(sum(n), 0)::BIGINT AS cases
FROM (SELECT bool_or(t.status <> 'pass') AS bad, count(*) AS n
      FROM cases c JOIN test_results t USING (run_id, case_id) WHERE c.run_id = $run
      GROUP BY coalesce(c.test_index, -1),
               coalesce(json_merge_patch(c.vars, '{"rendered_prompt": null}')::VARCHAR, ''))"""
_ASSERTIONS = """
SELECT a.case_id, a.parent_index, a.assertion_index, a.type, a.metric, a.status, a.score,
       a.reason, s.spec::VARCHAR AS spec
FROM assertion_results a JOIN cases c USING (run_id, case_id)
LEFT JOIN assertions s ON s.run_id = a.run_id AND s.test_index = c.test_index
     AND s.assertion_index = coalesce(a.parent_index, a.assertion_index)
WHERE a.run_id = $run AND a.case_id IN (SELECT unnest($ids::BIGINT[]))
ORDER BY a.case_id, coalesce(a.parent_index, a.assertion_index), a.parent_index IS NOT NULL,
         a.assertion_index"""


def cases_document(results: Results, run_id: str, limit: int = MAX_TESTS) -> dict[str, Any]:
    cases = results.query(_CASES, {"run": run_id, "limit": limit})
    totals = results.query(_TOTALS, {"run": run_id}).row(0, named=True)
    asserts = results.query(_ASSERTIONS, {"run": run_id, "ids": cases["case_id"].to_list()})
    columns = _columns(cases)
    return {
        "run": run_id, "totals": totals, "shown": cases["row"].n_unique() if cases.height else 0,
        "columns": columns, "rows": _rows(cases), "cells": _cells(cases, asserts, columns),
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


def _rows(cases: pl.DataFrame) -> list[dict[str, Any]]:
    """One per matrix row: its test's name and the vars of its first case."""
    first = cases.unique("row", keep="first", maintain_order=True)
    return [{"test": r["test_id"] or r["description"] or f"case {r['case_id']}",
             "vars": _short(_without_prompt(r["vars"]))}
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


def _without_prompt(text: str | None) -> str | None:
    if not text:
        return text
    vars_ = orjson.loads(text)
    return orjson.dumps({k: v for k, v in vars_.items() if k != "rendered_prompt"}).decode() \
        if isinstance(vars_, dict) and "rendered_prompt" in vars_ else text


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_CHARS:
        return text
    return text[:TEXT_CHARS] + f"… ({len(text):,} characters)"


def script_json(document: dict[str, Any]) -> str:
    """JSON safe inside <script type="application/json">: no '<' can close the element."""
    return orjson.dumps(document, default=str).decode().replace("<", "\\u003c")
