"""Ctrl-C during a run: exit 130, the run recorded as interrupted (never read as complete),
the resume command printed, and `--resume` finishing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl

# A python check that sends this process SIGINT when the file `stop` exists: a Ctrl-C that
# lands mid-run at a known point, in a real `checkllm-batch eval` process.
SUITE = """assert:
  - type: python
    value: "(__import__('os').path.exists('stop') and __import__('os').kill(__import__('os').getpid(), 2)) or len(output) > 1"
"""
CLI = str(Path(sys.executable).parent / "checkllm-batch")


def eval_(tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "eval", "s.yaml", "--outputs", "o.parquet", "--db", "r.duckdb",
                           "--batch-rows", "2", "--no-progress", *extra], cwd=tmp,
                          capture_output=True, text=True, timeout=120)


def runs(tmp: Path) -> list[tuple]:
    with duckdb.connect(str(tmp / "r.duckdb"), read_only=True) as con:
        return con.sql("SELECT run_id, status FROM runs ORDER BY started_at").fetchall()


def test_ctrl_c_is_recorded_and_resumable(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    pl.DataFrame({"output": ["ok", "x", "ünï", "", "fine", "yes"]}).write_parquet(
        tmp_path / "o.parquet")
    first = eval_(tmp_path)
    assert first.returncode == 1  # a finished run with failures
    (tmp_path / "stop").touch()
    stopped = eval_(tmp_path)
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    (done, done_status), (cut, cut_status) = runs(tmp_path)
    assert (done_status, cut_status) == ("finished", "interrupted")
    assert f"--resume {cut}" in stopped.stderr

    # readers default to the last finished run, not the partial one
    metrics = subprocess.run([CLI, "metrics", "--db", "r.duckdb"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert metrics.returncode == 0 and done in metrics.stdout and cut not in metrics.stdout
    # named, it is flagged as partial, in every format
    for fmt in ("table", "csv", "json"):
        named = subprocess.run([CLI, "metrics", "--db", "r.duckdb", "--run", cut, "--format",
                                fmt], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        said = named.stdout if fmt == "table" else named.stderr
        assert named.returncode == 0 and f"{cut} (interrupted: partial results" in said, fmt

    (tmp_path / "stop").unlink()
    resumed = eval_(tmp_path, "--resume", cut)
    assert resumed.returncode == 1, resumed.stderr
    assert runs(tmp_path) == [(done, "finished"), (cut, "finished")]
    with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
        counts = con.sql("SELECT run_id, count(*), count(DISTINCT case_id) FROM test_results "
                         "GROUP BY run_id ORDER BY run_id").fetchall()
    assert [c[1:] for c in counts] == [(6, 6), (6, 6)]
