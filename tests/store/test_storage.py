"""A full or read-only disk under the results database or its parts: one line naming the
path and what to free (StorageError: the CLI's exit 2), the run left `interrupted` with its
cause recorded, and a resume once there is room finishes it identically (store/storage.py,
issue 40). Disk full is tested for real on a small tmpfs where this process may mount one
(root), and everywhere by the errors DuckDB and the file system raise, injected."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

import checkllm_batch as cb
from checkllm_batch.errors import StorageError
from checkllm_batch.store import cases as cases_store
from checkllm_batch.store import runs

SUITE = {"tests": [{"assert": [{"type": "contains", "value": "a"}]}]}
FRAME = pl.DataFrame({"output": [f"a{i} ünï" * 3 for i in range(40)] + [None, ""]})


def status(db: Path, run_id: str) -> tuple:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT status, error FROM runs WHERE run_id = ?",
                           [run_id]).fetchall()[0]


def resumed_equals_whole(db: Path, run_id: str, **options) -> None:
    resumed = cb.evaluate(SUITE, FRAME, db=db, batch_rows=7, resume=run_id, **options)
    whole = cb.evaluate(SUITE, FRAME, db=db)
    assert resumed.status == "finished"
    assert resumed.test_results.equals(cb.Run(resumed.con, whole.run_id).test_results)
    assert resumed.con.execute("SELECT list(output ORDER BY case_id) FROM cases GROUP BY "
                               "run_id").fetchall() == [(FRAME["output"].to_list(),)] * 2


# (what fails, the error it raises, the line's start)
FAILURES = [
    ("append", duckdb.IOException('Could not write file "{db}.wal": No space left on device'),
     "{db}.wal: No space left on device: free space on that disk"),
    ("append", duckdb.TransactionException('TransactionContext Error: Failed to commit: Could '
                                           'not write file "{db}.wal": Disk quota exceeded'),
     "{db}.wal: Disk quota exceeded: free space in your quota"),
    ("parts", OSError(errno.ENOSPC, "No space left on device", "{db}.cases/x.parquet"),
     "{db}.cases/x.parquet: No space left on device: free space on that disk"),
    ("parts", PermissionError(errno.EACCES, "Permission denied", "{db}.cases"),
     "{db}.cases: Permission denied: make it writable by you"),
    ("append", OSError(errno.EROFS, "Read-only file system"),
     "{db}: Read-only file system: make it writable"),
]


@pytest.mark.parametrize("where, error, line", FAILURES, ids=range(len(FAILURES)))
def test_a_disk_error_mid_run_is_one_line_and_the_run_resumes(tmp_path, monkeypatch, where,
                                                               error, line):
    db = tmp_path / "r.duckdb"
    error.args = tuple(a.replace("{db}", str(db)) if isinstance(a, str) else a
                       for a in error.args)
    if isinstance(error, OSError) and error.filename:
        error.filename = error.filename.replace("{db}", str(db))
    calls = []
    target, name = (runs, "append") if where == "append" else (cases_store.Parts, "write")
    real = getattr(target, name)

    def fail_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, fail_second)
    with pytest.raises(StorageError) as said:
        cb.evaluate(SUITE, FRAME, db=db, batch_rows=10, text_parts=where == "parts")
    message = str(said.value)
    assert message.startswith(line.replace("{db}", str(db))) and "\n" not in message
    run_id = message.split("--resume ")[1]
    state, cause = status(db, run_id)
    assert state == "interrupted" and str(error.args[-1]).split(": ")[-1] in cause
    monkeypatch.setattr(target, name, real)
    resumed_equals_whole(db, run_id)


def test_a_database_that_cannot_be_opened_for_writing_says_so(tmp_path, monkeypatch):
    def read_only(path, read_only=False):
        raise duckdb.IOException(f'Cannot open file "{path}": Read-only file system')

    monkeypatch.setattr(duckdb, "connect", read_only)
    with pytest.raises(StorageError, match=rf"^{tmp_path}/r\.duckdb: Read-only file system: "
                                           "make it writable$"):
        cb.evaluate(SUITE, FRAME, db=tmp_path / "r.duckdb")


def _mount(folder: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("source", ["jsonl", "frame-parts"])
def test_a_full_tmpfs_is_exit_2_in_one_line_and_resumes_once_freed(tmp_path, source):
    """The real thing: a 3 MB tmpfs fills up while the CLI (a file) or the API (a frame
    with parts) writes; then remounted larger, the resume finishes identically."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _mount(disk, "size=3m"):
        pytest.skip("mounting a tmpfs needs root (the injected errors above run everywhere)")
    try:
        db = disk / "r.duckdb"
        frame = pl.DataFrame({"output": [f"a{i}" * 40 for i in range(40_000)]})
        if source == "jsonl":
            frame.write_ndjson(tmp_path / "o.jsonl")
            (tmp_path / "s.yaml").write_text("tests:\n  - assert: [{type: contains, value: a}]\n")
            cli = [str(Path(sys.executable).parent / "checkllm-batch"), "eval", str(tmp_path / "s.yaml"),
                   "--outputs", str(tmp_path / "o.jsonl"), "--db", str(db), "--no-progress",
                   "--batch-rows", "4000"]
            done = subprocess.run(cli, capture_output=True, text=True, timeout=600)
            assert done.returncode == 2, done.stderr
            assert "Traceback" not in done.stderr
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and "No space left on device: free space on that disk, " \
                "then resume the run with --resume" in lines[0], done.stderr
            run_id = lines[0].split("--resume ")[1]
        else:
            with pytest.raises(StorageError, match="No space left on device") as said:
                cb.evaluate(SUITE, frame, db=db, batch_rows=4000, text_parts=True)
            run_id = str(said.value).split("--resume ")[1]
        subprocess.run(["mount", "-o", "remount,size=300m", str(disk)], check=True)
        assert status(db, run_id)[0] == "interrupted"
        if source == "jsonl":
            done = subprocess.run([*cli, "--resume", run_id], capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, done.stderr
        else:
            cb.evaluate(SUITE, frame, db=db, batch_rows=3000, resume=run_id).con.close()
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*), count(DISTINCT case_id), count(output) FROM "
                               "cases").fetchall() == [(40_000, 40_000, 40_000)]
            assert con.execute("SELECT status FROM runs").fetchall() == [("finished",)]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
