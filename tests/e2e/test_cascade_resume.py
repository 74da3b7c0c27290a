"""A judge cascade killed mid-run (SIGKILL, after its calibration, while batches are being
judged), then `--resume`: the recorded thresholds are reused, not calibrated again, and no
request answered before the kill is sent again (each request hash has one `ok` answer in
judge_calls); every case ends with one result, decided by a stage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import polars as pl
import pytest
from judge_server import JudgeServer, cascade_reply

CLI = str(Path(sys.executable).parent / "checkllm-batch")
KEY_ENV = "CHECKLLM_TEST_JUDGE_KEY"
SUITE = f"""
judge:
  api_key_env: {KEY_ENV}
  cascade:
    - {{model: small, confidence: repeats, repeat: 3, temperature: 0.8}}
    - {{model: large}}
  agreement: 0.8
  risk: 0.2
  calibration: 80
defaultTest:
  assert:
    - type: llm-rubric
      value: the answer is good
"""
ROWS = 240


class Killer:
    """The cascade's replies; once `after` calls are answered, the eval process is killed."""

    def __init__(self, after: int):
        self.after, self.pid, self.answered = after, None, 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        with self.lock:
            self.answered += 1
            if self.pid and self.answered == self.after:
                os.kill(self.pid, signal.SIGKILL)
        return cascade_reply(body)


def start(folder: Path, server: JudgeServer, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [CLI, "eval", "s.yaml", "--outputs", "o.parquet", "--db", "r.duckdb", "--batch-rows",
         "20", "--no-progress", "--judge-base-url", server.url, "--judge-concurrency", "4",
         *extra], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, KEY_ENV: "sk-test-0123456789"})


def read(folder: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(folder / "r.duckdb"), read_only=True) as con:
        return con.sql(sql).fetchall()


@pytest.mark.xdist_group("cascade_kill")
def test_a_cascade_killed_mid_run_resumes_without_asking_again(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    pl.DataFrame({"output": [f"{'bad' if i % 3 == 0 else 'good'} {i} "
                             f"{'hard' if i % 4 == 0 else 'easy'} ✓" for i in range(ROWS)]}
                 ).write_parquet(tmp_path / "o.parquet")
    # calibration: ~80 cases x (3 small + 1 large) = ~320 calls; then ~160 x 3 small + more
    killer = Killer(after=500)
    server = JudgeServer(answer=killer).start()
    try:
        proc = start(tmp_path, server)
        killer.pid = proc.pid
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == -signal.SIGKILL, err
        [(run_id, status)] = read(tmp_path, "SELECT run_id, status FROM runs")
        thresholds = read(tmp_path, "SELECT key, stage, threshold, n, k FROM "
                                    "cascade_thresholds ORDER BY ALL")
        committed = read(tmp_path, "SELECT count(*) FROM assertion_results")[0][0]
        answered = read(tmp_path, "SELECT count(*) FROM judge_calls WHERE status = 'ok'")[0][0]
        assert status == "running" and thresholds and 0 < committed < ROWS
        assert answered >= 480  # the calls in flight at the kill may be lost
        done = subprocess.run([CLI, *start_args(server, run_id)], cwd=tmp_path,
                              capture_output=True, text=True,
                              env={**os.environ, KEY_ENV: "sk-test-0123456789"}, timeout=180)
        assert done.returncode in (0, 1), done.stderr
    finally:
        server.stop()
    assert read(tmp_path, "SELECT status FROM runs") == [("finished",)]
    assert read(tmp_path, "SELECT key, stage, threshold, n, k FROM cascade_thresholds "
                          "ORDER BY ALL") == thresholds  # reused, not calibrated again
    [(ok, distinct)] = read(tmp_path, "SELECT count(*), count(DISTINCT request_hash) FROM "
                                      "judge_calls WHERE status = 'ok'")
    assert ok == distinct  # nothing answered was asked again
    assert killer.answered - 500 <= ok - answered + 4  # the resume sent only what was new
    rows = read(tmp_path, "SELECT count(*), count(cascade_stage) FROM assertion_results")
    assert rows == [(ROWS, ROWS)]


def start_args(server: JudgeServer, run_id: str) -> list[str]:
    return ["eval", "s.yaml", "--outputs", "o.parquet", "--db", "r.duckdb", "--batch-rows",
            "20", "--no-progress", "--judge-base-url", server.url, "--judge-concurrency", "4",
            "--resume", run_id]
