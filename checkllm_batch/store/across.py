"""Decide the types that wait for every batch (evaluate/judging/decide.py) over the stored cases, in
the run's finishing transaction: their pending rows are replaced, and the test results of
the cases they touch recomputed."""

from __future__ import annotations

from typing import Any

import duckdb

from ..assertions.registry import Kind
from ..evaluate.batch import combine_tests
from ..evaluate.judging.decide import decide
from ..evaluate.judging.hook import JudgeHook
from ..evaluate.plan import Plan
from .runs import TEST_COLUMNS, frame


def finish_across(con: duckdb.DuckDBPyConnection, run_id: str, plan: Plan,
                  hook: JudgeHook) -> None:
    affected: set[int] = set()
    for p in plan.assertions:
        if p.kind is not Kind.ACROSS:
            continue
        tests = sorted(p.tests) if p.tests is not None else [t.index for t in plan.suite.tests]
        cases = frame(con, "SELECT case_id, test_index, vars, output FROM cases "
                      "WHERE run_id = ? AND list_contains(?, test_index) ORDER BY case_id",
                      [run_id, tests])
        if not cases.height:
            continue
        results = frame(con, "SELECT case_id, assertion_index, parent_index, type, score "
                        "FROM assertion_results WHERE run_id = ? "
                        "AND case_id IN (SELECT unnest(?))", [run_id, cases["case_id"].to_list()])
        update = decide(plan, hook, p, cases, results).to_arrow()  # noqa: F841  (read by DuckDB)
        con.execute("""
            UPDATE assertion_results a SET status = u.status, pass = u.pass, score = u.score,
                   reason = u.reason, votes = u.votes
            FROM update u WHERE a.run_id = ? AND a.case_id = u.case_id
              AND a.assertion_index = u.assertion_index""", [run_id])
        affected |= set(cases["case_id"].to_list())
    if affected:
        _retest(con, run_id, plan, sorted(affected))


def _retest(con: duckdb.DuckDBPyConnection, run_id: str, plan: Plan, case_ids: list[int]
            ) -> None:
    params: list[Any] = [run_id, case_ids]
    cases = frame(con, "SELECT case_id, test_index FROM case_rows WHERE run_id = ? "
                  "AND case_id IN (SELECT unnest(?))", params)
    results = frame(con, "SELECT * FROM assertion_results WHERE run_id = ? "
                    "AND case_id IN (SELECT unnest(?))", params)
    tests = combine_tests(plan, cases, results).select(TEST_COLUMNS)  # noqa: F841
    con.execute("DELETE FROM test_results WHERE run_id = ? AND case_id IN (SELECT unnest(?))",
                params)
    con.execute("INSERT INTO test_results BY NAME SELECT ? AS run_id, * FROM tests", [run_id])
