"""The judge against people's labels (issue 35): judge_agreement's counts, kappa and its
interval against scikit-learn's `cohen_kappa_score` / `confusion_matrix` and statsmodels'
`cohens_kappa`, on tables of cases run through the engine with a scripted judge; the label
spellings; the Results method, the CLI reader and the report section."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from judge_server import KEY_ENV
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa

import checkllm_batch as cb
from checkllm_batch.cli import main
from checkllm_batch.judge import ScriptedJudge

SUITE = """judge:
  model: judge-a
defaultTest:
  assert:
    - type: llm-rubric
      value: the answer is right
      metric: right
    - type: icontains
      value: answer
"""


def verdict_judge(request) -> str:
    """Passes an output starting 'P', fails one starting 'F', garbles (an error) otherwise;
    the score in the output after '@' when there is one."""
    text = "\n".join(c for _, c in request.messages)
    output = text.split("<Output>")[-1].split("</Output>")[0].strip()
    score = output.split("@")[1].split()[0] if "@" in output else None
    if output.startswith("P"):
        return json.dumps({"pass": True, "score": float(score or 1), "reason": "looks right"})
    if output.startswith("F"):
        return json.dumps({"pass": False, "score": float(score or 0), "reason": "looks wrong"})
    return "no verdict here"


def _evaluate(tmp_path, rows: list[dict], suite: str = SUITE) -> cb.Run:
    path = tmp_path / "suite.yaml"
    path.write_text(suite)
    frame = pl.DataFrame(rows, infer_schema_length=None)
    return cb.evaluate(path, frame, db=tmp_path / "r.duckdb", judge=ScriptedJudge(verdict_judge))


def _rows(judge: list[str], human: list, provider: str = "p") -> list[dict]:
    """One case per (judge verdict: P / F / E for an error, the person's label)."""
    return [{"output": f"{j} answer {i} ✓", "human": h, "provider": provider}
            for i, (j, h) in enumerate(zip(judge, human))]


def _expected(judge: list[str], human: list[bool | None]) -> dict:
    """The figures scikit-learn and statsmodels give on the cases with a label and a
    verdict (errors left out)."""
    pairs = [(h, j == "P") for j, h in zip(judge, human) if h is not None and j != "E"]
    h, j = [int(p[0]) for p in pairs], [int(p[1]) for p in pairs]
    (tp, fn), (fp, tn) = confusion_matrix(h, j, labels=[1, 0])
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = cohen_kappa_score(h, j, labels=[1, 0])
            sm = cohens_kappa(np.array([[tp, fn], [fp, tn]]))
    return {"n": len(pairs), "tp": tp, "fn": fn, "fp": fp, "tn": tn, "kappa": kappa,
            "low": sm.kappa_low, "high": sm.kappa_upp,
            "errors": sum(1 for j, h in zip(judge, human) if h is not None and j == "E")}


def _check(row: dict, want: dict) -> None:
    for key in ("n", "tp", "fn", "fp", "tn", "errors"):
        assert row[key] == want[key], key
    assert row["agreement"] == pytest.approx((want["tp"] + want["tn"]) / want["n"])
    if math.isnan(want["kappa"]):
        assert row["kappa"] is None and row["kappa_low"] is None
        return
    assert row["kappa"] == pytest.approx(want["kappa"], abs=1e-12)
    assert row["kappa_low"] == pytest.approx(max(-1, want["low"]), abs=1e-9)
    assert row["kappa_high"] == pytest.approx(min(1, want["high"]), abs=1e-9)


P, F = "pass", "fail"
# (name, judge verdicts, labels): every table a person could bring
TABLES = [
    ("all agree", ["P", "P", "F", "F", "P"], [P, P, F, F, P]),
    ("all disagree", ["P", "F", "F", "P"], [F, P, P, F]),
    ("one class only, agreeing", ["P", "P", "P"], [P, P, P]),
    ("one class each, disagreeing", ["P", "P", "P"], [F, F, F]),
    ("errors present", ["P", "E", "F", "E", "P", "F"], [P, P, F, F, F, P]),
    ("unlabelled cases", ["P", "F", "P", "F"], [P, None, "", F]),
    ("unicode and one case", ["P"], [P]),
]


@pytest.mark.parametrize("name, judge, human", TABLES, ids=[t[0] for t in TABLES])
def test_agreement_matches_sklearn_and_statsmodels(tmp_path, name, judge, human):
    run = _evaluate(tmp_path, _rows(judge, human))
    table = cb.Results(run.con).judge_agreement("human")
    row = table.filter(type="llm-rubric").row(0, named=True)
    labels = [None if h in (None, "") else h == P for h in human]
    _check(row, _expected(judge, labels))
    assert row["judge_model"] == "judge-a" and row["metric"] == "right"
    assert table.filter(type="icontains").is_empty()  # deterministic checks are not judged


def test_random_table_matches_sklearn_and_statsmodels(tmp_path):
    """200 cases, two providers, a judge right 80 % of the time with a few errors."""
    rng = random.Random(7)
    rows, expected = [], {}
    for provider in ("p", "q"):
        human = [rng.random() < 0.6 for _ in range(100)]
        judge = ["E" if rng.random() < 0.05 else ("P" if (h == (rng.random() < 0.8)) else "F")
                 for h in human]
        rows += _rows(judge, [P if h else F for h in human], provider)
        expected[provider] = _expected(judge, human)
    table = cb.Results(_evaluate(tmp_path, rows).con).judge_agreement("human", type="llm-rubric")
    for row in table.iter_rows(named=True):
        _check(row, expected[row["provider"]])
        want = expected[row["provider"]]
        assert row["tpr"] == pytest.approx(want["tp"] / (want["tp"] + want["fn"]))
        assert row["tnr"] == pytest.approx(want["tn"] / (want["tn"] + want["fp"]))
    assert sorted(table["provider"]) == ["p", "q"]


# every spelling of a verdict a dataset may hold: (column values, the verdicts they mean)
SPELLINGS = [
    (["PASS", "Fail", "true", "FALSE", "Yes", "no", " 1 ", "0", "pass"],
     [True, False, True, False, True, False, True, False, True]),
    ([True, False, True, None], [True, False, True, None]),
    ([1, 0, 1, 0], [True, False, True, False]),
    ([1.0, 0.0, 0.5, 0.49], [True, False, True, False]),  # scores: at 0.5 without threshold
    (["0.9", "0.2", "ünïcode", ""], [True, False, "bad", None]),
]


@pytest.mark.parametrize("labels, meaning", SPELLINGS)
def test_labels_in_every_spelling(tmp_path, labels, meaning):
    judge = ["P"] * len(labels)
    run = _evaluate(tmp_path, _rows(judge, labels))
    got = cb.Results(run.con).query(
        "SELECT case_id, human FROM judge_labels('human') ORDER BY case_id")
    read = dict(zip(got["case_id"], got["human"]))
    assert [read.get(i, "none") for i in range(len(labels))] == \
        [None if m == "bad" else ("none" if m is None else m) for m in meaning]
    row = cb.Results(run.con).judge_agreement("human").row(0, named=True)
    assert row["bad_labels"] == meaning.count("bad")
    assert row["tp"] == meaning.count(True) and row["fp"] == meaning.count(False)


def test_score_labels_against_the_assertion_threshold(tmp_path):
    """A score label passes at the assertion's threshold (0.7 here), as the judge's score
    does: 0.65 fails, 0.7 and 0.9 pass."""
    suite = SUITE.replace("metric: right", "metric: right\n      threshold: 0.7")
    judge = ["P@0.9", "P@0.9", "F@0.2", "P@0.9"]
    run = _evaluate(tmp_path, [{"output": f"{j} answer", "human": h}
                               for j, h in zip(judge, [0.9, 0.65, 0.3, 0.7])], suite)
    labels = cb.Results(run.con).query("SELECT human FROM judge_labels('human') "
                                       "ORDER BY case_id")["human"].to_list()
    assert labels == [True, False, False, True]
    row = cb.Results(run.con).judge_agreement("human").row(0, named=True)
    assert (row["tp"], row["fp"], row["tn"], row["fn"]) == (2, 1, 1, 0)


def test_a_row_per_judge_model(tmp_path):
    """An assertion naming its own judge (`provider:`) is its own row."""
    suite = SUITE + ("    - type: llm-rubric\n      value: second opinion\n"
                     "      provider: openai:chat:judge-b\n")
    run = _evaluate(tmp_path, _rows(["P", "F", "P"], [P, P, F]), suite)
    table = cb.Results(run.con).judge_agreement("human")
    assert sorted(table["judge_model"].to_list()) == ["judge-a", "judge-b"]
    assert table["n"].to_list() == [3, 3]
    only = cb.Results(run.con).judge_agreement("human", metric="right")
    assert only["judge_model"].to_list() == ["judge-a"]


def test_disagreements_list_output_reason_and_label(tmp_path):
    run = _evaluate(tmp_path, _rows(["P", "F", "E", "P"], [F, F, P, "yes"]))
    cases = cb.Results(run.con).judge_disagreements("human")
    assert cases.select("case_id", "status", "reason", "label").rows() == \
        [(0, "pass", "looks right", "fail")]
    assert cases["output"][0].startswith("P answer 0")


def test_missing_label_var_is_named(tmp_path):
    run = _evaluate(tmp_path, _rows(["P"], [P]))
    with pytest.raises(cb.InputError, match=r"no var 'humn'.*human"):
        cb.Results(run.con).judge_agreement("humn")


def test_cli_reader_and_report_section(tmp_path):
    run = _evaluate(tmp_path, _rows(["P", "F", "F", "P", "E"], [P, F, P, "1", F]))
    db = str(tmp_path / "r.duckdb")
    run.con.close()
    cli = CliRunner()
    out = cli.invoke(main, ["agreement", "--db", db, "--label", "human", "--format", "json"])
    assert out.exit_code == 0, out.output
    [row] = json.loads(out.output)
    assert (row["n"], row["tp"], row["fn"], row["errors"]) == (4, 2, 1, 1)
    table = cli.invoke(main, ["agreement", "--db", db, "--label", "human"])
    assert table.exit_code == 0 and "disagreements" in table.output
    assert "F answer 2" in table.output
    # n = 4 labelled cases: kappa is shown with a caution (issue 41)
    assert "caution: 1 row(s) have fewer than 30 labelled cases" in table.output
    bad = cli.invoke(main, ["agreement", "--db", db, "--label", "nope"])
    assert bad.exit_code == 2 and "no var 'nope'" in bad.output
    report = tmp_path / "report.html"
    out = cli.invoke(main, ["report", "--db", db, "-o", str(report), "--label", "human"])
    assert out.exit_code == 0, out.output
    html = report.read_text()
    assert "Why the judge disagrees with the labels in human" in html
    assert "F answer 2" in html and "judge too strict" in html and "looks wrong" in html


def lenient_judge(body: dict) -> str:
    """A judge that knows each review's sentiment (from the phrases the example is made of)
    but passes every "neutral" reply: it disagrees with a person where that is wrong."""
    from make_example import PHRASES

    text = "\n".join(m["content"] for m in body["messages"])
    output = text.split("<Output>")[-1].split("</Output>")[0].strip()
    review = text.split('product review: "')[-1].split('"')[0]
    truth = next(k for k, v in PHRASES.items() if any(p in review for p in v))
    try:
        said = json.loads(output).get("sentiment")
    except (ValueError, AttributeError):
        return '{"reason": "not JSON", "pass": false, "score": 0}'
    ok = said in (truth, "neutral")
    return json.dumps({"reason": f"the reply says {said}", "pass": ok, "score": float(ok)})


@pytest.mark.parametrize("judge_server", [{"answer": lenient_judge}], indirect=True)
def test_bundled_audit_example_end_to_end(tmp_path, judge_server, monkeypatch):
    """data/audit_suite.yaml over data/outputs.jsonl through HTTP: the agreement of each
    provider equals scikit-learn's on the `human` column read from the file itself."""
    from conftest import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "data"))
    db = str(tmp_path / "audit.duckdb")
    out = CliRunner().invoke(main, [
        "eval", str(ROOT / "data/audit_suite.yaml"), "--outputs",
        str(ROOT / "data/outputs.jsonl"), "--db", db, "--judge-model", "gpt-4o-mini",
        "--judge-base-url", judge_server.url, "--judge-key-env", KEY_ENV, "--no-progress"])
    assert out.exit_code in (0, 1), out.output
    rows = pl.read_ndjson(ROOT / "data/outputs.jsonl").with_row_index("case_id")
    verdicts = cb.Results(db).query("SELECT case_id, status FROM assertion_results")
    table = rows.join(verdicts.with_columns(pl.col("case_id").cast(pl.UInt32)), on="case_id")
    agreement = cb.Results(db).judge_agreement("human")
    assert agreement["n"].to_list() == [30, 30, 30]
    for row in agreement.iter_rows(named=True):
        mine = table.filter(provider=row["provider"]).drop_nulls("human")
        human = (mine["human"] == "pass").cast(int).to_list()
        judge = (mine["status"] == "pass").cast(int).to_list()
        assert row["kappa"] == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
        (tp, fn), (fp, tn) = confusion_matrix(human, judge, labels=[1, 0])
        assert (row["tp"], row["fn"], row["fp"], row["tn"]) == (tp, fn, fp, tn)
    assert agreement["fp"].sum() > 0  # the lenient judge passes wrong "neutral" replies


