"""Juries and repeats (judge `models`, `vote`, `repeat`): the vote, each juror's verdict
kept, self-consistency, the cache, and the agreement views against statsmodels'
fleiss_kappa and scikit-learn's cohen_kappa_score."""

from __future__ import annotations

import json
import math
import random
import threading
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from checkllm_batch import api
from checkllm_batch.cli import main
from checkllm_batch.errors import ConfigError, Interrupted
from checkllm_batch.judge import ScriptedJudge
from checkllm_batch.judge.protocol import chat, embedding
from checkllm_batch.suites.judge import JudgeConfig


def _output(request) -> str:
    text = "\n".join(c for _, c in request.messages)
    return text.split("<Output>")[-1].split("</Output>")[0]


def _reply(passed: bool, score: float, why: str) -> str:
    return json.dumps({"pass": passed, "score": score, "reason": why})


def majority_judge(request) -> str:
    """Jurors `a` and `b` right (an output naming Paris passes), `wrong` always wrong."""
    good = "Paris" in _output(request)
    good = (not good) if request.model == "wrong" else good
    return _reply(good, float(good), f"{request.model}: {good}")


def evaluate(tmp_path: Path, judge_block: dict, outputs: list, answer, *, asserts=None,
             db: str = ":memory:", **kwargs):
    suite = {"judge": judge_block, "tests": [{
        "description": "t", "prompt": "capital?",
        "assert": asserts or [{"type": "llm-rubric", "value": "names the capital"}]}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    frame = pl.DataFrame({"test_id": ["t"] * len(outputs), "output": outputs},
                         schema={"test_id": pl.String, "output": pl.String})
    judge = ScriptedJudge(answer)
    return api.evaluate(tmp_path / "suite.yaml", frame, judge=judge, db=db, **kwargs), judge


def test_a_jury_of_three_with_one_always_wrong_gives_the_majority(tmp_path):
    outputs = ["Paris", "Lyon", "ünïcode Paris", "", "Rome", None]
    run, judge = evaluate(tmp_path, {"models": ["a", "b", "wrong"]}, outputs, majority_judge)
    results = run.con.sql("SELECT case_id, status, reason FROM assertion_results "
                          "ORDER BY case_id").pl()
    assert results["status"].to_list() == ["pass", "fail", "pass", "fail", "fail", "fail"]
    assert results["reason"][0].startswith("2 of 3 jurors passed (majority): a: True")
    assert len(judge.sent) == 3 * 5  # the null output is never sent
    assert Counter(r.model for r in judge.sent) == {"a": 5, "b": 5, "wrong": 5}
    jurors = run.con.sql("SELECT juror, case_id, pass, verdict FROM juror_verdicts").pl()
    odd = jurors.filter(pl.col("pass") != pl.col("verdict"))
    assert odd["juror"].unique().to_list() == ["wrong"] and odd.height == 5
    summary = dict(run.con.sql("SELECT juror, with_verdict FROM juror_summary").fetchall())
    assert summary == {"a": 1.0, "b": 1.0, "wrong": 0.0}


def test_one_model_keeps_todays_requests_and_stores_no_votes(tmp_path):
    run, judge = evaluate(tmp_path, {"model": "gpt-4o-mini"}, ["Paris", "Lyon"],
                          majority_judge)
    assert run.con.sql("SELECT count(*) FROM assertion_results WHERE votes IS NOT NULL"
                       ).fetchall() == [(0,)]
    assert run.con.sql("SELECT count(*) FROM judge_votes").fetchall() == [(0,)]
    assert {r.repeat for r in judge.sent} == {0}


def test_request_hashes_are_todays_and_each_repeat_its_own():
    # computed with the code before juries and repeats: one model's cache keys stay valid
    first = chat("gpt-4o-mini", [("user", "Is Paris the capital? ünï")], temperature=0.0,
                 max_tokens=1024)
    assert first.hash == "37aa9c47977f88bf1f81e0dda5e37b6d3cd9f744003aba51e7ad768ae9066c79"
    assert embedding("text-embedding-3-large", "Paris").hash == \
        "d95f70bbfbb9e6b60ab87e2fe474f3800bdda5c77f7f25baf1ed76593907e2fe"
    again = [chat("gpt-4o-mini", [("user", "Is Paris the capital? ünï")], repeat=r,
                  temperature=0.0, max_tokens=1024) for r in range(3)]
    assert again[0].hash == first.hash and len({r.hash for r in again}) == 3
    assert {json.dumps(r.body()) for r in again} == {json.dumps(first.body())}  # same body sent


def _verdicts_judge(request) -> str:
    """The output says each juror's score (`a=0.9 b=err c=0`); a score passes from 0.5."""
    said = dict(part.split("=") for part in _output(request).split() if "=" in part)
    value = said.get(request.model, "err")
    if value == "err":
        return "not json"
    score = float(value)
    return _reply(score >= 0.5, score, f"{request.model} scored {value}")


VOTE_CASES = [  # jurors' scores, then the status under majority, all, any, mean
    ("a=1 b=1 c=0", ("pass", "fail", "pass", "pass")),
    ("a=1 b=0 c=0", ("fail", "fail", "pass", "fail")),
    ("a=1 b=1 c=1", ("pass", "pass", "pass", "pass")),
    ("a=0 b=0 c=0", ("fail", "fail", "fail", "fail")),
    ("a=1 b=err c=1", ("pass", "error", "pass", "pass")),
    ("a=0 b=err c=0", ("fail", "fail", "error", "fail")),
    ("a=1 b=err c=0", ("fail", "fail", "pass", "pass")),  # a tie of the jurors left fails
    ("a=err b=err c=err", ("error", "error", "error", "error")),
    ("a=0.6 b=0 c=0.6", ("pass", "fail", "pass", "fail")),  # mean 0.4
    ("a=0.5 b=0.5 c=0.4 ünïcode", ("pass", "fail", "pass", "fail")),  # mean 0.467
    ("", ("error", "error", "error", "error")),  # no scores: every juror errs
]


@pytest.mark.parametrize("vote", ["majority", "all", "any", "mean"])
def test_vote_semantics(tmp_path, vote):
    outputs = [o for o, _ in VOTE_CASES] + [None]
    run, _ = evaluate(tmp_path, {"models": ["a", "b", "c"], "vote": vote}, outputs,
                      _verdicts_judge)
    statuses = run.con.sql("SELECT status FROM assertion_results ORDER BY case_id").pl()
    expected = [e[["majority", "all", "any", "mean"].index(vote)] for _, e in VOTE_CASES]
    assert statuses["status"].to_list() == [*expected, "fail"]  # a null output fails


class Alternating:
    """A judge whose n-th answer to the same prompt passes when n is even (0, 2, ...): the
    repeats of a request flip, whatever order the threads send them in."""

    def __init__(self):
        self.seen: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, request) -> str:
        with self.lock:
            n = self.seen[(request.model, request.messages)]
            self.seen[(request.model, request.messages)] += 1
        return _reply(n % 2 == 0, float(n % 2 == 0), f"answer {n}")


REPEAT_CASES = [  # repeat, status, score, consistency
    (1, "pass", 1.0, 1.0),
    (2, "fail", 0.5, 0.5),  # a tie fails: a coin flip
    (3, "pass", 2 / 3, 2 / 3),
    (4, "fail", 0.5, 0.5),
    (5, "pass", 0.6, 0.6),
]


@pytest.mark.parametrize("repeat, status, score, consistency", REPEAT_CASES)
def test_repeats_take_the_majority_and_show_self_consistency(tmp_path, repeat, status, score,
                                                             consistency):
    outputs = ["Paris", "ünï", ""]
    run, judge = evaluate(tmp_path, {"model": "m", "repeat": repeat, "temperature": 0.7},
                          outputs, Alternating())
    rows = run.con.sql("SELECT status, score FROM assertion_results ORDER BY case_id").fetchall()
    assert [r[0] for r in rows] == [status] * 3
    assert all(math.isclose(r[1], score) for r in rows)
    assert len(judge.sent) == 3 * repeat
    assert {dict(r.params)["temperature"] for r in judge.sent} == {0.7}
    assert len({r.hash for r in judge.sent}) == 3 * repeat  # each repeat cached apart
    if repeat > 1:
        kept = run.con.sql("SELECT pass, consistency, repeats FROM juror_verdicts").fetchall()
        assert {(p, round(c, 9), n) for p, c, n in kept} == \
            {(status == "pass", round(consistency, 9), repeat)}
        split = run.con.sql("SELECT split, consistency FROM juror_summary").fetchall()
        assert split[0][0] == 3 and math.isclose(split[0][1], consistency)


def test_a_jury_with_repeats_grades_each_juror_n_times(tmp_path):
    run, judge = evaluate(tmp_path, {"models": ["a", "b", "wrong"], "repeat": 2},
                          ["Paris", "Lyon"], majority_judge)
    assert Counter((r.model, r.repeat) for r in judge.sent) == {
        (m, r): 2 for m in ("a", "b", "wrong") for r in (0, 1)}
    assert run.con.sql("SELECT status FROM assertion_results ORDER BY case_id"
                       ).fetchall() == [("pass",), ("fail",)]
    assert run.con.sql("SELECT count(*) FROM judge_votes").fetchall() == [(12,)]
    # a not- assertion's gradings are kept as it reads them
    run, _ = evaluate(tmp_path, {"models": ["a", "b", "wrong"]}, ["Paris"], majority_judge,
                      asserts=[{"type": "not-llm-rubric", "value": "names the capital"}])
    kept = dict(run.con.sql("SELECT juror, pass FROM juror_verdicts").fetchall())
    assert kept == {"a": False, "b": False, "wrong": True}
    assert run.con.sql("SELECT status FROM assertion_results").fetchall() == [("fail",)]


def test_a_rerun_sends_nothing_and_a_resumed_run_asks_nothing_twice(tmp_path):
    db = str(tmp_path / "r.duckdb")
    block = {"models": ["a", "b", "wrong"], "repeat": 2}
    outputs = [f"Paris {i}" if i % 2 else f"Lyon {i}" for i in range(8)]
    first, judge = evaluate(tmp_path, block, outputs, majority_judge, db=db, batch_rows=2)
    expected = first.con.sql("SELECT case_id, status, votes FROM assertion_results "
                             "ORDER BY case_id").fetchall()
    first.con.close()
    assert len(judge.sent) == 8 * 6
    again, judge = evaluate(tmp_path, block, outputs, majority_judge, db=db, batch_rows=2)
    assert judge.sent == []
    again.con.close()

    db = str(tmp_path / "resumed.duckdb")
    calls = []

    def stops(request):  # interrupts the run at the 20th call (in batch 2 of 4)
        calls.append(request.hash)
        if len(calls) == 20:
            raise KeyboardInterrupt
        return majority_judge(request)

    with pytest.raises(Interrupted) as stopped:
        evaluate(tmp_path, block, outputs, stops, db=db, batch_rows=2, judge_config=None)
    import duckdb

    con = duckdb.connect(db)
    answered = {h for (h,) in con.sql("SELECT request_hash FROM judge_calls "
                                      "WHERE status = 'ok'").fetchall()}
    con.close()
    resumed, judge = evaluate(tmp_path, block, outputs, majority_judge, db=db, batch_rows=2,
                              resume=stopped.value.run_id)
    sent = [r.hash for r in judge.sent]
    assert answered and not answered & set(sent) and len(sent) == len(set(sent))
    assert len(answered | set(sent)) == 8 * 6
    assert resumed.con.sql("SELECT case_id, status, votes FROM assertion_results "
                           "ORDER BY case_id").fetchall() == expected


def _random_judge(seed: int, error_rate: float = 0.0, constant: bool | None = None):
    """Each juror's verdict on each output drawn at random (seeded by juror and output): the
    output's true verdict, kept by `a` and `b` 4 times in 5 and by `c` 3 in 5."""

    def answer(request) -> str:
        truth = random.Random(f"{seed}:{_output(request)}").random() < 0.5
        draw = random.Random(f"{seed}:{request.model}:{_output(request)}")
        if draw.random() < error_rate:
            return "not json"
        good = truth == (draw.random() < (0.6 if request.model == "c" else 0.8))
        good = constant if constant is not None else good
        return _reply(good, float(good), "drawn")

    return answer


KAPPA_CASES = [  # seed, error rate, every verdict the same (None: drawn)
    (1, 0.0, None),
    (2, 0.0, None),
    (3, 0.15, None),  # errors: Fleiss over the results every juror graded, Cohen per pair
    (4, 0.0, True),  # one class only: kappa undefined (NULL, nan in the references)
]


@pytest.mark.parametrize("seed, error_rate, constant", KAPPA_CASES)
def test_agreement_views_equal_statsmodels_and_scikit_learn(tmp_path, seed, error_rate,
                                                            constant):
    outputs = [f"output {i} ünï" for i in range(60)]
    run, _ = evaluate(tmp_path, {"models": ["a", "b", "c"]}, outputs,
                      _random_judge(seed, error_rate, constant))
    verdicts = run.con.sql("SELECT case_id, juror, pass FROM juror_verdicts").pl().pivot(
        "juror", index="case_id", values="pass").sort("case_id")
    complete = verdicts.drop_nulls().select("a", "b", "c").to_numpy().astype(int)
    table, _ = aggregate_raters(complete, n_cat=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        reference = fleiss_kappa(table, method="fleiss")
    cases, skipped, kappa = run.con.sql(
        "SELECT cases, skipped, kappa FROM jury_agreement").fetchall()[0]
    assert (cases, skipped) == (len(complete), verdicts.height - len(complete))
    assert _same(kappa, reference) and (constant or kappa is not None)
    pairs = {(a, b): (n, k) for a, b, n, k in run.con.sql(
        "SELECT juror_a, juror_b, cases, kappa FROM juror_pairs").fetchall()}
    assert set(pairs) == {("a", "b"), ("a", "c"), ("b", "c")}
    for (x, y), (n, k) in pairs.items():
        both = verdicts.select(x, y).drop_nulls()
        with warnings.catch_warnings():  # one class only: scikit-learn warns, gives nan
            warnings.simplefilter("ignore")
            reference = cohen_kappa_score(both[x].to_list(), both[y].to_list())
        assert n == both.height and _same(k, reference) and (constant or k is not None)


def _same(ours, reference) -> bool:
    if reference is None or (isinstance(reference, float) and math.isnan(reference)):
        return ours is None
    return ours is not None and math.isclose(ours, reference, abs_tol=1e-12)


CONFIG_ERRORS = [  # judge block, what the error says
    ({"models": ["a", "b"], "vote": "majorty"},
     'judge: vote must be one of majority, all, any, mean (did you mean "majority"?)'),
    ({"models": []}, 'judge: models is empty'),
    ({"model": "x", "models": ["a", "b"]},
     'judge: give model or models, not both (did you mean "models: [x, a, b]"?)'),
    ({"models": ["a", "a"]}, "judge: models names a juror twice"),
    ({"models": ["a"], "repeat": 0}, "judge: repeat must be >= 1, got 0"),
    ({"model": "x", "repeat": 1.5}, "judge: repeat must be"),
    ({"models": "a, b"}, "judge: models must be"),
    ({"models": ["ünï", "b"], "vote": "avg"}, "judge: vote must be one of"),
]


@pytest.mark.parametrize("block, said", CONFIG_ERRORS)
def test_bad_jury_settings_are_parse_errors(block, said):
    with pytest.raises(ConfigError) as e:
        JudgeConfig.from_sources(block)
    assert said in str(e.value)


def test_the_command_line_names_a_jury_and_the_dry_run_counts_every_grading(tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"judge": {"model": "x"}, "tests": [{
        "description": "t", "assert": [{"type": "llm-rubric", "value": "v"}]}]}))
    (tmp_path / "o.csv").write_text("test_id,output\nt,Paris\nt,Lyon\nt,ünï\n")
    base = ["eval", str(tmp_path / "s.yaml"), "--outputs", str(tmp_path / "o.csv"),
            "--db", str(tmp_path / "r.duckdb"), "--dry-run"]
    runner = CliRunner()
    one = runner.invoke(main, base)
    assert "judge x (online): 3 graded assertions, 3 unique requests" in one.output
    jury = runner.invoke(main, [*base, "--judge-model", "a", "--judge-model", "b",
                                "--judge-repeat", "2"])
    assert "judge a, b (online): 3 graded assertions, 12 unique requests" in jury.output
    assert "2 juror(s) x 2 repeat(s) = 4 gradings" in jury.output
    listed = runner.invoke(main, [*base, "--judge-models", "a,b,c", "--judge-vote", "mean"])
    assert "9 to send" in listed.output and "(vote: mean)" in listed.output
    typo = runner.invoke(main, [*base, "--judge-models", "a,b", "--judge-vote", "anny"])
    assert typo.exit_code == 2 and 'did you mean "any"?' in typo.output
    both = runner.invoke(main, [*base, "--judge-models", "a,b", "--judge-model", "c"])
    assert both.exit_code == 2 and "not both" in both.output


def _picker(request) -> str:
    """select-best: `a` and `b` pick the output naming Paris, `wrong` another."""
    texts = "\n".join(c for _, c in request.messages).split('<Text index="')[1:]
    best = next(i for i, t in enumerate(texts) if "Paris" in t)
    return str((best + 1) % len(texts) if request.model == "wrong" else best)


def test_types_decided_across_outputs_grade_by_jury(tmp_path):
    run, judge = evaluate(tmp_path, {"models": ["a", "b", "wrong"]},
                          ["Lyon", "Paris", "Rome ünï"], _picker,
                          asserts=[{"type": "select-best", "value": "correct"}])
    rows = run.con.sql("SELECT status, reason FROM assertion_results ORDER BY case_id").fetchall()
    assert [s for s, _ in rows] == ["fail", "pass", "fail"]
    assert rows[1][1].startswith("2 of 3 jurors passed (majority)")
    assert len(judge.sent) == 3  # one request per juror for the test's outputs
    odd = run.con.sql("SELECT DISTINCT juror FROM juror_verdicts WHERE pass <> verdict")
    assert odd.fetchall() == [("wrong",)]
