"""SIGKILL and Ctrl-C (SIGINT) at several points of a real `checkllm-batch eval` process,
then `--resume`: every case ends with exactly one result, identical to an uninterrupted
run, and the judge is never asked again what it had answered before the stop (after a
SIGKILL, only calls in flight at the kill may repeat).

Where the stop lands:
- `row`: a python check evaluating output r17 (batch 5 of 10) sends the signal itself;
- `judge`: the judge server receives the rubric request for output r23 and signals the
  process while that call (and others) are in flight;
- `finish`: the judge server receives the first select-best request, made after every batch
  is stored, while the run judges across cases and computes its metrics.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
from judge_server import JudgeServer, rubric_reply

CLI = str(Path(sys.executable).parent / "checkllm-batch")
KEY_ENV = "CHECKLLM_TEST_JUDGE_KEY"
CONCURRENCY = 4
# a python check that notes each output it evaluates in `seen`, and signals its own process
# when the file kill-<output> exists (holding the signal's number)
KILL = ("open('seen', 'a').write(output + '\\\\n') and ((__import__('os').path.exists('kill-' + "
        "output) and __import__('os').kill(__import__('os').getpid(), int(open('kill-' + "
        "output).read()))) or len(output) > 0)")
def suite(judged: bool) -> str:
    """Every row runs the python check; test `t` and test `pick` their own assertions
    (with a judge: llm-rubric and select-best)."""
    judge = f"judge: {{model: gpt-4o-mini, api_key_env: {KEY_ENV}}}\n" if judged else ""
    t = ("{type: llm-rubric, value: the answer is good}, {type: contains, value: good}"
         if judged else "{type: contains, value: good}, {type: regex, value: '^r[0-9]+-'}")
    pick = ("{type: select-best, value: the shortest}" if judged
            else "{type: equals, value: '{{q}}'}")
    return (f'{judge}defaultTest:\n  assert:\n    - type: python\n      value: "{KILL}"\n'
            f"tests:\n  - description: t\n    assert: [{t}]\n"
            f"  - description: pick\n    assert: [{pick}]\n")

def dataset() -> pl.DataFrame:
    """40 rows sorted by test: 30 of `t`, then 10 of `pick` (5 groups of two providers)."""
    t = [{"test_id": "t", "output": f"r{i}-{'good' if i % 3 else 'bad'} ünï", "provider": "p",
          "q": None} for i in range(30)]
    pick = [{"test_id": "pick", "output": f"r{i}-{'x' * (i % 4)}", "provider": f"p{i % 2}",
             "q": str((i - 30) // 2)} for i in range(30, 40)]
    return pl.DataFrame(t + pick)


class Stopper:
    """The judge's answers; on the request chosen, it signals the eval process first."""

    def __init__(self, point: str | None = None, sig: int = 0):
        self.point, self.sig, self.pid, self.fired = point, sig, None, False

    def __call__(self, body: dict) -> str:
        text = "\n".join(m["content"] for m in body.get("messages", []))
        across = "pieces of text" in text
        if not self.fired and self.pid and (
                (self.point == "judge" and "r23-" in text) or (self.point == "finish" and across)):
            self.fired = True
            os.kill(self.pid, self.sig)
            time.sleep(0.5)  # this call stays in flight while the signal lands
        return "0" if across else rubric_reply(body)


def start(folder: Path, server: JudgeServer | None, *extra: str) -> subprocess.Popen:
    judge = ["--judge-base-url", server.url, "--judge-concurrency", str(CONCURRENCY)] \
        if server else []
    return subprocess.Popen(
        [CLI, "eval", "s.yaml", "--outputs", "o.parquet", "--db", "r.duckdb", "--batch-rows",
         "4", "--no-progress", *judge, *extra], cwd=folder, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: "sk-test-0123456789"})


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=180)
    return proc.returncode, err


def prepare(folder: Path, judged: bool) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "s.yaml").write_text(suite(judged), encoding="utf-8")
    dataset().write_parquet(folder / "o.parquet")


