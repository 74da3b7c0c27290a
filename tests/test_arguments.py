"""Every public verb checks its arguments first (checkllm_batch/arguments.py): a wrong one is
an InputError naming the argument and what it accepts, and no file is created; `db=` takes a
path, ':memory:' or a DuckDB connection; a pandas frame from cb.score exports (issue 40)."""

from __future__ import annotations

import os
import pickle

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import checkllm_batch as cb

SUITE = {"tests": [{"assert": [{"type": "contains", "value": "a"}]}]}
FRAME = pd.DataFrame({"output": ["a", "b", ""]})


def _run():
    return cb.evaluate(SUITE, FRAME)


# (call, the message's start)
CASES = [
    (lambda: cb.score(FRAME, [1]), "suite: takes a suite file path"),
    (lambda: cb.score(FRAME, 5), "suite: takes .* not int 5"),
    (lambda: cb.score(FRAME, None), "suite: takes .* not NoneType None"),
    (lambda: cb.evaluate(5, FRAME), "suite: takes"),
    (lambda: cb.load(None), "suite: takes"),
    (lambda: cb.load(5), "suite: takes"),
    (lambda: cb.get_run(3), "db: takes a database file path, ':memory:' or a DuckDB connection"),
    (lambda: cb.get_run("r.duckdb", 3), "run: takes a string or None, not int 3"),
    (lambda: cb.write(_run(), 7), "path: takes a database file path to copy the run into"),
    (lambda: cb.write(_run(), ":memory:"), "path: takes a database file path"),
    (lambda: cb.write(5, "w.duckdb"), "run: takes a Run"),
    (lambda: cb.evaluate(SUITE, FRAME, batch_rows=0), "batch_rows: takes a whole number of "
                                                      "rows, at least 1, not int 0"),
    (lambda: cb.evaluate(SUITE, FRAME, batch_rows=-1), "batch_rows: .* not int -1"),
    (lambda: cb.evaluate(SUITE, FRAME, batch_rows=2.5), "batch_rows: .* not float 2.5"),
    (lambda: cb.evaluate(SUITE, FRAME, batch_rows=True), "batch_rows: .* not bool True"),
    (lambda: cb.evaluate(SUITE, FRAME, batch_rows="10"), "batch_rows: .* not str '10'"),
    (lambda: cb.evaluate(SUITE, FRAME["output"]), "outputs: takes a dataframe, not a Series"),
    (lambda: cb.score(FRAME["output"], SUITE), "outputs: takes a dataframe, not a Series"),
    (lambda: cb.evaluate(SUITE, 5), "outputs: takes a file path, a DuckDB table, a dataframe"),
    (lambda: cb.evaluate(SUITE, FRAME, judge_sample=[1]), "judge_sample: takes a fraction"),
    (lambda: cb.evaluate(SUITE, FRAME, judge_sample=0), "judge-sample 0: expected a share"),
    (lambda: cb.evaluate(SUITE, FRAME, judge_sample="200%"), "judge-sample 200%: expected"),
    (lambda: cb.evaluate(SUITE, FRAME, judge_sample_seed="x"), "judge_sample_seed: takes a "
                                                               "whole number"),
    (lambda: cb.evaluate(SUITE, FRAME, progress="yes"), "progress: takes True or False"),
    (lambda: cb.evaluate(SUITE, FRAME, engine="spark"), "engine: takes 'local' or 'ray'"),
    (lambda: cb.evaluate(SUITE, FRAME, config=[1]), "config: takes a mapping or None"),
    (lambda: cb.evaluate(SUITE, FRAME, resume=3), "resume: takes a string or None"),
    (lambda: cb.evaluate(SUITE, FRAME, copy_outputs=True, text_parts=True),
     "copy_outputs and text_parts: choose one"),
    (lambda: cb.evaluate(SUITE, FRAME, db=5), "db: takes .* not int 5"),
    (lambda: cb.evaluate(SUITE, FRAME, db=None), "db: None .* engine='ray' option"),
    (lambda: cb.evaluate(SUITE, FRAME, results="shards"), "results: .* engine='ray' option"),
    (lambda: cb.evaluate(SUITE, FRAME, results=3), "results: takes a string or None"),
    (lambda: cb.evaluate(SUITE, FRAME, db=b"r.duckdb"), "db: takes .* not bytes"),
    (lambda: cb.evaluate(SUITE, FRAME, db=""), "db: takes .* not an empty path"),
    (lambda: cb.evaluate(SUITE, FRAME, db="o.parquet"), "db: o.parquet names a Parquet file"),
    (lambda: cb.evaluate(SUITE, FRAME, db="o.csv"), "db: o.csv names a CSV file"),
    (lambda: cb.evaluate(SUITE, FRAME, db="o.jsonl"), "db: o.jsonl names a JSON file"),
    (lambda: cb.evaluate(SUITE, FRAME, db="notes.txt"), "db: notes.txt exists and is not a "
                                                         "DuckDB database"),
    (lambda: cb.evaluate(SUITE, FRAME, db="folder"), "db: folder is a folder"),
    (lambda: cb.score(FRAME, SUITE, db=5), "db: takes"),
    (lambda: cb.Results(5), "db: takes"),
    (lambda: cb.Results(None), "db: takes"),
    (lambda: cb.Results("o.parquet"), "db: o.parquet names a Parquet file"),
    (lambda: cb.Results(duckdb.connect()), "db: the connection given holds no results"),
    (lambda: cb.open_results(5), "db: takes"),
]


