"""`cb.score`: the notebook verb. A dataframe of outputs in, the same kind of frame back, one
row per input row in input order: the input's columns, the test verdict, then each
assertion's pass and score. The run is written like `cb.evaluate`'s, so `cb.Results` reads it.

Each assertion gets two flat columns, `<name>_pass` and `<name>_score`, rather than one
struct column: pandas shows a struct as opaque dicts (and filters it only through
`.struct.field`), while flat columns read, filter (`df[~df["tone_pass"]]`, `df.query`) and
export (CSV, Parquet) the same way in pandas, Polars and Arrow. `<name>` is the
assertion's `metric` if it has one, else its type and index in its test (`equals_0`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, count
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from .analysis.run import Run
from .api import evaluate
from .errors import InputError
from .load.frames import FRAMES, Keep, is_frame
from .suites.model import Suite

VERDICT = ("status", "pass", "score", "reason")


def score(outputs: Any, suite: Suite | str | Path | dict, *, db: str | Path = ":memory:",
          with_run: bool = False, **options: Any) -> Any:
    """Score a dataframe of `outputs` against `suite` (a Suite, a file, or a mapping read as
    a suite file is) and return the same kind of frame with verdict columns added.

    pandas in, pandas out (its index kept; the run in `.attrs["run"]`); a Polars DataFrame
    or LazyFrame in, a Polars DataFrame out (a lazy query is streamed while scored; the rows
    it gave are returned, not the query run again); anything else (a PyArrow Table, reader or
    Dataset, a DuckDB relation, a Hugging Face Dataset, an `__arrow_c_stream__` object) in,
    a PyArrow Table out. The run goes to `db` (default: an in-memory database); with
    `with_run=True`, `(frame, run)` is returned. `options` are `cb.evaluate`'s."""
    if outputs is None or isinstance(outputs, (str, Path)):
        raise InputError(f"cb.score takes a dataframe ({FRAMES}), not {outputs!r}: for a "
                         "file, use cb.evaluate or read it into a frame first")
    if not isinstance(suite, Suite):
        import checkllm_batch as cb

        load: Callable[[Any], Suite] = cb.load  # the public loader: files and mappings
        suite = load(suite)
    kept = None if _in_memory(outputs) else Keep(outputs)
    run = evaluate(suite, outputs if kept is None else kept, db=db, **options)
    run = SharedRun(run.con, run.run_id)
    names = [str(c) for c in _columns(outputs, kept)]
    verdicts = verdict_table(run.con, run.run_id, names)
    frame = _back(outputs, kept, verdicts, run)
    return (frame, run) if with_run else frame


@dataclass
class SharedRun(Run):
    """A Run that pandas' `.attrs` can carry: pandas deep-copies attrs into every derived
    frame (a filter, a copy), and a DuckDB connection cannot be copied; the run is shared."""

    def __deepcopy__(self, memo: dict) -> SharedRun:
        return self


def _in_memory(frame: Any) -> bool:
    """A frame held whole already: the result is built on it, its batches are not kept."""
    return (is_frame(frame, "pandas", "DataFrame") or isinstance(frame, (pl.DataFrame, pa.Table)))


def _columns(frame: Any, kept: Keep | None) -> Iterable[Any]:
    if kept is not None:
        return kept.batches[0].schema.names
    return frame.column_names if isinstance(frame, pa.Table) else frame.columns