def results(folder: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(folder / "r.duckdb"), read_only=True) as con:
        return {
            "runs": con.sql("SELECT status FROM runs").fetchall(),
            "cases": con.sql("SELECT case_id, test_id, provider, output FROM cases "
                             "ORDER BY case_id").fetchall(),
            "assertions": con.sql("SELECT case_id, assertion_index, status, score, reason "
                                  "FROM assertion_results ORDER BY ALL").fetchall(),
            "tests": con.sql("SELECT case_id, status, score, reason FROM test_results "
                             "ORDER BY ALL").fetchall(),
        }


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Iterator[dict[bool, dict]]:
    """The uninterrupted runs' results, with and without a judge."""
    server = JudgeServer(answer=Stopper()).start()
    out = {}
    for judged in (True, False):
        folder = tmp_path_factory.mktemp("reference")
        prepare(folder, judged)
        code, err = finish(start(folder, server if judged else None))
        assert code == 1, err  # some cases fail by design
        out[judged] = results(folder)
    server.stop()
    yield out


POINTS = [("row", True), ("row", False), ("judge", True), ("finish", True)]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("point,judged", POINTS, ids=[f"{p}-{'judge' if j else 'plain'}"
                                                      for p, j in POINTS])
def test_stop_then_resume_is_the_uninterrupted_run(tmp_path, reference, point, judged, sig):
    prepare(tmp_path, judged)
    stopper = Stopper(point, sig)
    server = JudgeServer(answer=stopper).start() if judged else None
    try:
        if point == "row":
            (tmp_path / "kill-r17-good ünï").write_text(str(int(sig)))
        proc = start(tmp_path, server)
        stopper.pid = proc.pid
        code, err = finish(proc)
        assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL), err
        assert "Traceback" not in err
        with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
            [(run, status)] = con.sql("SELECT run_id, status FROM runs").fetchall()
            committed = con.sql("SELECT count(*) FROM test_results").fetchall()[0][0]
            stored = {o for (o,) in con.sql("SELECT output FROM cases").fetchall()}
        seen = len((tmp_path / "seen").read_text(encoding="utf-8").splitlines())
        # Ctrl-C records the run itself; after SIGKILL the next writer finds it abandoned
        assert status == ("interrupted" if sig == signal.SIGINT else "running")
        assert committed < 40 or point == "finish"
        if sig == signal.SIGINT:
            assert f"--resume {run}" in err
        answered_before = dict(server.bodies) if server else {}

        for name in tmp_path.glob("kill-*"):
            name.unlink()
        code, err = finish(start(tmp_path, server, "--resume", run))
        assert code == 1, err
        got = results(tmp_path)
        assert got["runs"] == [("finished",)]
        # the resumed run evaluated only what was not committed
        resumed = (tmp_path / "seen").read_text(encoding="utf-8").splitlines()[seen:]
        assert resumed and not stored & set(resumed) or point == "finish" and not resumed
        assert got == reference[judged]
        if server:
            again = [h for h in answered_before if server.bodies[h] > answered_before[h]]
            # Ctrl-C waits for the calls in flight and records them: nothing is asked twice;
            # a SIGKILL loses only the answers still on the wire
            assert len(again) <= (0 if sig == signal.SIGINT else CONCURRENCY), again
    finally:
        if server:
            server.stop()


def test_a_finished_run_or_other_inputs_are_not_resumed(tmp_path):
    prepare(tmp_path, judged=False)
    code, err = finish(start(tmp_path, None))
    assert code == 1, err
    with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
        [(run,)] = con.sql("SELECT run_id FROM runs").fetchall()
    code, err = finish(start(tmp_path, None, "--resume", run))
    assert (code, err.strip()) == (2, f"Error: run {run} is finished: there is nothing to "
                                      "resume (leave out --resume to start a new run)")

    # an interrupted run, then resumed with another suite, then with other outputs
    (tmp_path / "kill-r17-good ünï").write_text(str(int(signal.SIGINT)))
    code, err = finish(start(tmp_path, None))
    assert code == 130, err
    (tmp_path / "kill-r17-good ünï").unlink()
    cut = err.split("--resume ")[1].split()[0]
    suite = (tmp_path / "s.yaml").read_text()
    (tmp_path / "s.yaml").write_text(suite.replace("value: good", "value: goo"))
    code, err = finish(start(tmp_path, None, "--resume", cut))
    assert (code, err.strip()) == (2, f"Error: run {cut} ran another suite (its content "
                                      "differs): resume it with the suite it ran, or leave "
                                      "out --resume to start a new run")
    (tmp_path / "s.yaml").write_text(suite)
    dataset().with_columns(pl.col("output").str.replace("r39", "r39b")).write_parquet(
        tmp_path / "o.parquet")
    code, err = finish(start(tmp_path, None, "--resume", cut))
    assert (code, err.strip()) == (2, f"Error: run {cut} ran on other outputs (their content "
                                      "differs): resume it with the outputs it ran on, or "
                                      "leave out --resume to start a new run")

    # named as every other command names a run: a unique prefix, or `last`
    dataset().write_parquet(tmp_path / "o.parquet")
    code, err = finish(start(tmp_path, None, "--resume", run[:2]))
    assert (code, err.strip()) == (2, f"Error: run id prefix {run[:2]!r} matches 2 runs: give "
                                      "more of it")
    code, err = finish(start(tmp_path, None, "--resume", "nope"))
    assert (code, err.strip()) == (2, "Error: no run 'nope' in the database to resume")
    code, err = finish(start(tmp_path, None, "--resume", cut[:-3]))
    assert code == 1, err
    code, err = finish(start(tmp_path, None, "--resume", "last"))
    assert (code, err.strip()) == (2, f"Error: run {cut} is finished: there is nothing to "
                                      "resume (leave out --resume to start a new run)")


