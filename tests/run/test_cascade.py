"""A run with a certified judge cascade (run/cascade.py, evaluate/judging/cascade.py): the
calibration set drawn and graded by every stage, thresholds certified and recorded, rows
escalated stage by stage, each result with the stage and model that decided it."""

from __future__ import annotations

import json
import math
import urllib.request

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import write_suite
from fixtures.judges import cascade_outputs, cascade_world
from judge_server import KEY_ENV, cascade_reply

import checkllm_batch as cb
from checkllm_batch.cli import main
from checkllm_batch.judge import ScriptedJudge
from checkllm_batch.store.runs import connect

SUITE = """
judge:
  cascade:
    - {model: small, confidence: repeats, repeat: 5, temperature: 0.8}
    - {model: large}
  agreement: 0.9
  risk: 0.1
  calibration: %d
defaultTest:
  assert:
    - type: llm-rubric
      value: the answer is good
"""


def frame(con, sql, *params) -> pl.DataFrame:
    return pl.from_arrow(con.sql(sql, params=list(params)).to_arrow_table())


def cascade_run(tmp_path, n=400, calibration=150, **kwargs):
    judge = ScriptedJudge(cascade_world)
    frame = pl.DataFrame(cascade_outputs(n))
    kwargs = {"db": str(tmp_path / "r.duckdb"), **kwargs}
    run = cb.evaluate(write_suite(tmp_path, SUITE % calibration), frame, judge=judge,
                      batch_rows=100, **kwargs)
    return run, judge


def test_a_cascade_escalates_what_the_cheap_judge_is_unsure_of(tmp_path):
    run, judge = cascade_run(tmp_path)
    results = frame(run.con, """
        SELECT r.case_id, r.status, r.pass, r.cascade_stage, r.confidence, r.certified
        FROM assertion_results r WHERE r.run_id = ? ORDER BY case_id""", run.run_id)
    assert results.height == 400
    assert set(results["cascade_stage"].to_list()) == {1, 2}
    assert results["certified"].all()
    first = results.filter(pl.col("cascade_stage") == 1)
    assert first["confidence"].min() >= 0.6
    [(threshold, n, bound)] = run.con.execute(
        "SELECT threshold, n, bound FROM cascade_thresholds WHERE run_id = ? AND stage = 1",
        [run.run_id]).fetchall()
    assert first["confidence"].min() >= threshold and bound >= 0.9
    calibrated = run.con.execute("SELECT count(*) FROM cascade_calibration WHERE run_id = ?",
                                 [run.run_id]).fetchall()[0][0]
    assert 100 <= calibrated <= 200
    large = {r.messages for r in judge.sent if r.model == "large"}
    assert len(large) < 400 / 2  # the strong judge graded the calibration and the unsure
    truth = results.with_columns(good=pl.Series([o["output"].startswith("good")
                                                 for o in cascade_outputs(400)]))
    kept = truth.filter(pl.col("cascade_stage") == 1)
    assert (kept["pass"] == kept["good"]).mean() >= 0.9


def test_a_judge_sample_is_refused(tmp_path):
    from checkllm_batch.errors import InputError

    with pytest.raises(InputError, match="--judge-sample judges a sample; choose one"):
        cascade_run(tmp_path, n=40, judge_sample="50%")


def test_the_ray_engine_is_refused(tmp_path):
    from checkllm_batch.errors import InputError

    pl.DataFrame(cascade_outputs(40)).write_parquet(tmp_path / "o.parquet")
    with pytest.raises(InputError, match="runs on the local engine only"):
        cb.evaluate(write_suite(tmp_path, SUITE % 30), str(tmp_path / "o.parquet"),
                    engine="ray", db=None, results=str(tmp_path / "shards"))


