"""After every batch: select-best and max-score over all the outputs of each test row
(cases of one test with the same vars: several providers or prompts), read back from
DuckDB. Their results replace the pending ones; the cases' test results are recomputed."""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from ..assertions.graded import NO_JUDGE
from ..assertions.registry import Kind
from ..evaluate.engine import combine_tests
from ..evaluate.plan import Plan, Planned
from ..store.results import TEST_COLUMNS, frame
from .hook import JudgeHook, _long


def finish_across(con: duckdb.DuckDBPyConnection, run_id: str, plan: Plan,
                  hook: JudgeHook) -> None:
    affected: set[int] = set()
    for p in plan.assertions:
        if p.kind is Kind.ACROSS:
            affected |= _decide(con, run_id, plan, hook, p)
    if affected:
        _retest(con, run_id, plan, sorted(affected))


def _decide(con, run_id: str, plan: Plan, hook: JudgeHook, p: Planned) -> set[int]:
    tests = sorted(p.tests) if p.tests is not None else [t.index for t in plan.suite.tests]
    cases = frame(con, "SELECT case_id, test_index, vars, output FROM cases WHERE run_id = ? "
                  "AND list_contains(?, test_index) ORDER BY case_id", [run_id, tests])
    if not cases.height:
        return set()
    grouped = cases.group_by("test_index", "vars", maintain_order=True).agg("case_id", "output")
    scores = _other_scores(con, run_id, plan, cases)
    groups = [[{"case_id": c, "output": o, "scores": scores.get(c, [])}
               for c, o in zip(ids, outs)]
              for ids, outs in grouped.select("case_id", "output").iter_rows()]
    if not p.atype.uses_judge:
        outcomes = p.atype.fn(None, p.spec, groups)
    elif hook.runner is None:
        outcomes = [(None, None, NO_JUDGE)] * cases.height
    else:
        model, rubric, _ = next(iter(hook.groups(p, cases)))
        outcomes = p.atype.fn(hook.graded(p, cases, model, rubric, {}), p.spec, groups)
    ordered = [c for g in groups for c in g]
    decided = pl.DataFrame(
        {"case_id": [c["case_id"] for c in ordered],
         "passed": [o[0] for o in outcomes], "score": [o[1] for o in outcomes],
         "reason": [o[2] for o in outcomes]},
        schema={"case_id": pl.Int64, "passed": pl.Boolean, "score": pl.Float64,
                "reason": pl.String})
    decided = decided.join(cases.select("case_id", "test_index"), on="case_id")
    rows = _long(p, decided).join(plan.slots.select("test_index", "assertion_index", "key"),
                                  on=["test_index", "key"])
    update = rows.to_arrow()  # noqa: F841  (read by DuckDB by name)
    con.execute("""
        UPDATE assertion_results a SET status = u.status, pass = u.pass, score = u.score,
               reason = u.reason
        FROM update u WHERE a.run_id = ? AND a.case_id = u.case_id
          AND a.assertion_index = u.assertion_index""", [run_id])
    return set(rows["case_id"].to_list())


def _other_scores(con, run_id: str, plan: Plan, cases: pl.DataFrame
                  ) -> dict[int, list[tuple[str, float]]]:
    """Each case's (type, score) of its assertions that are not decided across cases."""
    across = [p.key for p in plan.assertions if p.kind is Kind.ACROSS]
    slots = plan.slots.filter(pl.col("key").is_in(across) & pl.col("parent_index").is_null())
    rows = frame(con, "SELECT case_id, assertion_index, parent_index, type, score "
                 "FROM assertion_results WHERE run_id = ? AND case_id IN (SELECT unnest(?))",
                 [run_id, cases["case_id"].to_list()])
    rows = (rows.join(cases.select("case_id", pl.col("test_index").cast(pl.Int32)), on="case_id")
            .join(slots.select("test_index", "assertion_index",
                               pl.col("parent_index").cast(pl.Int32)),
                  on=["test_index", "assertion_index", "parent_index"], how="anti",
                  nulls_equal=True))
    out: dict[int, list[tuple[str, float]]] = {}
    for case, kind, score in rows.sort("case_id", "assertion_index").select(
            "case_id", "type", "score").iter_rows():
        out.setdefault(case, []).append((kind, score))
    return out


def _retest(con, run_id: str, plan: Plan, case_ids: list[int]) -> None:
    params: list[Any] = [run_id, case_ids]
    cases = frame(con, "SELECT case_id, test_index FROM cases WHERE run_id = ? "
                  "AND case_id IN (SELECT unnest(?))", params)
    results = frame(con, "SELECT * FROM assertion_results WHERE run_id = ? "
                    "AND case_id IN (SELECT unnest(?))", params)
    tests = combine_tests(plan, cases, results).select(TEST_COLUMNS)  # noqa: F841
    con.execute("DELETE FROM test_results WHERE run_id = ? AND case_id IN (SELECT unnest(?))",
                params)
    con.execute("INSERT INTO test_results BY NAME SELECT ? AS run_id, * FROM tests", [run_id])
