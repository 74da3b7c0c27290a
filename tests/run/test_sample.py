"""Judging a sample (issue 35): --judge-sample's parsing, its membership (the same at any
batch size and on resume), skipped rows and tests, the finite-population interval against
statsmodels' Wilson interval and its coverage over 100 seeded samples, ~2,000 requests for
2 % of 100k cases through the fake HTTP judge, the dry run with and without the sample."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from click.testing import CliRunner
from judge_server import KEY_ENV, graded_outputs
from statsmodels.stats.proportion import proportion_confint

import checkllm_batch as cb
from checkllm_batch.cli import main
from checkllm_batch.errors import InputError
from checkllm_batch.judge import ScriptedJudge
from checkllm_batch.run.sample import JudgeSample
from checkllm_batch.store.views import wilson_fpc_sql

SUITE = f"""judge:
  model: gpt-4o-mini
  api_key_env: {KEY_ENV}
defaultTest:
  assert:
    - type: llm-rubric
      value: the answer is good
    - type: icontains
      value: answer
"""

# (given, source rows, rate or the error's words)
PARSE = [
    ("2%", None, 0.02), ("0.02", None, 0.02), (0.02, None, 0.02), ("100%", None, 1.0),
    ("2000", 100_000, 0.02), (2000, 100_000, 0.02), ("500", 100, 1.0), ("1", 4, 0.25),
    ("2000", None, "a count needs a source of known length"),
    ("0", 100, "expected a share"), ("0%", None, "expected a share"),
    ("150%", None, "expected a share"), ("1.5", None, "expected a share"),
    ("-3", 10, "expected a share"), ("deux", None, "expected a share"),
    ("", None, "expected a share"), ("½", None, "expected a share"),
]


@pytest.mark.parametrize("given, total, want", PARSE)
def test_judge_sample_values(given, total, want):
    if isinstance(want, str):
        with pytest.raises(InputError, match=want):
            JudgeSample.parse(given, total)
    else:
        assert JudgeSample.parse(given, total).rate == pytest.approx(want)


def _cases(n: int, providers=("p", "q"), prompts=("a", "b")) -> pl.DataFrame:
    """A frame with the columns membership reads: strata of providers x prompts."""
    return pl.DataFrame({"case_id": np.arange(n, dtype=np.int64),
                         "provider": [providers[i % len(providers)] for i in range(n)],
                         "prompt": [prompts[i // 7 % len(prompts)] for i in range(n)],
                         "test_index": pl.Series([0] * n, dtype=pl.Int32)})


def test_membership_is_per_case_not_per_batch():
    """A case's membership depends on it alone: any slice of the cases gives the same
    verdicts as the whole, and each stratum gets its share."""
    cases, sample = _cases(50_000), JudgeSample(0.1, seed=3)
    whole = sample.members(cases)
    sliced = pl.concat([sample.members(cases.slice(i, 777)) for i in range(0, 50_000, 777)])
    assert whole.equals(sliced)
    shares = cases.with_columns(whole).group_by("provider", "prompt").agg(pl.col("judged").mean())
    assert shares["judged"].is_between(0.09, 0.11).all()
    assert not whole.equals(JudgeSample(0.1, seed=4).members(cases))  # the seed matters


@pytest.mark.parametrize("passed, n, population", [
    (7, 10, 100), (1, 3, 1000), (0, 20, 50), (20, 20, 25), (1500, 2000, 100_000),
    (49_000, 50_000, 100_000), (3, 5, 6)])
def test_fpc_interval_is_wilson_at_the_effective_size(passed, n, population):
    """Wilson's interval (statsmodels) at n (N - 1) / (N - n) cases, the same share."""
    low, high = wilson_fpc_sql(str(passed), str(n), str(population))
    got = duckdb.sql(f"SELECT {low}, {high}").fetchall()[0]
    effective = n * (population - 1) / (population - n)
    want = proportion_confint(passed * effective / n, effective, method="wilson")
    assert got == pytest.approx(want, abs=1e-12)


def test_fpc_interval_of_a_census_is_the_rate():
    low, high = wilson_fpc_sql("30", "40", "40")
    assert duckdb.sql(f"SELECT {low}, {high}").fetchall()[0] == (0.75, 0.75)


