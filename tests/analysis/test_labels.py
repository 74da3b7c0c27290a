"""Labels after the run and corrected estimates read from a run (issue 44): labels imported
from CSV / JSONL / Parquet / a frame read as a dataset column is; samples drawn for
labelling with their inclusion probabilities; the corrected_pass_rates / corrected_scores
macros against ppi_py (uniform samples) and numpy by hand (stratified); the refusal of
labels no sample drew; the CLI (labels sample / import / plan, agreement --corrected,
compare --corrected)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

import checkllm_batch as cb
from checkllm_batch.analysis.labels import allocate, read_label_file
from checkllm_batch.cli import main
from checkllm_batch.judge import ScriptedJudge

SUITE = "judge:\n  model: judge-a\ndefaultTest:\n  assert:\n    - type: llm-rubric\n" \
        "      value: the answer is right\n"
Z = 1.959963984540054


def verdict_judge(request) -> str:
    """Passes an output starting 'P' (score after '@' if any), fails the rest."""
    text = "\n".join(c for _, c in request.messages)
    output = text.split("<Output>")[-1].split("</Output>")[0].strip()
    score = float(output.split("@")[1].split()[0]) if "@" in output else None
    passed = output.startswith("P")
    return json.dumps({"pass": passed, "score": score if score is not None else float(passed),
                       "reason": "looks right" if passed else "looks wrong"})


def _world(seed: int, n: int, tpr: float = 0.9, tnr: float = 0.7, p: float = 0.6):
    """(the people's verdicts, the judge's) for n cases."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < p
    judged = np.where(truth, rng.random(n) < tpr, rng.random(n) > tnr)
    return truth, judged