def jury_judge(request) -> str:
    """Jurors `a` and `b` follow the output's verdict letter, `wrong` says the opposite."""
    passed = verdict_judge(request).startswith('{"pass": true')
    passed = (not passed) if request.model == "wrong" else passed
    return json.dumps({"pass": passed, "score": float(passed), "reason": request.model})


def test_a_jury_is_a_row_per_juror_and_one_for_its_verdict(tmp_path):
    """A jury of three, one always wrong: each juror and the jury's majority are set
    against the labels, each equal to scikit-learn's figures on its own verdicts."""
    suite = SUITE.replace("  model: judge-a", "  models: [a, b, wrong]")
    judge, human = ["P", "F", "P", "F", "P", "F", "P"], [P, F, P, F, F, P, P]
    path = tmp_path / "suite.yaml"
    path.write_text(suite)
    run = cb.evaluate(path, pl.DataFrame(_rows(judge, human)), db=tmp_path / "r.duckdb",
                      judge=ScriptedJudge(jury_judge))
    table = cb.Results(run.con).judge_agreement("human", type="llm-rubric")
    assert sorted(table["judge_model"]) == ["a", "b", "jury (majority): a, b, wrong", "wrong"]
    labels = [h == P for h in human]
    flipped = ["F" if j == "P" else "P" for j in judge]
    for model, said in (("a", judge), ("jury (majority): a, b, wrong", judge),
                        ("wrong", flipped)):
        _check(table.filter(judge_model=model).row(0, named=True), _expected(said, labels))
    assert table.filter(judge_model="wrong")["kappa"].item() < 0 < \
        table.filter(judge_model="a")["kappa"].item()
