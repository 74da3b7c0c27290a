"""Parser checks over the distinct values of a batch, on every core when there are many.

Like `distinct.over_distinct`, but the check is a module-level function `check(value, arg)`
so that a process pool can run it. The distinct values are cut into chunks; the worker
processes take chunks from the back while this process checks them from the front, until
the two meet. Workers are spawned once, kept for the life of the program, and can be
started ahead of need (`start`) so that their start-up overlaps reading the data.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from multiprocessing import get_context
from typing import Any

import polars as pl

from .distinct import Outcome, over_distinct

POOL_MIN = 4_000  # fewer distinct values than this: checking in-process is faster
SAMPLE = 500  # values timed in-process before deciding
FAST = 2e-6  # CPU seconds per value under which sending values to a worker costs more
CHUNK_SECONDS = 0.02  # aim for chunks of about this much work
_POOL: ProcessPoolExecutor | None = None
_STARTING = threading.Lock()


def workers() -> int:
    """Processes checking values, this one included: $CHECKLLM_WORKERS, else the cores this
    process may use."""
    if os.environ.get("CHECKLLM_WORKERS"):
        return max(1, int(os.environ["CHECKLLM_WORKERS"]))
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def _noop() -> None:
    return None


def _die_with(parent: int) -> None:
    """In a worker: exit as soon as the process that started it is gone (killed with
    SIGKILL, it cannot stop its workers itself), instead of living on orphaned."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def start() -> ProcessPoolExecutor | None:
    """The pool of `workers() - 1` processes (this one is the other worker), started once,
    without waiting for the workers to be ready; None with one core. Workers are spawned (a forked child of a process running Polars threads
    can deadlock) with `__main__` hidden: a spawned child otherwise re-runs the caller's
    script, which breaks scripts without an `if __name__` guard. Each submit spawns a worker
    and hands it `__main__` then, so hiding it around the submits is enough."""
    global _POOL
    with _STARTING:  # two checks of one batch may run in two Polars threads
        if _POOL is None and workers() > 1:
            pool = ProcessPoolExecutor(workers() - 1, mp_context=get_context("spawn"),
                                       initializer=_die_with, initargs=(os.getpid(),))
            main = sys.modules["__main__"]
            sys.modules["__main__"] = types.ModuleType("__main__")
            try:
                for _ in range(workers() - 1):
                    pool.submit(_noop)
            finally:
                sys.modules["__main__"] = main
            _POOL = pool
        return _POOL


def _chunk(check: Callable[[Any, Any], Outcome], arg: Any, values: list) -> list[Outcome]:
    return [check(v, arg) for v in values]  # row-wise: a parser looks at each distinct value


def check_values(check: Callable[[Any, Any], Outcome], arg: Any, values: list,
                 parallel: bool | None = None) -> list[Outcome]:
    """Outcomes of `check(v, arg)` for each value, in order. With `parallel=None` a sample
    is timed in-process first, and the rest is shared with the workers only when a value
    takes long enough (>= FAST CPU seconds) for the transfer to pay off."""
    if parallel is False or workers() == 1 or (parallel is None and len(values) < POOL_MIN):
        return _chunk(check, arg, values)
    head: list[Outcome] = []
    per_value = CHUNK_SECONDS / 64
    if parallel is None:
        began = time.thread_time()  # CPU time: a busy machine must not make a check look slow
        head = _chunk(check, arg, values[:SAMPLE])
        per_value = (time.thread_time() - began) / SAMPLE
        if per_value < FAST:
            return head + _chunk(check, arg, values[SAMPLE:])
    rest = values[len(head):]
    size = max(16, int(CHUNK_SECONDS / max(per_value, 1e-7)))
    chunks = [rest[i:i + size] for i in range(0, len(rest), size)]
    for part in _shared(partial(_chunk, check, arg), chunks):
        head.extend(part)
    return head


def _shared(run: Callable[[list], list[Outcome]], chunks: list[list]) -> list[list[Outcome]]:
    """`run` over each chunk: the workers take chunks from the back (two each in flight),
    this process from the front, until the two meet. No chunk is cancelled or sent twice. A
    broken pool (a worker killed) is dropped, and its chunks are checked here."""
    global _POOL
    pool = start()
    out: list[list[Outcome] | None] = [None] * len(chunks)
    futures: dict[int, Future] = {}
    front, back = 0, len(chunks)
    while front < back:
        while pool and front < back and \
                sum(not f.done() for f in futures.values()) < 2 * (workers() - 1):
            try:
                futures[back - 1] = pool.submit(run, chunks[back - 1])
            except BrokenProcessPool:  # a worker died before this chunk was sent
                pool = _POOL = None
                break
            back -= 1
        if front < back:
            out[front] = run(chunks[front])
            front += 1
    for i, future in futures.items():
        try:
            out[i] = future.result()
        except BrokenProcessPool:
            _POOL = None
            out[i] = run(chunks[i])
    checked = [part for part in out if part is not None]
    if len(checked) != len(chunks):  # the two ends met: every chunk has its outcomes
        raise RuntimeError(f"{len(chunks) - len(checked)} chunk(s) were never checked")
    return checked


def over_distinct_pool(expr: pl.Expr, check: Callable[[Any, Any], Outcome], arg: Any = None
                       ) -> pl.Expr:
    """A struct {ok, detail} per row: `check(value, arg)` once per distinct value of `expr`,
    shared with the worker pool when that pays off. Wrap the result in `ctx.once(...)`."""
    return over_distinct(expr, lambda value: check(value, arg),
                         run_all=lambda values: check_values(check, arg, values))