def _evaluate(tmp_path, judged, name="r.duckdb", scores=None, **columns) -> cb.Run:
    (tmp_path / "suite.yaml").write_text(SUITE)
    outputs = [("P" if j else "F") + (f" @{scores[i]:.4f}" if scores is not None else "")
               + f" answer {i} ✓" for i, j in enumerate(judged)]
    frame = pl.DataFrame({"output": outputs, "id": [f"id-{i}" for i in range(len(judged))],
                          **columns})
    return cb.evaluate(tmp_path / "suite.yaml", frame, db=tmp_path / name,
                       judge=ScriptedJudge(verdict_judge))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A run of 600 cases, two providers, a judge with TPR 0.9 / TNR 0.7; the truth."""
    tmp = tmp_path_factory.mktemp("labels")
    truth, judged = _world(1, 600)
    run = _evaluate(tmp, judged, provider=["a", "b"] * 300,
                    column=np.where(truth, "pass", "fail").tolist())
    run.con.close()
    return tmp / "r.duckdb", truth, judged


def _copy(world, tmp_path, name="copy.duckdb"):
    db, truth, judged = world
    target = tmp_path / name
    target.write_bytes(db.read_bytes())
    return target, truth, judged


# label spellings as judge_agreement reads a dataset column: (text, person's verdict)
SPELLINGS = [("Pass", True), (" TRUE ", True), ("yes", True), ("1", True), ("0.8", True),
             ("fail", False), ("No", False), ("0", False), ("0.2", False),
             ("maybe", None), ("✓", None)]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "frame"])
def test_imported_labels_read_as_a_dataset_column(tmp_path, fmt):
    texts = [t for t, _ in SPELLINGS] + ["", None]
    judged = [True] * len(texts)
    run = _evaluate(tmp_path, judged, human=texts)  # the same labels as a dataset column
    frame = pl.DataFrame({"case_id": list(range(len(texts))), "person": texts})
    results = cb.Results(run.con)
    if fmt == "frame":
        done = results.add_labels(frame.to_pandas(), "person")
    else:
        path = tmp_path / f"labels.{fmt}"
        {"csv": frame.write_csv, "jsonl": frame.write_ndjson,
         "parquet": frame.write_parquet}[fmt](path)
        done = results.add_labels(read_label_file(path), "person")
    assert (done["labels"], done["empty"]) == (len(SPELLINGS), 2)
    read = results.query("SELECT case_id, label, human FROM judge_labels('person') "
                         "ORDER BY case_id")
    column = results.query("SELECT case_id, label, human FROM judge_labels('human') "
                           "ORDER BY case_id")
    assert read.equals(column)
    assert read["human"].to_list() == [h for _, h in SPELLINGS]


def test_labels_keyed_by_the_datasets_own_id(tmp_path):
    run = _evaluate(tmp_path, [True, False, True])
    results = cb.Results(run.con)
    results.add_labels(pl.DataFrame({"id": ["id-2", "id-0"], "human": ["fail", "pass"]}))
    assert results.query("SELECT case_id, human FROM judge_labels('human') ORDER BY 1"
                         ).rows() == [(0, True), (2, False)]
    # a later label of the same case is the one read; an assertion's own beats the case's
    results.add_labels(pl.DataFrame({"id": ["id-2"], "human": ["pass"]}))
    results.add_labels(pl.DataFrame({"case_id": [0], "assertion_index": [0],
                                     "human": ["no"]}))
    assert results.query("SELECT case_id, human FROM judge_labels('human') ORDER BY 1"
                         ).rows() == [(0, False), (2, True)]


# (frame, error): every bad label file names what is wrong
BAD = [(pl.DataFrame({"id": ["id-9"], "human": ["pass"]}), r"1 label\(s\) match no case.*id-9"),
       (pl.DataFrame({"id": ["id-1", "id-1"], "human": ["pass", "fail"]}), "more than once"),
       (pl.DataFrame({"id": ["id-1"], "people": ["pass"]}), "no column 'human'"),
       (pl.DataFrame({"row": ["1"], "human": ["pass"]}), "no case_id column.*--key"),
       (pl.DataFrame({"case_id": [7], "human": ["pass"]}), "match no case")]


@pytest.mark.parametrize("frame, error", BAD, ids=[b[1][:20] for b in BAD])
def test_bad_labels_are_refused_with_the_reason(tmp_path, frame, error):
    run = _evaluate(tmp_path, [True, False])
    with pytest.raises(cb.InputError, match=error):
        cb.Results(run.con).add_labels(frame)
    assert cb.Results(run.con).query("SELECT count(*) AS n FROM case_labels")["n"][0] == 0


def test_uniform_sample_is_corrected_as_ppi_py(world, tmp_path):
    db, truth, judged = _copy(world, tmp_path)
    results = cb.Results(db)
    drawn = results.sample_labels(120, seed=5)
    assert drawn.height == 120 and drawn["inclusion_prob"].unique().to_list() == [0.2]
    recorded = results.query("SELECT count(*) AS n, sum(sampled::INT) AS k, "
                             "min(inclusion_prob) AS p FROM label_samples").row(0)
    assert recorded == (600, 120, 0.2)
    ids = drawn["case_id"].to_numpy()
    results.add_labels(drawn.with_columns(human=pl.Series(
        np.where(truth[ids], "pass", "fail"))).select("case_id", "human"))
    table = results.corrected_pass_rates("human")
    assert table["labels"].to_list() == ["a drawn sample"] * 2
    for row in table.iter_rows(named=True):
        mine = np.arange(600) % 2 == (row["provider"] == "b")
        lab = np.isin(np.arange(600), ids) & mine
        y, f, fu = truth[lab] * 1.0, judged[lab] * 1.0, judged[mine & ~lab] * 1.0
        low, high = ppi_mean_ci(y, f, fu, alpha=0.05)
        assert row["corrected"] == pytest.approx(float(ppi_mean_pointestimate(y, f, fu)[0]))
        assert (row["corrected_low"], row["corrected_high"]) == pytest.approx(
            (low[0], high[0]))
        assert row["n_labelled"] == lab.sum() and row["n_judged"] == 300
    # the same verdicts in a dataset column are read for the drawn cases alike
    assert results.corrected_pass_rates("column").equals(table)


def test_sample_by_verdict_is_stratified_by_hand(world, tmp_path):
    db, truth, judged = _copy(world, tmp_path)
    results = cb.Results(db)
    drawn = results.sample_labels(100, by=["verdict"], seed=8, allocation="equal")
    assert drawn.group_by("verdict").len().sort("verdict").rows() == [("fail", 50),
                                                                      ("pass", 50)]
    fails = int((~judged).sum())
    assert drawn.filter(verdict="fail")["inclusion_prob"][0] == pytest.approx(50 / fails)
    again = cb.Results(db).sample_labels(100, by=["verdict"], seed=8, allocation="equal")
    assert again["case_id"].to_list() == drawn["case_id"].to_list()  # the seed repeats it
    ids = drawn["case_id"].to_numpy()
    results.add_labels(drawn.with_columns(human=pl.Series(
        np.where(truth[ids], "yes", "no"))).select("case_id", "human"))
    row = results.corrected_pass_rates("human", type="llm-rubric").filter(
        provider="a").row(0, named=True)
    # by hand: the judge is constant within a verdict, so each stratum's estimate is its
    # labels' mean; shares of the judged cases, variances var0 / n
    mine = np.arange(600) % 2 == 0
    theta = var = 0.0
    for verdict in (True, False):
        cell = mine & (judged == verdict)
        y = truth[cell & np.isin(np.arange(600), again["case_id"].to_numpy())] * 1.0
        share = cell.sum() / mine.sum()
        theta, var = theta + share * y.mean(), var + share ** 2 * y.var() / len(y)
    assert row["strata"] == 2 and row["corrected"] == pytest.approx(theta)
    assert row["corrected_high"] == pytest.approx(theta + Z * np.sqrt(var))


# (stratum sizes, n, allocation, labels per stratum): at least 2 each, none beyond a
# stratum's size, the rest by largest remainders
ALLOCATIONS = [([100, 300], 40, "proportional", [10, 30]),
               ([100, 300], 40, "equal", [20, 20]),
               ([5, 1000], 10, "proportional", [2, 8]),
               ([5, 1000], 100, "equal", [5, 95]),
               ([1, 3, 6], 100, "proportional", [1, 3, 6]),
               ([10, 10, 10], 10, "proportional", [4, 3, 3]),
               ([7], 3, "equal", [3]),
               ([2], 1, "proportional", [1]),
               ([], 5, "equal", [])]


@pytest.mark.parametrize("sizes, n, allocation, quota", ALLOCATIONS)
def test_allocation(sizes, n, allocation, quota):
    got = allocate(np.array(sizes), n, allocation)
    assert got == quota and sum(got) == min(n, sum(sizes))


def test_too_few_labels_for_the_strata_is_refused():
    with pytest.raises(cb.InputError, match="cannot give each of 3 strata 2"):
        allocate(np.array([10, 10, 10]), 5)


def test_labels_no_sample_drew_are_refused_unless_declared_random(world, tmp_path):
    db, truth, judged = _copy(world, tmp_path)
    results = cb.Results(db)
    with pytest.raises(cb.InputError, match="labels sample --n 300.*--labels-random"):
        results.corrected_pass_rates("column")
    table = results.corrected_pass_rates("column", labels_random=True)  # every case labelled
    assert table["labels"][0] == "declared a uniform random sample"
    row = table.filter(provider="a").row(0, named=True)
    assert row["labels_only"] == pytest.approx(truth[::2].mean())
    assert row["n_labelled"] == row["n_judged"] == 300


def test_a_slice_and_scores(tmp_path):
    rng = np.random.default_rng(3)
    truth = rng.beta(2, 2, 400)
    judge = np.clip(truth + rng.normal(0.1, 0.1, 400), 0, 1)
    run = _evaluate(tmp_path, judge > 0.5, scores=judge,
                    topic=["x", "y"] * 200,
                    people=[f"{t:.4f}" if i % 4 == 0 else None for i, t in enumerate(truth)])
    results = cb.Results(run.con)
    table = results.corrected_pass_rates("people", labels_random=True, scores=True,
                                         slice="topic")
    assert table["slice"].to_list() == ["x", "y"]
    row = table.row(0, named=True)
    x = np.arange(400) % 2 == 0
    lab = x & (np.arange(400) % 4 == 0)
    y = np.round(truth[lab], 4)
    f, fu = np.round(judge[lab], 4), np.round(judge[x & ~lab], 4)
    assert row["corrected"] == pytest.approx(float(ppi_mean_pointestimate(y, f, fu)[0]))
    low, high = ppi_mean_ci(y, f, fu, alpha=0.05)
    assert (row["corrected_low"], row["corrected_high"]) == pytest.approx((low[0], high[0]))


def test_sampling_several_graded_verdicts_asks_which(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE + "    - type: llm-rubric\n      value: x\n"
                                         "      metric: second\n")
    run = cb.evaluate(tmp_path / "suite.yaml", pl.DataFrame({"output": ["P a", "F b"]}),
                      db=tmp_path / "r.duckdb", judge=ScriptedJudge(verdict_judge))
    results = cb.Results(run.con)
    with pytest.raises(cb.InputError, match="2 graded verdicts each.*--metric"):
        results.sample_labels(1)
    assert results.sample_labels(1, metric="second", seed=1).height == 1


def test_plan_from_labels_so_far_and_from_an_assumed_judge(world, tmp_path):
    db, truth, judged = _copy(world, tmp_path)
    results = cb.Results(db)
    assumed = results.labels_plan(0.05, tpr=0.9, tnr=0.7)
    assert assumed["from"].to_list() == ["assumed tpr 0.9, tnr 0.7"] * 2
    assert (assumed["labels_with_judge"] < assumed["labels_alone"]).all()
    drawn = results.sample_labels(200, seed=2)
    ids = drawn["case_id"].to_numpy()
    results.add_labels(pl.DataFrame({"case_id": ids, "human": truth[ids].astype(int)}))
    so_far = results.labels_plan(0.05).filter(provider="a").row(0, named=True)
    mine = ids[ids % 2 == 0]
    assert so_far["n_labelled"] == len(mine)
    assert so_far["rho"] == pytest.approx(np.corrcoef(truth[mine], judged[mine])[0, 1])
    assert so_far["labels_alone"] == int(np.ceil(truth[mine].var() * (Z / 0.05) ** 2))


def test_cli_sample_import_agreement_plan(world, tmp_path):
    db, truth, judged = _copy(world, tmp_path)
    cli = CliRunner()
    refused = cli.invoke(main, ["agreement", "--label", "column", "--corrected",
                                "--db", str(_copy(world, tmp_path, "other.duckdb")[0])])
    assert refused.exit_code == 2 and "labels sample" in refused.output
    out = tmp_path / "to_label.csv"
    sampled = cli.invoke(main, ["labels", "sample", "--n", "80", "--by", "provider,verdict",
                                "--seed", "4", "-o", str(out), "--db", str(db),
                                "--allocation", "equal"])
    assert sampled.exit_code == 0, sampled.output
    assert "provider=a|verdict=fail: 20" in sampled.output
    sheet = pl.read_csv(out)
    assert sheet["human"].null_count() == 80 and "reason" in sheet.columns
    ids = sheet["case_id"].to_numpy()
    sheet.with_columns(human=pl.Series(np.where(truth[ids], "pass", "fail"))).write_csv(out)
    imported = cli.invoke(main, ["labels", "import", str(out), "--db", str(db),
                                 "--by", "ann"])
    assert "80 labels 'human' on 80 cases stored" in imported.output, imported.output
    shown = cli.invoke(main, ["agreement", "--label", "human", "--corrected", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "labels with the judge are worth" in shown.output
    assert "Dorner, Nastl & Hardt" in shown.output
    planned = cli.invoke(main, ["labels", "plan", "--width", "5", "--db", str(db)])
    assert planned.exit_code == 0 and "labels so far" in planned.output


def test_compare_corrected_gates_on_the_peoples_rate(tmp_path):
    """Run B's judge passes more (its TNR fell) while the people's rate fell: the judge's
    rate says better, the corrected difference says worse, and the gate fails."""
    truth_a, judged_a = _world(11, 2000, tpr=0.9, tnr=0.9, p=0.7)
    truth_b, judged_b = _world(12, 2000, tpr=0.95, tnr=0.3, p=0.5)
    _evaluate(tmp_path, judged_a, human=np.where(truth_a, "pass", "fail").tolist()).con.close()
    _evaluate(tmp_path, judged_b, human=np.where(truth_b, "pass", "fail").tolist()).con.close()
    db = tmp_path / "r.duckdb"
    results = cb.Results(db)
    table = results.compare_corrected("previous", "last", "human", labels_random=True)
    row = table.row(0, named=True)
    assert row["judge_difference"] > 0 > row["high"]
    assert row["difference"] == pytest.approx(truth_b.mean() - truth_a.mean())
    gated = CliRunner().invoke(main, ["compare", "previous", "last", "--db", str(db),
                                      "--corrected", "human", "--labels-random"])
    assert gated.exit_code == 1 and "corrected pass rate(s) dropped" in gated.output


def test_power_corrected_plans_labels_for_a_difference(world, tmp_path):
    """`power --corrected`: labels per group for a corrected difference, from an assumed
    judge, or per graded assertion x provider from a run (labels_plan(drop=...))."""
    from checkllm_batch.analysis.corrected import corrected_sample_size, difference_half_width

    cli = CliRunner()
    said = cli.invoke(main, ["power", "--corrected", "--drop", "0.1", "--pass-rate", "0.6",
                             "--tpr", "0.85", "--judged", "2000"])
    alone, with_judge = corrected_sample_size(0.1, 0.6, 0.85, judged=2000)
    assert said.exit_code == 0, said.output
    assert said.output.startswith(f"{with_judge} labels per group with the judge ({alone} "
                                  "alone) detect a difference of 10 points")
    db, *_ = _copy(world, tmp_path)
    results = cb.Results(db)
    per_group = results.labels_plan(drop=0.1, tpr=0.85)
    assert per_group.equals(results.labels_plan(difference_half_width(0.1), tpr=0.85))
    assert per_group["provider"].to_list() == ["a", "b"]
    table = cli.invoke(main, ["power", "--corrected", "--drop", "0.1", "--db", str(db)])
    assert table.exit_code == 0 and "labels per group" in table.output, table.output
    for args, error in ((["--pass-rate", "0.6"], "give --drop"),
                        (["--drop", "0.1"], "give --pass-rate"),
                        (["--drop", "5", "--pass-rate", "0.6"], "not a fraction")):
        refused = cli.invoke(main, ["power", "--corrected", *args])
        assert refused.exit_code == 2 and error in refused.output, refused.output
    with pytest.raises(cb.InputError, match="not both"):
        results.labels_plan(0.02, drop=0.1)
