"""A Parquet file's cases keep their text in the file: the `cases` view reads output and vars
back by row number, and gives what a run that copies them stores (store/cases.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import polars as pl
import pytest

import checkllm_batch as cb
from checkllm_batch.errors import Interrupted
from checkllm_batch.store import runs as store
from checkllm_batch.store import schema
from checkllm_batch.store.schema import MIGRATIONS

SUITE = """
tests:
  - id: t1
    vars: {own: "té'st", n: 3, expected: shadowed}
    assert: [{type: contains, value: '{{expected}}'}]
  - id: t2
    assert: [{type: equals, value: '{{expected}}'}]
"""

TEXTS = ["plain", "ünïcödé 😀", 'quote " and \\ backslash', "line\nbreak\n", "", None,
         "tab\tand \x01 control", "</script>/slash"]


def dataset(**extra) -> pl.DataFrame:
    n = len(TEXTS)
    return pl.DataFrame({
        "test_id": ["t1", "t2"] * (n // 2),
        "output": TEXTS,
        "expected": [t[:3] if t else t for t in TEXTS],
        "provider": ["p"] * n,
        **extra,
    })


def run_twice(tmp_path, frame: pl.DataFrame, suite: str = SUITE, name: str = "o.parquet"):
    """(referenced run, copied run, database) of the same outputs file."""
    path = tmp_path / name
    frame.write_parquet(path) if name.endswith(".parquet") else frame.write_csv(path)
    (tmp_path / "s.yaml").write_text(suite, encoding="utf-8")
    db = tmp_path / "r.duckdb"
    runs = []
    for copy in (False, True):
        run = cb.evaluate(tmp_path / "s.yaml", str(path), db=db, copy_outputs=copy)
        runs.append(run.run_id)
        run.con.close()
    return runs[0], runs[1], db


def cases(con: duckdb.DuckDBPyConnection, run_id: str) -> list[tuple]:
    return con.execute("SELECT * EXCLUDE (run_id) FROM cases WHERE run_id = ? ORDER BY case_id",
                       [run_id]).fetchall()


# (what the dataset adds, whether its text stays in the file)
SHAPES = [
    ({}, True),
    ({"n_tokens": list(range(8))}, True),                       # an integer var
    ({"flag": [True, False, None, True, False, True, None, False]}, True),
    ({"score": [0.5, 1.0, 1e-7, 2.0, None, 3.25, 1e21, -0.0]}, False),  # floats: copied
    ({"ctx": [{"a": i} for i in range(8)]}, False),              # a struct var: copied
]


@pytest.mark.parametrize("extra, referenced", SHAPES, ids=["text", "int", "bool", "float",
                                                           "struct"])
def test_cases_read_from_the_file_are_the_copied_cases(tmp_path, extra, referenced):
    ref, copied, db = run_twice(tmp_path, dataset(**extra))
    with duckdb.connect(str(db), read_only=True) as con:
        assert cases(con, ref) == cases(con, copied)
        stored = con.execute("SELECT count(output), count(vars) FROM case_rows "
                             "WHERE run_id = ?", [ref]).fetchall()[0]
        sources = con.execute("SELECT run_id FROM case_sources").fetchall()
        # the view's vars are JSON that reads back as the case builder's
        vars_ = con.execute("SELECT vars->>'own', vars->>'expected' FROM cases WHERE run_id "
                            "= ? ORDER BY case_id LIMIT 2", [ref]).fetchall()
    assert stored == ((0, 0) if referenced else (7, 8))
    assert sources == ([(ref,)] if referenced else [])
    assert vars_ == [("té'st", "pla"), (None, "ünï")]


def test_other_sources_and_outputs_are_copied(tmp_path):
    ref, _, db = run_twice(tmp_path, dataset(), name="o.csv")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(output) FROM case_rows WHERE run_id = ?",
                           [ref]).fetchall() == [(8,)]  # a CSV's empty cell is ""
    json_outputs = dataset().with_columns(output=pl.struct(a=pl.col("expected")))
    for folder, frame, name in (("j", json_outputs, "o.parquet"),
                                ("g", dataset(), "o[1].parquet")):  # a glob to DuckDB
        (tmp_path / folder).mkdir()
        ref, copied, db = run_twice(tmp_path / folder, frame, name=name)
        with duckdb.connect(str(db), read_only=True) as con:
            assert cases(con, ref) == cases(con, copied)
            assert con.execute("SELECT count(*) FROM case_sources").fetchall() == [(0,)]


def test_a_changed_or_missing_file_is_reported_by_name(tmp_path):
    ref, _, db = run_twice(tmp_path, dataset())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cb.Results(db).con.close()  # unchanged: no warning
    source = tmp_path / "o.parquet"
    dataset().reverse().write_parquet(source)
    with pytest.warns(UserWarning, match=rf"run {ref} reads .*o\.parquet, which has changed "
                                         "since it was scored: null for that run only"):
        cb.Results(db).con.close()
    os.remove(source)
    with pytest.warns(UserWarning, match="o.parquet, which is gone: null for that run only"):
        results = cb.Results(db)
    # only that run's text is lost: the copied run, and the query, read on
    texts = results.query("SELECT run_id = ? AS ref, count(output) AS n FROM cases GROUP BY 1 "
                          "ORDER BY 1", [ref]).rows()
    assert texts == [(False, 7), (True, 0)]
    # the facts do not need the file
    assert results.query("SELECT sum(cases) AS n FROM pass_rates")["n"].to_list() == [16]
    assert results.run(ref).summary()["cases"].sum() == 8


def test_the_commands_say_so_in_one_line(tmp_path):
    """`sql` warns as the other readers do; `export` of a run whose file is gone is one error
    line, and leaves no export half written."""
    ref, _, db = run_twice(tmp_path, dataset())
    cli = str(Path(sys.executable).parent / "checkllm-batch")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([cli, *args, "--db", str(db)], capture_output=True, text=True,
                              timeout=120)

    assert run("sql", "SELECT count(*) FROM cases").stderr == ""  # unchanged: no warning
    source = tmp_path / "o.parquet"
    dataset().reverse().write_parquet(source)
    done = run("sql", "SELECT count(*) FROM cases")
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        f"Warning: run {ref} reads its cases' output and vars from {source}, which has changed "
        "since it was scored: null for that run only (evaluate with --copy-outputs to keep the "
        "text in the database)"]
    os.remove(source)
    done = run("export", "--run", ref, "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"Error: cases: cannot export run {ref}: ")
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_write_copies_the_text_into_the_other_database(tmp_path):
    ref, _, db = run_twice(tmp_path, dataset())
    with duckdb.connect(str(db), read_only=True) as con:
        want = cases(con, ref)
    run = cb.Results(db).run(ref)
    cb.write(run, tmp_path / "archive.duckdb")
    run.con.close()
    os.remove(tmp_path / "o.parquet")
    with duckdb.connect(str(tmp_path / "archive.duckdb"), read_only=True) as con:
        assert cases(con, ref) == want


def test_a_database_from_before_case_sources_keeps_its_cases(tmp_path, monkeypatch):
    db = tmp_path / "old.duckdb"
    monkeypatch.setattr(schema, "MIGRATIONS", MIGRATIONS[:6])
    with duckdb.connect(str(db)) as con:  # as 0006 left it (views on the table), one case
        schema.migrate(con)
        con.execute("INSERT INTO cases (run_id, case_id, provider, vars, output) VALUES "
                    "('old', 0, 'p', '{\"a\": 1}', 'the text')")
        con.execute("INSERT INTO test_results VALUES ('old', 0, 'pass', true, 1, '')")
    monkeypatch.setattr(schema, "MIGRATIONS", MIGRATIONS)
    con = store.connect(db)
    assert con.execute("SELECT provider, vars, output FROM cases").fetchall() == [
        ("p", '{"a": 1}', "the text")]
    assert con.execute("SELECT provider, cases, passed FROM pass_rates").fetchall() == [
        ("p", 1, 1)]
    con.close()


# A dataframe has no file to read back: its text is stored in the database, or, asked
# (text_parts), written as Parquet parts beside a file database, one per batch
# (store/cases.Parts)

def frame_runs(tmp_path, frame: pl.DataFrame, batch_rows: int = 3):
    """(run keeping its text as parts, run storing it) of the same frame, one database."""
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    return tuple(cb.evaluate(tmp_path / "s.yaml", frame, db=tmp_path / "r.duckdb",
                             batch_rows=batch_rows, text_parts=parts) for parts in (True, False))


@pytest.mark.parametrize("extra", [e for e, _ in SHAPES], ids=["text", "int", "bool", "float",
                                                              "struct"])
def test_a_frames_text_is_read_from_its_parts_as_copied(tmp_path, extra):
    parts, copied = frame_runs(tmp_path, dataset(**extra))
    con = copied.con
    assert cases(con, parts.run_id) == cases(con, copied.run_id)
    assert con.execute("SELECT count(output), count(vars) FROM case_rows WHERE run_id = ?",
                       [parts.run_id]).fetchall() == [(0, 0)]
    folder = tmp_path / "r.duckdb.cases" / parts.run_id
    assert con.execute("SELECT * FROM case_parts").fetchall() == [
        (parts.run_id, f"r.duckdb.cases/{parts.run_id}")]  # relative to the database
    assert sorted(p.name for p in folder.iterdir()) == [
        "000000000000.parquet", "000000000003.parquet", "000000000006.parquet"]
    vars_ = con.execute("SELECT vars->>'own', vars->>'expected' FROM cases WHERE run_id "
                        "= ? ORDER BY case_id LIMIT 2", [parts.run_id]).fetchall()
    assert vars_ == [("té'st", "pla"), (None, "ünï")]


def test_an_in_memory_database_keeps_a_frames_text(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    run = cb.evaluate(tmp_path / "s.yaml", dataset(), db=":memory:", batch_rows=3)
    assert run.con.execute("SELECT output FROM case_rows ORDER BY case_id").fetchall() == [
        (t,) for t in TEXTS]
    assert run.con.execute("SELECT count(*) FROM case_parts").fetchall() == [(0,)]
    assert list(tmp_path.iterdir()) == [tmp_path / "s.yaml"]
    with pytest.raises(cb.InputError, match="text_parts: an in-memory database"):
        cb.evaluate(tmp_path / "s.yaml", dataset(), db=":memory:", text_parts=True)


def test_a_database_named_like_a_glob_keeps_a_frames_text(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    run = cb.evaluate(tmp_path / "s.yaml", dataset(), db=tmp_path / "r[1].duckdb", batch_rows=3)
    assert run.con.execute("SELECT output FROM cases ORDER BY case_id").fetchall() == [
        (t,) for t in TEXTS]
    assert run.con.execute("SELECT count(*) FROM case_parts").fetchall() == [(0,)]
    with pytest.raises(cb.InputError, match=r"text_parts: .*r\[1\]\.duckdb\.cases: a folder "
                                            "named with"):
        cb.evaluate(tmp_path / "s.yaml", dataset(), db=tmp_path / "r[1].duckdb",
                    text_parts=True)
    assert run.con.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]  # none started


def test_a_frame_run_stopped_between_a_part_and_its_batch_resumes_whole(tmp_path, monkeypatch):
    """The second batch's part is written, then the run stops before the batch commits:
    resumed in batches of another size, every case has its text once."""
    from checkllm_batch.store.cases import Parts

    write, calls = Parts.write, []

    def stop_after_second(self, cases, first):
        write(self, cases, first)
        calls.append(first)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(Parts, "write", stop_after_second)
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    frame, db = dataset(), tmp_path / "r.duckdb"
    with pytest.raises(Interrupted) as stopped:
        cb.evaluate(tmp_path / "s.yaml", frame, db=db, batch_rows=3, text_parts=True)
    run_id = stopped.value.run_id
    folder = tmp_path / "r.duckdb.cases" / run_id
    assert sorted(p.name for p in folder.iterdir()) == [
        "000000000000.parquet", "000000000003.parquet"]  # the second not committed
    monkeypatch.setattr(Parts, "write", write)
    resumed = cb.evaluate(tmp_path / "s.yaml", frame, db=db, batch_rows=2, resume=run_id)
    copied = cb.evaluate(tmp_path / "s.yaml", frame, db=db)
    assert cases(resumed.con, run_id) == cases(resumed.con, copied.run_id)
    ids = pl.read_parquet(folder / "*.parquet")["case_id"].sort().to_list()
    assert ids == list(range(8))  # each case in one part


def test_bad_input_in_a_frame_removes_its_parts(tmp_path):
    """Row 5 (the second batch) names no test: the first batch's part goes with its rows,
    and `cases` still reads."""
    frame = dataset().with_columns(test_id=pl.Series(["t1", "t2"] * 2 + ["nope"] + ["t1"] * 3))
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    db = tmp_path / "r.duckdb"
    with pytest.raises(cb.InputError, match="'nope' matches no test"):
        cb.evaluate(tmp_path / "s.yaml", frame, db=db, batch_rows=4, text_parts=True)
    assert list((tmp_path / "r.duckdb.cases").glob("**/*.parquet")) == []
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cases").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM case_parts").fetchall() == [(0,)]


def test_a_missing_parts_folder_is_reported_by_name(tmp_path):
    import shutil

    parts, copied = frame_runs(tmp_path, dataset())
    copied.con.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cb.Results(tmp_path / "r.duckdb").con.close()
    shutil.rmtree(tmp_path / "r.duckdb.cases")
    with pytest.warns(UserWarning, match=rf"run {parts.run_id} reads .*r\.duckdb\.cases"):
        results = cb.Results(tmp_path / "r.duckdb")
    assert results.run(parts.run_id).summary()["cases"].sum() == 8  # the facts are stored


def test_write_copies_a_frames_parts_into_the_other_database(tmp_path):
    import shutil

    parts, copied = frame_runs(tmp_path, dataset())
    want = cases(copied.con, copied.run_id)
    cb.write(parts, tmp_path / "archive.duckdb")
    copied.con.close()
    shutil.rmtree(tmp_path / "r.duckdb.cases")
    with duckdb.connect(str(tmp_path / "archive.duckdb"), read_only=True) as con:
        assert cases(con, parts.run_id) == want


# A results database is one thing to move, copy and archive: a frame's text is in it by
# default; parts are found from where the database is now, and one run's lost text is that
# run's alone (issue 40)

def test_a_frames_text_is_in_the_database_by_default(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    run = cb.evaluate(tmp_path / "s.yaml", dataset(), db=tmp_path / "r.duckdb", batch_rows=3)
    want = cases(run.con, run.run_id)
    run.con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.duckdb", "s.yaml"]  # no folder
    (tmp_path / "away").mkdir()
    os.rename(tmp_path / "r.duckdb", tmp_path / "away" / "moved.duckdb")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = cb.Results(tmp_path / "away" / "moved.duckdb")
    assert cases(results.con, run.run_id) == want
    assert [t for *_, t, _, _, _ in want[:2]] == TEXTS[:2]


def two_part_runs(tmp_path):
    """(two runs with parts, one storing its text, their cases) in tmp_path/r.duckdb."""
    parts, copied = frame_runs(tmp_path, dataset())
    other = cb.evaluate(tmp_path / "s.yaml", dataset().reverse(), db=tmp_path / "r.duckdb",
                        batch_rows=3, text_parts=True)
    runs = (parts.run_id, other.run_id, copied.run_id)
    want = {r: cases(other.con, r) for r in runs}
    other.con.close()
    return runs, want


def test_a_database_moved_with_its_folder_reads_its_parts(tmp_path):
    runs, want = two_part_runs(tmp_path)
    (tmp_path / "away").mkdir()
    os.rename(tmp_path / "r.duckdb", tmp_path / "away" / "m.duckdb")
    os.rename(tmp_path / "r.duckdb.cases", tmp_path / "away" / "m.duckdb.cases")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = cb.Results(tmp_path / "away" / "m.duckdb")
        assert {r: cases(results.con, r) for r in runs} == want
        results.con.close()
        store.connect(tmp_path / "away" / "m.duckdb").close()  # a writer stores it resolved
        with duckdb.connect(str(tmp_path / "away" / "m.duckdb"), read_only=True) as con:
            assert {r: cases(con, r) for r in runs} == want


def test_a_copy_alone_does_not_read_the_originals_folder(tmp_path):
    import shutil

    (parts, other, copied), want = two_part_runs(tmp_path)
    shutil.copy(tmp_path / "r.duckdb", tmp_path / "copy.duckdb")
    with pytest.warns(UserWarning) as said:
        results = cb.Results(tmp_path / "copy.duckdb")
    assert sorted(str(w.message) for w in said) == sorted(
        f"run {r} reads its cases' output and vars from {tmp_path / 'copy.duckdb.cases' / r}, "
        "which is gone: null for that run only (keep that folder beside the database, moved "
        "or copied with it)" for r in (parts, other))
    assert cases(results.con, copied) == want[copied]
    assert results.query("SELECT count(output) AS n FROM cases WHERE run_id <> ?",
                         [copied])["n"].item() == 0


def test_one_runs_lost_or_damaged_parts_touch_that_run_only(tmp_path):
    """One run's folder gone, another's part truncated: each warns in one line, the others
    read whole, the rest of the damaged run too; a new run goes into the database, and the
    lost run can no longer be written or exported, by name."""
    import shutil

    (parts, other, copied), want = two_part_runs(tmp_path)
    shutil.rmtree(tmp_path / "r.duckdb.cases" / parts)
    damaged = tmp_path / "r.duckdb.cases" / other / "000000000003.parquet"
    damaged.write_bytes(damaged.read_bytes()[:40])
    with pytest.warns(UserWarning) as said:
        results = cb.Results(tmp_path / "r.duckdb")
    assert sorted(str(w.message).split(", which ")[1] for w in said) == [
        "is gone: null for that run only (keep that folder beside the database, moved or "
        "copied with it)",
        "lacks or has damaged 1 of its 3 parts: null for that run only (keep that folder "
        "beside the database, moved or copied with it)"]
    assert cases(results.con, copied) == want[copied]
    texts = [c[7] for c in cases(results.con, other)]
    assert texts == [c[7] for c in want[other][:3]] + [None] * 3 + [c[7] for c in want[other][6:]]
    assert results.failures(parts).height == results.failures(copied).height
    assert results.report(tmp_path / "report.html", parts).exists()
    results.con.close()
    new = cb.evaluate(tmp_path / "s.yaml", dataset(), db=tmp_path / "r.duckdb",
                      text_parts=True)
    assert cases(new.con, new.run_id) == want[copied]
    with pytest.raises(cb.InputError, match=rf"cannot write run {parts} to .*a\.duckdb: run "
                                            rf"{parts} reads .* which is gone"):
        cb.write(cb.Run(new.con, parts), tmp_path / "a.duckdb")
    with pytest.warns(UserWarning):
        results = cb.Results(new.con)
    with pytest.raises(cb.InputError, match=rf"cannot export run {parts}: run {parts} reads"):
        results.export(tmp_path / "out", parts)
    assert not (tmp_path / "a.duckdb").exists() and not (tmp_path / "out").exists()


def test_a_file_where_the_parts_folder_goes_is_refused_before_the_run(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "r.duckdb.cases").write_text("not a folder")
    with pytest.raises(cb.InputError, match=r"r\.duckdb\.cases: exists and is not a folder"):
        cb.evaluate(tmp_path / "s.yaml", dataset(), db=tmp_path / "r.duckdb", text_parts=True)
    with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
    run = cb.evaluate(tmp_path / "s.yaml", dataset(), db=tmp_path / "r.duckdb")  # the default
    assert run.con.execute("SELECT count(output) FROM cases").fetchall() == [(7,)]


def test_a_stray_file_in_a_runs_folder_is_left_alone_on_resume(tmp_path, monkeypatch):
    from checkllm_batch.store.cases import Parts

    write = Parts.write

    def stop_at_second(self, cases, first):
        if first:
            raise KeyboardInterrupt
        write(self, cases, first)

    monkeypatch.setattr(Parts, "write", stop_at_second)
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    db = tmp_path / "r.duckdb"
    with pytest.raises(Interrupted) as stopped:
        cb.evaluate(tmp_path / "s.yaml", dataset(), db=db, batch_rows=3, text_parts=True)
    monkeypatch.setattr(Parts, "write", write)
    folder = tmp_path / "r.duckdb.cases" / stopped.value.run_id
    dataset().write_parquet(folder / "notes.parquet")
    dataset().write_parquet(folder / "000000000007.copy.parquet")
    resumed = cb.evaluate(tmp_path / "s.yaml", dataset(), db=db, batch_rows=3,
                          resume=stopped.value.run_id)
    copied = cb.evaluate(tmp_path / "s.yaml", dataset(), db=db)
    assert cases(resumed.con, resumed.run_id) == cases(resumed.con, copied.run_id)
    assert (folder / "notes.parquet").exists()