def test_a_stream_is_refused_it_cannot_be_read_twice(tmp_path):
    from checkllm_batch.errors import InputError

    reader = pl.DataFrame(cascade_outputs(40)).to_arrow().to_reader()
    with pytest.raises(InputError, match="needs a source of known length"):
        cb.evaluate(write_suite(tmp_path, SUITE % 30), reader, judge=ScriptedJudge(
            cascade_world), db=str(tmp_path / "r.duckdb"))


HTTP_SUITE = SUITE.replace("judge:\n", f"judge:\n  api_key_env: {KEY_ENV}\n")


@pytest.mark.parametrize("judge_server", [{"answer": cascade_reply}], indirect=True)
def test_repeats_over_http_and_the_summary(tmp_path, judge_server):
    """The repeat-agreement path against the fake server: 5 repeats of the cheap judge sent
    as 5 requests of one body, their agreement the confidence; eval prints who decided."""
    pl.DataFrame(cascade_outputs(300)).write_parquet(tmp_path / "o.parquet")
    suite = write_suite(tmp_path, HTTP_SUITE % 100)
    db = tmp_path / "r.duckdb"
    args = ["eval", str(suite), "--outputs", str(tmp_path / "o.parquet"), "--db", str(db),
            "--judge-base-url", judge_server.url, "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output  # a third of the outputs are bad
    assert "judge cascade: decided by stage 1 (small)" in result.output
    assert "certified: agreement >= 0.9 with last at risk 0.1" in result.output
    con = connect(db, create=False)
    small = con.execute("SELECT count(*), count(DISTINCT request_hash), count(DISTINCT "
                        "request) FROM judge_calls WHERE model = 'small'").fetchall()[0]
    assert small == (1500, 1500, 300)  # 5 repeats each, one body
    summary = frame(con, "SELECT * FROM cascade_summary ORDER BY stage")
    assert summary["stage"].to_list() == [1, 2]
    assert summary["decided"].sum() == 300 and summary["share"].sum() == pytest.approx(1)
    large = con.execute("SELECT count(*) FROM judge_calls WHERE model = 'large'").fetchall()[0][0]
    assert summary["calls"].to_list() == [1500, large]
    assert summary["every_case_calls"][0] == pytest.approx(300)
    confidence = con.execute("SELECT min(confidence) FROM assertion_results WHERE "
                             "cascade_stage = 1").fetchall()[0][0]
    assert confidence >= summary["thresholds"][0][0]
    dry = CliRunner().invoke(main, args[:-1] + ["--dry-run"])
    assert "judge cascade:" in dry.output and "the calibration of run" in dry.output, dry.output


LABELLED = """
judge:
  cascade:
    - {model: small, confidence: repeats, repeat: 5, temperature: 0.8}
  reference: human
  agreement: 0.9
  risk: 0.1
  calibration: 150
  abstain: %s
defaultTest:
  assert:
    - type: llm-rubric
      value: the answer is good
"""


@pytest.mark.parametrize("abstain", ["person", "last"])
def test_a_label_reference_abstains_on_what_no_stage_is_sure_of(tmp_path, abstain):
    """One stage against people's labels (the dataset's `human` column): what it is not sure
    of is abstained (neither pass nor fail, counted apart), or with `abstain: last` given
    its verdict, not certified."""
    rows = [{**r, "human": "pass" if r["output"].startswith("good") else "fail"}
            for r in cascade_outputs(400)]
    run = cb.evaluate(write_suite(tmp_path, LABELLED % abstain), pl.DataFrame(rows),
                      judge=ScriptedJudge(cascade_world), db=str(tmp_path / "r.duckdb"))
    results = frame(run.con, "SELECT status, cascade_stage, certified, confidence FROM "
                             "assertion_results WHERE run_id = ?", run.run_id)
    [(threshold, bound)] = run.con.execute("SELECT threshold, bound FROM cascade_thresholds"
                                           ).fetchall()
    assert threshold is not None and bound >= 0.9
    unsure = results.filter(pl.col("confidence") < threshold)
    assert unsure.height > 20
    if abstain == "person":
        assert set(unsure["status"]) == {"abstain"} and unsure["cascade_stage"].is_null().all()
        tests = frame(run.con, "SELECT status FROM test_results WHERE run_id = ?", run.run_id)
        assert (tests["status"] == "abstain").sum() == unsure.height
        summary = run.summary()
        assert summary["abstain"].sum() == unsure.height
        assert summary["pass"].sum() + summary["fail"].sum() == 400 - unsure.height
    else:
        assert set(unsure["status"]) <= {"pass", "fail"} and not unsure["certified"].any()
    sure = results.filter(pl.col("confidence") >= threshold)
    assert sure["certified"].all() and (sure["cascade_stage"] == 1).all()


REAL = """
judge:
  base_url: %s
  api_key_env: CHECKLLM_REAL_JUDGE_KEY
  structured: true
  max_tokens: 128
  cascade:
    - {model: smol-cheap, confidence: logprobs}
    - {model: smol-strong}
  agreement: 0.6
  risk: 0.3
  calibration: 16
defaultTest:
  assert:
    - type: llm-rubric
      value: the answer names a city
"""


@pytest.mark.xdist_group("llama_server")
def test_logprob_confidence_from_a_real_llama_server(tmp_path, smol_server):
    """SmolLM2 behind llama.cpp's server grades with logprobs asked: each stage-1 verdict's
    confidence is the probability of its JSON `pass` token over true and false, as read here
    by hand from the server's own answer to the same body."""
    outputs = [f"{city} is {'a city' if i % 2 else 'the answer'} ✓" for i, city in
               enumerate(["Paris", "Lyon", "Nice", "Rome", "Oslo", "Lima", "Bern", "Kyiv"] * 3)]
    run = cb.evaluate(write_suite(tmp_path, REAL % smol_server.url),
                      pl.DataFrame({"output": outputs}), db=str(tmp_path / "r.duckdb"))
    first = frame(run.con, """
        SELECT r.case_id, r.confidence, r.cascade_stage, j.request, j.logprobs
        FROM assertion_results r JOIN cases c USING (run_id, case_id)
        JOIN judge_calls j ON j.model = 'smol-cheap' AND j.status = 'ok'
             AND contains(j.request::VARCHAR, c.output)
        WHERE r.run_id = ? ORDER BY r.case_id""", run.run_id)
    assert first.height >= 20 and first["logprobs"].is_not_null().all()
    assert first["confidence"].is_not_null().all()
    assert first["confidence"].min() >= 0.5 and first["confidence"].max() <= 1.0
    for confidence, stored in first.select("confidence", "logprobs").rows():
        assert confidence == pytest.approx(_by_hand(json.loads(stored)), abs=1e-9)
    body = json.loads(first["request"][0])  # the server's own answer has that shape
    raw = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"{smol_server.url}/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}), timeout=120).read())
    fresh = raw["choices"][0]["logprobs"]["content"]  # (its text may differ: slots batch)
    assert 0.5 <= _by_hand(fresh) <= 1.0
    thresholds = frame(run.con, "SELECT stage, threshold FROM cascade_thresholds ORDER BY stage")
    assert thresholds["stage"].to_list() == [1, 2]


def _by_hand(tokens: list[dict]) -> float:
    """The `pass` value token's probability over the true / false alternatives, read plainly
    from a reply's logprobs (the token after `pass` and `":`)."""
    at = next(i for i in range(2, len(tokens)) if tokens[i - 1]["token"].endswith('":')
              and tokens[i - 2]["token"].endswith("pass"))
    weight = {"true": 0.0, "false": 0.0}
    seen = set()
    for alt in [tokens[at], *tokens[at]["top_logprobs"]]:
        word = alt["token"].strip().lower()
        if word in weight and alt["token"] not in seen:
            seen.add(alt["token"])
            weight[word] += math.exp(alt["logprob"])
    return weight[tokens[at]["token"].strip().lower()] / sum(weight.values())
