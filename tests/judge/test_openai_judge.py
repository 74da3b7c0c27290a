"""The judge through real HTTP: the openai client against a local OpenAI-compatible server."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import write_suite
from judge_server import KEY_ENV, SECRET
from judge_server import RUBRIC_SUITE as SUITE
from judge_server import graded_outputs as outputs

from checkllm_batch import api


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def suite(tmp_path: Path, text: str = SUITE) -> Path:
    return write_suite(tmp_path, text)


def verdicts(run: api.Run) -> list[tuple]:
    return run.assertion_results.select("case_id", "status", "score").rows()


def expected(frame: pl.DataFrame) -> list[str]:
    return ["pass" if "good" in t else "fail" for t in frame["output"]]


@pytest.mark.parametrize("judge_server", [{"fail_rate": 0.2, "seed": 7}], indirect=True)
def test_no_case_lost_with_20_percent_faults(tmp_path, judge_server):
    frame = outputs(120)
    run = api.evaluate(suite(tmp_path), frame, judge_config=judge_server.config())
    results = run.assertion_results
    assert results["status"].to_list() == expected(frame)
    assert judge_server.status[500] > 10  # faults were injected, and retried through
    assert judge_server.answered == 120


def test_identical_requests_are_sent_once(tmp_path, judge_server):
    frame = outputs(300, distinct=12)
    run = api.evaluate(suite(tmp_path), frame, judge_config=judge_server.config())
    assert run.assertion_results["status"].to_list() == expected(frame)
    assert judge_server.counts["POST /v1/chat/completions"] == 12
    assert set(judge_server.bodies.values()) == {1}


def test_second_run_sends_nothing(tmp_path, judge_server):
    db = tmp_path / "r.duckdb"
    frame = outputs(40)
    first = api.evaluate(suite(tmp_path), frame, db=db, judge_config=judge_server.config())
    first_verdicts = verdicts(first)
    first.con.close()
    sent = judge_server.counts["POST /v1/chat/completions"]
    second = api.evaluate(suite(tmp_path), frame, db=db, judge_config=judge_server.config())
    assert judge_server.counts["POST /v1/chat/completions"] == sent == 40
    assert verdicts(second) == first_verdicts


@pytest.mark.parametrize("judge_server", [{"rpm": 1200}], indirect=True)
def test_rate_limited_endpoint_loses_nothing(tmp_path, judge_server):
    frame = outputs(60)
    run = api.evaluate(suite(tmp_path), frame, judge_config=judge_server.config(concurrency=16))
    assert run.assertion_results["status"].to_list() == expected(frame)


def test_unparsable_reply_is_an_error_never_a_pass(tmp_path, judge_server):
    text = SUITE + "      - type: not-llm-rubric\n        value: is rude\n"
    frame = pl.DataFrame({"test_id": ["t"] * 3, "output": ["garble good", "good", ""]})
    run = api.evaluate(suite(tmp_path, text), frame, judge_config=judge_server.config())
    rows = run.assertion_results.filter(pl.col("case_id") == 0)
    assert rows["status"].to_list() == ["error", "error"]
    assert rows["score"].to_list() == [None, None]
    assert all("no JSON object" in r for r in rows["reason"])
    assert run.test_results["status"].to_list()[0] == "error"



@pytest.mark.parametrize("temperature, sent", [(0.7, (3, 4, 5)), (0.0, (3, 3, 3))])
def test_unparsable_reply_is_recorded_and_asked_again_only_when_sampling_varies(
        tmp_path, judge_server, temperature, sent):
    """A reply the grader cannot read is `unparsed` in judge_calls, never `ok`: within the
    run it is not asked again (two batches hold the same output). Sampled at a temperature
    above 0, each later run asks it again once; at temperature 0 the same request gets the
    same reply, so later runs read it from judge_calls (the same error) and send nothing.
    Readable answers stay cached."""
    db = tmp_path / "r.duckdb"
    frame = pl.DataFrame({"test_id": ["t"] * 4, "output": ["garble good", "good",
                                                          "garble good", "bad ünï"]})
    for expected in sent:
        run = api.evaluate(suite(tmp_path), frame, db=db, batch_rows=2,
                           judge_config=judge_server.config(temperature=temperature))
        results = run.assertion_results
        assert results["status"].to_list() == ["error", "pass", "error", "fail"]
        assert results["reason"][0].startswith("no JSON object in judge reply")
        assert judge_server.counts["POST /v1/chat/completions"] == expected
        statuses = run.con.execute("SELECT status, count(*) FROM judge_calls GROUP BY ALL "
                                   "ORDER BY ALL").fetchall()
        assert statuses == [("ok", 2), ("unparsed", expected - 2)]
        run.con.close()


def test_budget_stops_spending(tmp_path, judge_server):
    frame = outputs(50)
    run = api.evaluate(suite(tmp_path), frame,
                       judge_config=judge_server.config(max_cost=0.0005, max_tokens=50,
                                                 concurrency=2))
    results = run.assertion_results
    spent = run.con.execute("SELECT sum(cost) FROM judge_calls").fetchall()[0][0]
    exhausted = results.filter(pl.col("reason") == "budget exhausted")
    assert 0 < judge_server.answered < 50
    assert spent <= 0.0005
    assert exhausted.height == 50 - judge_server.answered
    assert set(exhausted["status"]) == {"error"}


@pytest.mark.parametrize("judge_server,status", [
    ({"reject": lambda body: 400}, 400), ({"reject": lambda body: 401}, 401),
    ({"reject": lambda body: 404}, 404)], indirect=["judge_server"])
def test_400_401_404_are_not_retried_and_the_key_is_not_echoed(tmp_path, judge_server, status):
    run = api.evaluate(suite(tmp_path), outputs(3), judge_config=judge_server.config())
    assert judge_server.counts["POST /v1/chat/completions"] == 3
    assert set(run.assertion_results["status"]) == {"error"}
    assert all(f"HTTP {status}" in r for r in run.assertion_results["reason"])
    stored = str(run.con.execute("SELECT * FROM judge_calls").fetchall())
    assert f"rejected {status}" in stored and SECRET not in stored
    assert SECRET not in str(run.assertion_results.rows())


def test_batch_mode_gives_the_online_verdicts(tmp_path, judge_server):
    frame = outputs(30)
    online = api.evaluate(suite(tmp_path), frame, judge_config=judge_server.config())
    chat_calls = judge_server.counts["POST /v1/chat/completions"]
    batch = api.evaluate(suite(tmp_path), frame, db=tmp_path / "b.duckdb",
                         judge_config=judge_server.config(mode="batch"))
    assert verdicts(batch) == verdicts(online)
    assert judge_server.counts["POST /v1/chat/completions"] == chat_calls
    assert judge_server.counts["POST /v1/batches"] == 1
    stored = batch.con.execute("SELECT count(*) FROM judge_calls WHERE batch_id IS NOT NULL")
    assert stored.fetchall()[0][0] == 30


def test_dry_run_sends_nothing(tmp_path, judge_server):
    cli = _cli()
    frame = outputs(20, distinct=5)
    frame.write_csv(tmp_path / "out.csv")
    done = subprocess.run([cli, "eval", str(suite(tmp_path)), "--outputs", str(tmp_path / "out.csv"),
                           "--db", str(tmp_path / "r.duckdb"), "--judge-base-url",
                           judge_server.url, "--dry-run"], capture_output=True, text=True,
                          env={**os.environ, KEY_ENV: SECRET})
    assert done.returncode == 0, done.stderr
    assert "20 graded assertions, 5 unique requests, 0 already answered, 5 to send" in done.stdout
    assert sum(judge_server.counts.values()) == 0


def test_killed_run_resumes_sending_only_missing_requests(tmp_path, judge_server):
    judge_server.latency = 0.02
    n = 80
    outputs(n).write_csv(tmp_path / "out.csv")
    db = tmp_path / "r.duckdb"
    args = [_cli(), "eval", str(suite(tmp_path)), "--outputs", str(tmp_path / "out.csv"), "--db",
            str(db), "--judge-base-url", judge_server.url, "--judge-concurrency", "2",
            "--no-progress"]
    env = {**os.environ, KEY_ENV: SECRET}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while judge_server.answered < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)  # calls the server was still answering when the client died
    assert 20 <= judge_server.answered < n
    con = duckdb.connect(str(db))
    run_id, status = con.execute("SELECT run_id, status FROM runs").fetchall()[0]
    recorded = con.execute("SELECT count(*) FROM judge_calls WHERE status = 'ok'").fetchall()[0][0]
    con.close()
    assert status == "running" and recorded >= 18
    before = judge_server.answered
    done = subprocess.run(args + ["--resume", run_id], env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # some outputs are bad: failed tests, exit 1
    assert judge_server.answered - before == n - recorded
    assert sum(judge_server.bodies.values()) - n <= 2  # at most the calls in flight
    run = api.get_run(db, run_id)
    assert run.assertion_results["status"].to_list() == expected(outputs(n))
    assert run.con.execute("SELECT status FROM runs").fetchall()[0][0] == "finished"


def test_secrets_never_reach_the_database_or_output(tmp_path, judge_server):
    db = tmp_path / "r.duckdb"
    outputs(5).write_csv(tmp_path / "out.csv")
    done = subprocess.run([_cli(), "eval", str(suite(tmp_path)), "--outputs", str(tmp_path / "out.csv"),
                           "--db", str(db), "--judge-base-url", judge_server.url],
                          capture_output=True, text=True, env={**os.environ, KEY_ENV: SECRET})
    assert "judge:" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    con = duckdb.connect(str(db))
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
        dump = str(con.execute(f"SELECT * FROM {table}").fetchall())
        assert SECRET not in dump, table
    config = con.execute("SELECT config FROM runs").fetchall()[0][0]
    assert KEY_ENV in config


def _cli() -> str:
    return shutil.which("checkllm-batch", path=str(Path(sys.executable).parent)) or "checkllm-batch"


@pytest.mark.parametrize("judge_server", [{"batch_polls": 10**9}], indirect=True)
def test_crashed_batch_run_picks_its_batch_up_again(tmp_path, judge_server):
    text = SUITE.replace("judge:\n", "judge:\n  mode: batch\n  batch_poll_seconds: 0.01\n")
    n = 12
    outputs(n).write_csv(tmp_path / "out.csv")
    db = tmp_path / "r.duckdb"
    args = [_cli(), "eval", str(suite(tmp_path, text)), "--outputs", str(tmp_path / "out.csv"),
            "--db", str(db), "--judge-base-url", judge_server.url, "--no-progress"]
    env = {**os.environ, KEY_ENV: SECRET}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while sum(v for k, v in judge_server.counts.items() if k.startswith("GET /v1/batches/")) < 3 \
            and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert judge_server.counts["POST /v1/batches"] == 1
    con = duckdb.connect(str(db))
    run_id, batch_id = con.execute("SELECT r.run_id, b.batch_id FROM runs r, judge_batches b"
                                   ).fetchall()[0]
    con.close()
    judge_server.batch_polls = 0  # the provider finishes the batch meanwhile
    done = subprocess.run(args + ["--resume", run_id], env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert judge_server.counts["POST /v1/batches"] == 1  # not submitted (nor paid) twice
    run = api.get_run(db, run_id)
    assert run.assertion_results["status"].to_list() == expected(outputs(n))
    ingested = run.con.execute("SELECT count(*) FROM judge_calls WHERE batch_id = ?",
                               [batch_id]).fetchall()[0][0]
    assert ingested == n


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: connecting to it is refused at once."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


UNREACHABLE_SUITE = SUITE + """\
      - type: contains
        value: answer
