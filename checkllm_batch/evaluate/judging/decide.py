"""After every batch: the types decided across the outputs of each test row (cases of one
test with the same vars: several providers or prompts), over the stored cases that
store/across.py reads back (the graded ones through the run's hook). Their results replace the pending ones."""

from __future__ import annotations

import polars as pl

from ...assertions.graded import NO_JUDGE
from ...assertions.registry import Kind
from ..plan import Plan, Planned
from .hook import JudgeHook
from .jury import VOTES
from .rows import judged_rows


def decide(plan: Plan, hook: JudgeHook, p: Planned, cases: pl.DataFrame,
           results: pl.DataFrame) -> pl.DataFrame:
    """The result rows (case_id, assertion_index, status, pass, score, reason) of the ACROSS
    assertion `p` for `cases` (case_id, test_index, vars, output: every stored case of its
    tests), given their other `results` (case_id, assertion_index, parent_index, type,
    score)."""
    grouped = cases.group_by("test_index", "vars", maintain_order=True).agg("case_id", "output")
    scores = _other_scores(plan, cases, results)
    # a type decided across a test's outputs (select-best, max-score) reads each test's cases
    # as a list, once after every batch is stored; not the vectorised path
    groups = [[{"case_id": c, "output": o, "scores": scores.get(c, [])}
               for c, o in zip(ids, outs)]  # row-wise: the type's input is a list per test
              for ids, outs in grouped.select("case_id", "output").iter_rows()]  # row-wise: idem
    ordered = pl.DataFrame({"case_id": [c["case_id"] for g in groups for c in g]},
                           schema={"case_id": pl.Int64})
    ordered = ordered.join(cases.select("case_id", "test_index"), on="case_id",
                           maintain_order="left")
    if not p.atype.needs_judge(p.spec):
        decided = _outcomes(ordered, p.atype.fn(None, p.spec, groups))
    elif hook.runner is None:
        decided = _outcomes(ordered, [(None, None, NO_JUDGE)] * ordered.height)
    else:  # a jury or repeats grade it as they grade the other types (hook.jury)
        (model, rubric, _), _tests = hook.groups(p, cases)[0]
        decided = hook.jury(p, model, lambda juror, r: _outcomes(ordered, p.atype.fn(
            hook.graded(p, cases, juror, rubric, {}, repeat=r), p.spec, groups)))
    if "votes" not in decided.columns:
        decided = decided.with_columns(votes=pl.lit(None, VOTES))
    return judged_rows(p, decided).join(plan.slots.select("test_index", "assertion_index", "key"),
                                  on=["test_index", "key"])


def _outcomes(ordered: pl.DataFrame, outcomes: list) -> pl.DataFrame:
    """(case_id, test_index, passed, score, reason) of `outcomes`, one per `ordered` case."""
    return ordered.with_columns(pl.DataFrame(
        {"passed": [o[0] for o in outcomes], "score": [o[1] for o in outcomes],
         "reason": [o[2] for o in outcomes]},
        schema={"passed": pl.Boolean, "score": pl.Float64, "reason": pl.String}))


def _other_scores(plan: Plan, cases: pl.DataFrame, results: pl.DataFrame
                  ) -> dict[int, list[tuple[str, float]]]:
    """Each case's (type, score) of its assertions that are not decided across cases."""
    across = [p.key for p in plan.assertions if p.kind is Kind.ACROSS]
    slots = plan.slots.filter(pl.col("key").is_in(across) & pl.col("parent_index").is_null())
    rows = (results.join(cases.select("case_id", pl.col("test_index").cast(pl.Int32)),
                         on="case_id")
            .join(slots.select("test_index", "assertion_index",
                               pl.col("parent_index").cast(pl.Int32)),
                  on=["test_index", "assertion_index", "parent_index"], how="anti",
                  nulls_equal=True))
    out: dict[int, list[tuple[str, float]]] = {}
    # the groups above hand each case's scores to the type as a list
    for case, kind, score in rows.sort("case_id", "assertion_index").select(
            "case_id", "type", "score").iter_rows():  # row-wise: a list of scores per case
        out.setdefault(case, []).append((kind, score))
    return out
