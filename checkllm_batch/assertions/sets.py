"""`assert-set`: nested assertions combined like a small test (promptfoo §7.8, SPEC §3).

The set has its own `threshold`, `weight` and `metric`. Its children are planned and
evaluated as ordinary assertions; the engine then combines them per case (weighted mean
score; pass = every child passed, or score >= threshold when the set has one; any child
error makes the set an error). Children's rows are kept in assertion_results with
`parent_index` = the set's index. Nested sets and `not-assert-set` are parse errors.
"""

from __future__ import annotations

from .registry import Ctx, Kind, Value, Verdict, assertion

SET = "assert-set"


@assertion(SET, kind=Kind.SET, value=Value.NONE, fields=("assert",), required=("assert",), negatable=False,
           needs_text=False)
def assert_set(ctx: Ctx) -> Verdict:
    """Nested assertions with their own threshold, weight and metric."""
    raise AssertionError("assert-set is combined by the engine from its children's results")