@pytest.mark.parametrize("rate", [0.02, 0.5])
def test_interval_covers_the_full_runs_rate_in_100_seeded_samples(rate):
    """A population of 100,000 cases with 83,000 passing, in 4 strata: the interval of each
    seeded sample's judged cases covers 0.83 at least 93 times in 100 (95 % nominal); at a
    sample of half the run the correction narrows it by about sqrt(1/2) and it still
    covers."""
    cases = _cases(100_000)
    passing = np.zeros(100_000, bool)
    passing[np.random.default_rng(1).choice(100_000, 83_000, replace=False)] = True
    covered, widths = 0, []
    for seed in range(100):
        judged = JudgeSample(rate, seed=seed).members(cases).to_numpy()
        n, passed = int(judged.sum()), int(passing[judged].sum())
        low, high = duckdb.sql("SELECT {}, {}".format(
            *wilson_fpc_sql(str(passed), str(n), "100000"))).fetchall()[0]
        covered += low <= 0.83 <= high
        plain = proportion_confint(passed, n, method="wilson")
        widths.append((high - low) / (plain[1] - plain[0]))
    assert covered >= 93
    assert np.mean(widths) == pytest.approx(np.sqrt(1 - rate), rel=0.02)


def _scripted(request) -> str:
    text = "\n".join(c for _, c in request.messages)
    good = "good" in text.split("<Output>")[-1].split("</Output>")[0]
    return '{"pass": %s, "score": %d}' % (("true", 1) if good else ("false", 0))


def _run(tmp_path, frame, *, batch_rows=100_000, resume=None, db="r.duckdb", **kw):
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    judge = ScriptedJudge(_scripted)
    run = cb.evaluate(path, frame, db=tmp_path / db, batch_rows=batch_rows, judge=judge,
                      judge_sample=kw.pop("sample", "2%"), resume=resume, **kw)
    return run, judge


def _judged(run) -> list[int]:
    return run.con.sql("SELECT case_id FROM assertion_results WHERE type = 'llm-rubric' "
                       "AND status <> 'skipped' ORDER BY 1").fetchnumpy()["case_id"].tolist()


def test_same_sample_at_any_batch_size(tmp_path):
    frame = graded_outputs(20_000).with_columns(
        provider=pl.Series(["p", "q", "r"] * 6666 + ["p", "q"]))
    big, judge_big = _run(tmp_path, frame, db="big.duckdb")
    small, judge_small = _run(tmp_path, frame, batch_rows=1000, db="small.duckdb")
    assert _judged(big) == _judged(small)
    assert len(judge_big.sent) == len(judge_small.sent) == len(_judged(big))
    assert 400 - 4 * 20 < len(_judged(big)) < 400 + 4 * 20  # 2 % of 20,000, ±4 sd
    statuses = big.con.sql("SELECT a.type, a.status, t.status, a.reason FROM "
                           "assertion_results a JOIN test_results t USING (run_id, case_id) "
                           "WHERE a.case_id NOT IN (SELECT unnest(?))",
                           params=[_judged(big)]).fetchall()
    assert set(statuses) == {("llm-rubric", "skipped", "skipped", "not in the judge sample"),
                             ("icontains", "pass", "skipped", None)}  # every row checked


def test_same_sample_after_resume(tmp_path):
    """A run stopped after two batches, resumed without naming the sample: the recorded one
    judges the rest, and the whole is the uninterrupted run's sample."""
    frame = graded_outputs(12_000)
    whole, _ = _run(tmp_path, frame, batch_rows=2000, db="whole.duckdb")

    def stopping():
        for i, batch in enumerate(frame.to_arrow().to_batches(2000)):
            if i == 3:
                raise KeyboardInterrupt
            yield batch

    reader = pa.RecordBatchReader.from_batches(frame.to_arrow().schema, stopping())
    with pytest.raises(BaseException):
        _run(tmp_path, reader, batch_rows=2000, db="cut.duckdb")
    con = duckdb.connect(str(tmp_path / "cut.duckdb"))
    [(cut, status)] = con.sql("SELECT run_id, status FROM runs").fetchall()
    con.close()
    assert status in ("interrupted", "failed")
    with pytest.raises(InputError, match="began with --judge-sample 2%"):
        _run(tmp_path, frame, db="cut.duckdb", resume=cut, sample="5%")
    resumed, _ = _run(tmp_path, frame, batch_rows=2000, db="cut.duckdb", resume=cut,
                      sample=None)
    assert _judged(resumed) == _judged(whole)


def test_rates_count_judged_cases_only(tmp_path):
    frame = graded_outputs(3000)  # every third output is bad: 2/3 pass
    run, _ = _run(tmp_path, frame, sample="10%")
    [row] = cb.Results(run.con).pass_rates(run.run_id).to_dicts()
    judged = len(_judged(run))
    assert row["skipped"] == 3000 - judged and row["passed"] + row["failed"] == judged
    assert row["pass_rate"] == pytest.approx(row["passed"] / judged)
    assert row["pass_rate_low"] < 2 / 3 < row["pass_rate_high"]
    summary = run.summary().row(0, named=True)
    assert summary["skipped"] == 3000 - judged and summary["pass_rate"] == \
        pytest.approx(row["passed"] / judged, abs=1e-4)
    by_type = cb.Results(run.con).pass_rates(run.run_id, by="type")
    icontains = by_type.filter(type="icontains").row(0, named=True)
    assert (icontains["results"], icontains["skipped"]) == (3000, 0)  # checked on every row


