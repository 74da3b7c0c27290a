"""Parser checks over the distinct values of a batch, on every core when there are many.

Like `distinct.over_distinct`, but the check is a module-level function `check(value, arg)`
so that a process pool can run it: distinct values are split into chunks and checked in
worker processes (spawned once, kept for the life of the program).
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from typing import Any

import polars as pl

from .distinct import Outcome, over_distinct

POOL_MIN = 4_000  # fewer distinct values than this: checking in-process is faster
SAMPLE = 1_000  # values timed in-process before deciding
SLOW = 40e-6  # seconds per value above which the process pool pays off (measured)
_POOL: ProcessPoolExecutor | None = None


def workers() -> int:
    """Worker processes: $CHECKLLM_WORKERS, else the cores this process may use."""
    if os.environ.get("CHECKLLM_WORKERS"):
        return max(1, int(os.environ["CHECKLLM_WORKERS"]))
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def _noop() -> None:
    return None


def _pool() -> ProcessPoolExecutor:
    """The process pool, started once. Workers are spawned (a forked child of a process
    running Polars threads can deadlock) with `__main__` hidden: a spawned child otherwise
    re-runs the caller's script, which breaks scripts without an `if __name__` guard."""
    global _POOL
    if _POOL is None:
        pool = ProcessPoolExecutor(workers(), mp_context=get_context("spawn"))
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:  # workers start on submit: start them all while __main__ is hidden
            for future in [pool.submit(_noop) for _ in range(workers())]:
                future.result()
        finally:
            sys.modules["__main__"] = main
        _POOL = pool
    return _POOL


def _chunk(check: Callable[[Any, Any], Outcome], arg: Any, values: list) -> list[Outcome]:
    return [check(v, arg) for v in values]  # row-wise: a parser looks at each distinct value


def check_values(check: Callable[[Any, Any], Outcome], arg: Any, values: list,
                 parallel: bool | None = None) -> list[Outcome]:
    """Outcomes of `check(v, arg)` for each value, in order. With `parallel=None` a sample
    is timed in-process first; the rest goes to the pool only when the check is slow
    enough (>= SLOW seconds a value) for the pool's transfer costs to pay off."""
    if parallel is False or workers() == 1 or (parallel is None and len(values) < POOL_MIN):
        return _chunk(check, arg, values)
    head: list[Outcome] = []
    if parallel is None:
        start = time.thread_time()  # CPU time: a busy machine must not make a check look slow
        head = _chunk(check, arg, values[:SAMPLE])
        if (time.thread_time() - start) / SAMPLE < SLOW:
            return head + _chunk(check, arg, values[SAMPLE:])
    rest = values[len(head):]
    n = workers() * 4
    size = -(-len(rest) // n)
    parts = [rest[i:i + size] for i in range(0, len(rest), size)]
    for part in _pool().map(partial(_chunk, check, arg), parts):
        head.extend(part)
    return head


def over_distinct_pool(expr: pl.Expr, check: Callable[[Any, Any], Outcome], arg: Any = None
                       ) -> pl.Expr:
    """A struct {ok, detail} per row: `check(value, arg)` once per distinct value of `expr`,
    on the worker pool when that pays off. Wrap the result in `ctx.once(...)`."""
    return over_distinct(expr, lambda value: check(value, arg),
                         run_all=lambda values: check_values(check, arg, values))