def test_readers_share_the_database_and_a_writer_holding_it_is_one_line(tmp_path):
    """Readers open read-only: a notebook's Results and `checkllm-batch sql` at once, and
    `sql` cannot change the file. While an eval writes, a reader gets one clear line."""
    import checkllm_batch as cb

    prepare(tmp_path, judged=False)
    code, err = finish(start(tmp_path, None))
    assert code == 1, err
    notebook = cb.Results(tmp_path / "r.duckdb")
    sql = subprocess.run([CLI, "sql", "--db", "r.duckdb", "--format", "csv",
                          "SELECT count(*) AS n FROM test_results"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert (sql.returncode, sql.stdout) == (0, "n\n40\n"), sql.stderr
    drop = subprocess.run([CLI, "sql", "--db", "r.duckdb", "DROP VIEW failures"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert drop.returncode == 2 and "read-only" in drop.stderr, drop.stderr
    assert notebook.query("SELECT count(*) AS n FROM failures")["n"][0] > 0
    notebook.con.close()

    (tmp_path / "kill-r17-good ünï").write_text(str(int(signal.SIGSTOP)))  # holds it open
    writer = start(tmp_path, None)
    try:
        for _ in range(600):
            if len((tmp_path / "seen").read_text(encoding="utf-8").splitlines()) >= 58:
                break
            time.sleep(0.1)
        reader = subprocess.run([CLI, "metrics", "--db", "r.duckdb"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=60)
        assert reader.returncode == 2, reader
        assert reader.stderr.strip() == (
            f"Error: r.duckdb: in use by another process (PID {writer.pid}): a database is "
            "written by one process at a time, and read by many only while none writes it; "
            "wait for that process (an eval, a notebook, a sql prompt) to finish")
    finally:
        writer.kill()
        writer.communicate()


def test_a_bad_row_found_while_streaming_leaves_no_results_and_no_paid_call_lost(tmp_path):
    """A dataset row no test has, in the last batch: the run ends `failed` with its rows so
    far removed (no resume can go past the row: the fixed file is another file), and the run
    of the fixed file asks the judge nothing it had answered."""
    prepare(tmp_path, judged=True)
    dataset().with_columns(test_id=pl.when(pl.int_range(pl.len()) == 39).then(pl.lit("nope"))
                           .otherwise("test_id")).write_parquet(tmp_path / "o.parquet")
    server = JudgeServer(answer=Stopper()).start()
    try:
        code, err = finish(start(tmp_path, server))
        assert code == 2 and err.splitlines()[-1] == ("Error: o.parquet: row 40: test_id "
                                                      "'nope' matches no test in the suite"), err
        with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
            [(run, status)] = con.sql("SELECT run_id, status FROM runs").fetchall()
            assert status == "failed"
            for table in ("cases", "assertion_results", "test_results", "run_batches"):
                assert con.sql(f"SELECT count(*) FROM {table}").fetchall() == [(0,)], table
        metrics = subprocess.run([CLI, "metrics", "--db", "r.duckdb", "--run", run],
                                 cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert f"{run} (failed, no results: InputError: o.parquet: row 40" in metrics.stdout
        asked = dict(server.bodies)
        assert asked

        dataset().write_parquet(tmp_path / "o.parquet")  # fixed
        code, err = finish(start(tmp_path, server))
        assert code == 1, err
        assert [h for h in asked if server.bodies[h] > asked[h]] == []
    finally:
        server.stop()
