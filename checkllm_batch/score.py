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
from itertools import chain, count
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from . import arguments
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
    arguments.outputs(outputs)
    arguments.database(db)
    arguments.flag(with_run, "with_run")
    if not isinstance(suite, Suite):
        import checkllm_batch as cb

        load: Callable[[Any], Suite] = cb.load  # the public loader: files and mappings
        suite = load(suite)
    kept = None if _in_memory(outputs) else Keep(outputs)
    run = evaluate(suite, outputs if kept is None else kept, db=db, **options)
    names = [str(c) for c in _columns(outputs, kept)]
    verdicts = verdict_table(run.con, run.run_id, names)
    frame = _back(outputs, kept, verdicts, run)
    return (frame, run) if with_run else frame


class SharedRun(str):
    """The run behind a scored pandas frame, in its `.attrs["run"]`: the run's id as a
    string, which pandas can write (to_parquet stores attrs as JSON) and pickle, and the
    `Run` itself to every attribute (`.attrs["run"].summary()`). pandas deep-copies attrs
    into every derived frame (a filter, a copy), and a DuckDB connection cannot be copied:
    the run is shared."""

    run: Run

    def __new__(cls, run: Run) -> SharedRun:
        shared = super().__new__(cls, run.run_id)
        shared.run = run
        return shared

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)

    def __deepcopy__(self, memo: dict) -> SharedRun:
        return self

    def __reduce__(self) -> tuple:
        return str, (str(self),)  # pickled, the run's id


def _in_memory(frame: Any) -> bool:
    """A frame held whole already: the result is built on it, its batches are not kept."""
    return (is_frame(frame, "pandas", "DataFrame") or isinstance(frame, (pl.DataFrame, pa.Table)))


def _columns(frame: Any, kept: Keep | None) -> Iterable[Any]:
    if kept is not None:
        return kept.batches[0].schema.names
    return frame.column_names if isinstance(frame, pa.Table) else frame.columns


def verdict_table(con: duckdb.DuckDBPyConnection, run_id: str, taken: list[str]) -> pa.Table:
    """One row per case in case order: the test verdict, then each assertion's pass and
    score. The run's top-level results (one per case x assertion) are read as they are
    stored and scattered into their columns by (case, slot) in numpy: a GROUP BY pivot of
    10M results cost DuckDB 1.6 s of the 1M-row frame's run, the scatter a tenth of it.
    Names already `taken` by the input's columns are not reused (see _names)."""
    taken_set = set(taken)
    verdict = [_unique([v, f"test_{v}"], taken_set) for v in VERDICT]
    slot, bases = _names(con, run_id, taken_set)
    tests = con.sql("SELECT t.case_id, c.test_index, t.status, t.pass, t.score, t.reason "
                    "FROM test_results t JOIN case_rows c USING (run_id, case_id) "
                    "WHERE t.run_id = ? ORDER BY t.case_id", params=[run_id]).to_arrow_table()
    results = con.sql("SELECT case_id, assertion_index, pass, score FROM assertion_results "
                      "WHERE run_id = ? AND parent_index IS NULL", params=[run_id]
                      ).to_arrow_table()
    cases = tests["case_id"].to_numpy()
    row = np.searchsorted(cases, results["case_id"].to_numpy())
    k = slot[tests["test_index"].to_numpy()[row], results["assertion_index"].to_numpy()]
    grids = {v: _scatter(results[v], (k, row), (len(bases), len(cases))) for v in ("pass", "score")}
    return pa.Table.from_arrays(
        [*(tests[v].combine_chunks() for v in VERDICT),
         *(grids[v][i] for i in range(len(bases)) for v in ("pass", "score"))],
        names=[*verdict, *(f"{b}_{v}" for b in bases for v in ("pass", "score"))])


def _scatter(column: pa.ChunkedArray, at: tuple[np.ndarray, np.ndarray],
             shape: tuple[int, int]) -> list[pa.Array]:
    """`column`'s values placed at (slot, row) of a slots x rows grid, one array per slot;
    null where a row has no such value."""
    grid = np.zeros(shape, dtype=column.type.to_pandas_dtype())
    known = np.zeros(shape, dtype=bool)
    grid[at] = pc.fill_null(column, pa.scalar(0).cast(column.type)).to_numpy()
    known[at] = column.is_valid().to_numpy()
    return [pa.array(grid[i], mask=~known[i]) for i in range(shape[0])]


def _names(con: duckdb.DuckDBPyConnection, run_id: str, taken: set[str]
           ) -> tuple[np.ndarray, list[str]]:
    """Each top-level assertion's column (its slot: `slot[test_index, assertion_index]`),
    and the names in slot order. The same name in two tests is one column (each row belongs
    to one test); within a test, a repeated metric gets its index (`accuracy_2`)."""
    rows = con.execute("SELECT test_index, assertion_index, type, metric FROM assertions "
                       "WHERE run_id = ? ORDER BY test_index, assertion_index",
                       [run_id]).fetchall()
    bases: dict[str, int] = {}
    slot = np.zeros((max((r[0] for r in rows), default=0) + 1,
                     max((r[1] for r in rows), default=0) + 1), dtype=np.int64)
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
        slot[test, index] = bases.setdefault(name, len(bases))
    return slot, list(bases)


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
        out.attrs["run"] = SharedRun(run)
        return out
    if isinstance(frame, pl.DataFrame) or is_frame(frame, "polars", "LazyFrame"):
        rows = frame if kept is None else pl.from_arrow(kept.batches)
        assert isinstance(rows, pl.DataFrame)
        return rows.hstack(pl.DataFrame(verdicts))
    rows = frame if kept is None else pa.Table.from_batches(kept.batches)
    return pa.Table.from_arrays([*rows.columns, *verdicts.columns],
                                names=[*rows.column_names, *verdicts.column_names])