@pytest.mark.parametrize("judge_server", [{}], indirect=True)
def test_two_percent_of_100k_cases_sends_about_2000_requests(tmp_path, judge_server):
    """Through HTTP to the fake judge: 100,000 distinct outputs, 2 % judged."""
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    frame = graded_outputs(100_000).with_columns(
        provider=pl.Series(["p", "q"] * 50_000), prompt=pl.Series(["a"] * 100_000))
    run = cb.evaluate(path, frame, db=tmp_path / "r.duckdb", judge_sample="2%",
                      judge_config=judge_server.config(concurrency=16))
    sent = judge_server.counts["POST /v1/chat/completions"]
    assert 2000 - 4 * 45 < sent < 2000 + 4 * 45  # sd of the count: sqrt(100k * .02 * .98)
    assert sent == len(_judged(run))
    [total] = run.con.sql("SELECT count(*) FROM assertion_results WHERE type = 'icontains' "
                          "AND status = 'pass'").fetchall()[0]
    assert total == 100_000


def test_dry_run_shows_calls_with_and_without_the_sample(tmp_path):
    path, outputs = tmp_path / "suite.yaml", tmp_path / "out.jsonl"
    path.write_text(SUITE)
    graded_outputs(5000).write_ndjson(outputs)
    out = CliRunner().invoke(main, ["eval", str(path), "--outputs", str(outputs), "--db",
                                    str(tmp_path / "r.duckdb"), "--dry-run",
                                    "--judge-sample", "10%"])
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if "unique requests" in line]
    assert "5000 unique requests" in lines[0]
    sampled = int(lines[1].split("unique requests")[0].split(",")[-1])
    assert lines[1].startswith("with --judge-sample 10%") and 400 < sampled < 600
    assert out.output.count("estimated:") == 2


@pytest.mark.parametrize("judge_server", [{}], indirect=True)
def test_a_failing_check_outside_the_sample_fails_the_run(tmp_path, judge_server):
    """Every judged case passes, yet a deterministic check failed on a case outside the
    sample (its test skipped): the exit code is 1, as without a sample."""
    path, outputs = tmp_path / "suite.yaml", tmp_path / "out.jsonl"
    path.write_text(SUITE.replace("api_key_env", f"base_url: {judge_server.url}\n  api_key_env"))
    pl.DataFrame({"output": ["good answer"] * 40 + ["good"]}).write_ndjson(outputs)
    db = str(tmp_path / "r.duckdb")
    args = ["eval", str(path), "--outputs", str(outputs), "--db", db, "--judge-sample",
            "25%", "--judge-sample-seed", "1", "--no-progress"]  # case 40 is not in it
    out = CliRunner().invoke(main, args)
    res = cb.Results(db)
    rows = dict(res.query("SELECT status, count(*) FROM test_results GROUP BY ALL").rows())
    last = res.query("SELECT status FROM test_results WHERE case_id = 40").item()
    assert last == "skipped" and rows.get("fail", 0) == 0 and "pass" in rows
    assert out.exit_code == 1, out.output
    assert "not in the judge sample" in out.output
    pl.DataFrame({"output": ["good answer"] * 41}).write_ndjson(outputs)
    fine = CliRunner().invoke(main, [*args[:5], str(tmp_path / "fine.duckdb"), *args[6:]])
    assert "passed" in fine.output
    assert fine.exit_code == 0, fine.output


def test_a_jury_grades_the_sample_only(tmp_path):
    """Each juror grades each sampled case; no juror sees the others."""
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.replace("  model: gpt-4o-mini", "  models: [a, b, c]"))
    judge = ScriptedJudge(_scripted)
    run = cb.evaluate(path, graded_outputs(2000), db=tmp_path / "r.duckdb", judge=judge,
                      judge_sample="5%")
    judged = _judged(run)
    assert 0 < len(judged) < 200 and len(judge.sent) == 3 * len(judged)
    jurors = run.con.sql("SELECT DISTINCT judge_model FROM graded_verdicts WHERE status <> "
                         "'skipped' ORDER BY 1").fetchnumpy()["judge_model"].tolist()
    assert jurors == ["a", "b", "c", "jury (majority): a, b, c"]
