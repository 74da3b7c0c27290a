"""A stream (a dataframe) is fingerprinted batch by batch as it is read, and a resume reads
its committed rows again and checks them: other content is refused by its first differing
batch or its row count, before the run is taken up (load/fingerprint.py, issue 40)."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import checkllm_batch as cb
from checkllm_batch.errors import Interrupted
from checkllm_batch.load.fingerprint import batch_digest
from checkllm_batch.store import runs

SUITE = {"tests": [{"assert": [{"type": "contains", "value": "a"}]}]}
TEXTS = ["a0", "ünï a", "", None, "b", "a\nb", "😀a", "x", "a", "tab\ta"]

KINDS = {
    "pandas": lambda rows: pd.DataFrame({"output": rows}),
    "polars": lambda rows: pl.DataFrame({"output": rows}),
    "lazy": lambda rows: pl.DataFrame({"output": rows}).lazy(),
    "arrow": lambda rows: pa.table({"output": pa.array(rows, pa.string())}),
}


def test_a_digest_is_the_same_however_the_rows_are_cut():
    table = pa.table({"t": TEXTS, "n": list(range(10)), "l": [[i] for i in range(10)]})
    whole = batch_digest(table.slice(2, 7).to_batches())
    cut = batch_digest([table.slice(2, 3).to_batches()[0], table.slice(5, 4).to_batches()[0]])
    fresh = batch_digest(pa.Table.from_pylist(table.slice(2, 7).to_pylist(),
                                              schema=table.schema).to_batches())
    assert whole == cut == fresh
    assert batch_digest(table.slice(2, 6).to_batches()) != whole
    changed = table.set_column(0, "t", pa.array(TEXTS[:5] + ["?"] + TEXTS[6:]))
    assert batch_digest(changed.slice(2, 7).to_batches()) != whole


def interrupted(tmp_path, monkeypatch, frame) -> str:
    """A run of `frame` in batches of 3 stopped after two committed batches."""
    append, calls = runs.append, []

    def stop_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        append(*args, **kwargs)

    monkeypatch.setattr(runs, "append", stop_third)
    with pytest.raises(Interrupted) as stopped:
        cb.evaluate(SUITE, frame, db=tmp_path / "r.duckdb", batch_rows=3)
    monkeypatch.setattr(runs, "append", append)
    return stopped.value.run_id


def state(tmp_path, run_id: str) -> tuple:
    with cb.open_results(tmp_path / "r.duckdb") as con:
        return con.execute("SELECT status, (SELECT count(*) FROM case_rows WHERE run_id = $r),"
                           " (SELECT list(digest ORDER BY batch) FROM run_batches WHERE run_id "
                           "= $r) FROM runs WHERE run_id = $r", {"r": run_id}).fetchall()[0]


@pytest.mark.parametrize("kind", KINDS)
def test_a_resumed_frame_with_other_content_is_refused(tmp_path, monkeypatch, kind):
    make = KINDS[kind]
    run_id = interrupted(tmp_path, monkeypatch, make(TEXTS))
    before = state(tmp_path, run_id)
    assert before[:2] == ("interrupted", 6) and all(before[2])
    changed = TEXTS[:4] + ["a changed row"] + TEXTS[5:]
    for frame, message in (
            (make(changed), rf"run {run_id} ran on other outputs: its batch 2 \(rows 3-5\) "
                            "differs"),
            (make(TEXTS[:4]), rf"run {run_id} ran on other outputs: these have 4 rows, and it "
                              "had committed 6"),
            (make(TEXTS[1:]), r"its batch 1 \(rows 0-2\) differs")):
        with pytest.raises(cb.InputError, match=message):
            cb.evaluate(SUITE, frame, db=tmp_path / "r.duckdb", batch_rows=2, resume=run_id)
        assert state(tmp_path, run_id) == before  # a refusal leaves the run as it was
    resumed = cb.evaluate(SUITE, make(TEXTS), db=tmp_path / "r.duckdb", batch_rows=4,
                          resume=run_id)
    again = cb.evaluate(SUITE, make(TEXTS), db=tmp_path / "r.duckdb")
    assert resumed.status == "finished"
    assert resumed.test_results.equals(cb.Run(resumed.con, again.run_id).test_results)