"""


def test_a_refused_connection_stops_the_judging_at_once_naming_url_and_model(tmp_path):
    """No judge listens: the first requests fail without retries, the rest are not sent,
    every graded assertion is an error naming the URL and the model, the deterministic ones
    keep their verdicts, and the run finishes (today: seven attempts per request)."""
    from checkllm_batch.suites.judge import JudgeConfig

    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = JudgeConfig(model="gpt-4o-mini", base_url=url, api_key_env=KEY_ENV,
                         concurrency=2, backoff_initial=0.01, backoff_max=0.05)
    frame = outputs(40)
    with pytest.warns(UserWarning, match=f"judge unreachable: .*gpt-4o-mini at {url}"):
        run = api.evaluate(suite(tmp_path, UNREACHABLE_SUITE), frame, judge_config=config,
                           batch_rows=10)
    results = run.assertion_results.sort("case_id", "assertion_index")
    graded = results.filter(pl.col("assertion_index") == 0)
    assert set(graded["status"]) == {"error"}
    assert all(url in r and "gpt-4o-mini" in r and "connection refused" in r
               for r in graded["reason"])
    checked = results.filter(pl.col("assertion_index") == 1)
    assert checked["status"].to_list() == ["pass"] * frame.height  # kept: every output has it
    sent = run.con.execute("SELECT count(*), max(attempts) FROM judge_calls").fetchone()
    assert sent[0] <= 2 * config.concurrency and sent[1] == 1, sent  # at most what was in flight
    assert run.status == "finished"