def verdict_table(con: duckdb.DuckDBPyConnection, run_id: str, taken: list[str]) -> pa.Table:
    """One row per case in case order: the test verdict, then each assertion's pass and
    score, pivoted in SQL (one GROUP BY over the run's top-level results, no row loop).
    Names already `taken` by the input's columns are not reused (see _names)."""
    taken_set = set(taken)
    verdict = [_unique([v, f"test_{v}"], taken_set) for v in VERDICT]
    slots, bases = _names(con, run_id, taken_set)
    pivot = "".join(
        f", bool_or(pass) FILTER (k = {k}) AS {_ident(b + '_pass')}"
        f", any_value(score) FILTER (k = {k}) AS {_ident(b + '_score')}"
        for k, b in enumerate(bases))
    con.register("score_slots", slots)
    try:
        return con.sql(f"""
            WITH a AS (
                SELECT r.case_id {pivot}
                FROM assertion_results r JOIN case_rows c USING (run_id, case_id)
                JOIN score_slots n ON n.test_index = c.test_index
                                  AND n.assertion_index = r.assertion_index
                WHERE r.run_id = $run AND r.parent_index IS NULL GROUP BY r.case_id)
            SELECT {", ".join(f"t.{v} AS {_ident(n)}" for v, n in zip(VERDICT, verdict))}
                   {", a.* EXCLUDE (case_id)" if bases else ""}
            FROM test_results t LEFT JOIN a USING (case_id)
            WHERE t.run_id = $run ORDER BY t.case_id""", params={"run": run_id}).to_arrow_table()
    finally:
        con.unregister("score_slots")


def _names(con: duckdb.DuckDBPyConnection, run_id: str, taken: set[str]
           ) -> tuple[pa.Table, list[str]]:
    """Each top-level assertion's column name (its slot: test_index, assertion_index -> k),
    and the names in order. The same name in two tests is one column (each row belongs to
    one test); within a test, a repeated metric gets its index (`accuracy_2`)."""
    rows = con.execute("SELECT test_index, assertion_index, type, metric FROM assertions "
                       "WHERE run_id = ? ORDER BY test_index, assertion_index",
                       [run_id]).fetchall()
    bases: dict[str, int] = {}
    slots: list[tuple[int, int, int]] = []
    used: set[str] = set()
    for i, (test, index, type_, metric) in enumerate(rows):
        if i == 0 or rows[i - 1][0] != test:
            used = set()
        first = metric or f"{type_}_{index}"
        candidates = chain([first, f"{first}_{index}"],
                           (f"{first}_{index}_{n}" for n in count(2)))
        name = next(c for c in candidates if c not in used
                    and not {f"{c}_pass", f"{c}_score"} & taken)
        used.add(name)
        slots.append((test, index, bases.setdefault(name, len(bases))))
    table = pa.table({k: [s[i] for s in slots] for i, k in
                      enumerate(["test_index", "assertion_index", "k"])},
                     schema=pa.schema([("test_index", pa.int32()),
                                       ("assertion_index", pa.int32()), ("k", pa.int32())]))
    return table, list(bases)


def _unique(candidates: list[str], taken: set[str]) -> str:
    name = next(c for c in chain(candidates, (f"{candidates[-1]}_{n}" for n in count(2)))
                if c not in taken)
    taken.add(name)
    return name


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _back(frame: Any, kept: Keep | None, verdicts: pa.Table, run: Run) -> Any:
    """The input's kind of frame, its columns then the verdicts', row for row."""
    if is_frame(frame, "pandas", "DataFrame"):
        pd = importlib.import_module("pandas")  # the caller's: a pandas frame came in
        # nullable booleans: an assertion a row's test does not have is <NA>, not None
        columns = verdicts.to_pandas(
            types_mapper=lambda t: pd.BooleanDtype() if t == pa.bool_() else None)
        out = frame.assign(**{c: columns[c].array for c in columns.columns})
        out.attrs["run"] = run
        return out
    if isinstance(frame, pl.DataFrame) or is_frame(frame, "polars", "LazyFrame"):
        rows = frame if kept is None else pl.from_arrow(kept.batches)
        assert isinstance(rows, pl.DataFrame)
        return rows.hstack(pl.DataFrame(verdicts))
    rows = frame if kept is None else pa.Table.from_batches(kept.batches)
    return pa.Table.from_arrays([*rows.columns, *verdicts.columns],
                                names=[*rows.column_names, *verdicts.column_names])