@pytest.mark.parametrize("call, message", CASES, ids=range(len(CASES)))
def test_a_wrong_argument_is_named_and_creates_nothing(tmp_path, monkeypatch, call, message):
    monkeypatch.chdir(tmp_path)
    pl.DataFrame({"output": ["a"]}).write_parquet("o.parquet")
    (tmp_path / "notes.txt").write_text("not a database")
    (tmp_path / "folder").mkdir()
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(cb.InputError, match=message):
        call()
    assert sorted(os.listdir(tmp_path)) == before


def test_a_connection_as_db_holds_the_run(tmp_path):
    """The run is written into the connection's database, Results reads it there, and the
    caller's connection stays open (the run used a cursor of its own)."""
    con = duckdb.connect(str(tmp_path / "mine.duckdb"))
    run = cb.evaluate(SUITE, FRAME, db=con)
    assert con.execute("SELECT count(*), count(output) FROM cases WHERE run_id = ?",
                       [run.run_id]).fetchall() == [(3, 3)]
    assert cb.Results(con).pass_rates()["cases"].to_list() == [3]
    frame = cb.score(FRAME, SUITE, db=con)
    assert frame["pass"].to_list() == [True, False, False]
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(2,)]
    assert {p.split(".")[0] for p in os.listdir(tmp_path)} == {"mine"}  # none named for it
    memory = duckdb.connect()
    cb.evaluate(SUITE, FRAME, db=memory)
    assert cb.Results(memory).runs().height == 1


def test_a_read_only_connection_is_refused_by_name(tmp_path):
    cb.evaluate(SUITE, FRAME, db=tmp_path / "r.duckdb").con.close()
    with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
        with pytest.raises(cb.InputError, match="the connection given: cannot write to it"):
            cb.evaluate(SUITE, FRAME, db=con)
        assert cb.Results(con).runs().height == 1


def test_a_scored_pandas_frame_exports_everywhere(tmp_path):
    scored = cb.score(FRAME, SUITE)
    run_id = scored.attrs["run"].run_id
    scored.to_parquet(tmp_path / "s.parquet")
    scored.to_csv(tmp_path / "s.csv")
    scored.to_feather(tmp_path / "s.feather")
    scored.to_json(tmp_path / "s.json")
    table = pa.Table.from_pandas(scored)
    pl.from_pandas(scored).write_parquet(tmp_path / "p.parquet")
    back = pd.read_parquet(tmp_path / "s.parquet")
    assert back.attrs == {"run": run_id}  # the run's id travels with the file
    assert back["pass"].tolist() == [True, False, False] == table["pass"].to_pylist()
    assert pq.read_table(tmp_path / "p.parquet")["output"].to_pylist() == ["a", "b", ""]
    assert pickle.loads(pickle.dumps(scored)).attrs == {"run": run_id}
    # in the process, the run itself: its summary, shared by derived frames
    assert scored.attrs["run"].summary()["cases"].sum() == 3
    assert scored[scored["pass"]].attrs["run"] is scored.attrs["run"]
    polars = cb.score(pl.from_pandas(FRAME), SUITE)
    polars.write_parquet(tmp_path / "pl.parquet")
    polars.write_csv(tmp_path / "pl.csv")
    assert pl.read_parquet(tmp_path / "pl.parquet").equals(polars)
    assert polars.to_arrow().num_rows == 3
