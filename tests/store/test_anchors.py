"""The judge's drift on an anchor set (store/anchors.py, issue 44): labels frozen by
`labels import --anchor` are found again in later runs by their output and vars (whatever
the row order, the vars' order or a label column), the judge's agreement on them is read
run over run, and its move between two runs is tested with the exact McNemar test, checked
against statsmodels."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from statsmodels.stats.contingency_tables import mcnemar

import checkllm_batch as cb
from checkllm_batch.cli import main
from checkllm_batch.judge import ScriptedJudge
from checkllm_batch.store.anchors import _exact_mcnemar

SUITE = "judge:\n  model: {model}\ndefaultTest:\n  assert:\n    - type: llm-rubric\n" \
        "      value: the answer is right\n"
N_ANCHORS = 120
FLIPPED = set(range(0, 60, 3))  # anchors judge-b grades the other way round


def judge(flip: set[int]):
    """Passes an output starting 'P', except the anchors numbered in `flip`."""
    def verdict(request) -> str:
        text = "\n".join(c for _, c in request.messages)
        output = text.split("<Output>")[-1].split("</Output>")[0].strip()
        number = int(output.split()[2]) if output.split()[1] == "anchor" else -1
        passed = output.startswith("P") != (number in flip)
        return json.dumps({"pass": passed, "score": float(passed), "reason": "r"})
    return verdict


def _anchors() -> tuple[pl.DataFrame, np.ndarray]:
    """The anchor rows (output, id, topic) and the people's verdicts on them: a judge
    reading 'P' as pass has TPR 0.85 and TNR 0.8 against them."""
    rng = np.random.default_rng(3)
    truth = rng.random(N_ANCHORS) < 0.55
    says_pass = np.where(truth, rng.random(N_ANCHORS) < 0.85, rng.random(N_ANCHORS) > 0.8)
    frame = pl.DataFrame({
        "output": [("P" if p else "F") + f" anchor {i} ✓" for i, p in enumerate(says_pass)],
        "id": [f"a-{i}" for i in range(N_ANCHORS)],
        "topic": ["é" if i % 2 else "" for i in range(N_ANCHORS)],
        "provider": ["anchor"] * N_ANCHORS})
    return frame, truth


def _run(tmp_path, model: str, flip: set[int], model_outputs: pl.DataFrame,
         anchors: pl.DataFrame) -> cb.Run:
    (tmp_path / f"{model}.yaml").write_text(SUITE.format(model=model))
    frame = pl.concat([model_outputs, anchors], how="diagonal_relaxed")
    return cb.evaluate(tmp_path / f"{model}.yaml", frame, db=tmp_path / "r.duckdb",
                       judge=ScriptedJudge(judge(flip)))


def _model_outputs(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"output": [("P" if p else "F") + f" model {seed} {i}" for i, p in
                                    enumerate(rng.random(50) < 0.5)],
                         "id": [f"m-{i}" for i in range(50)], "topic": ["x"] * 50,
                         "provider": ["model"] * 50})


@pytest.fixture(scope="module")
def drift(tmp_path_factory):
    """Three runs holding the anchors: the first labelled and frozen; the second with the
    same judge, another model's outputs, the anchors shuffled, their vars in another order
    and a label column; the third with another judge that grades 20 anchors the other way."""
    tmp = tmp_path_factory.mktemp("anchors")
    anchors, truth = _anchors()
    first = _run(tmp, "judge-a", set(), _model_outputs(1), anchors)
    labels = pl.DataFrame({"id": anchors["id"], "human": np.where(truth, "pass", "fail")})
    labels.write_csv(tmp / "anchors.csv")
    first.con.close()
    frozen = CliRunner().invoke(main, ["labels", "import", str(tmp / "anchors.csv"),
                                       "--db", str(tmp / "r.duckdb"), "--anchor"])
    assert frozen.exit_code == 0 and "frozen as the anchor set" in frozen.output
    shuffled = anchors.sample(fraction=1, shuffle=True, seed=5).select(
        "topic", "provider", "output", "id").with_columns(human=pl.lit("ignored"))
    _run(tmp, "judge-a", set(), _model_outputs(2), shuffled).con.close()
    _run(tmp, "judge-b", FLIPPED, _model_outputs(3), anchors).con.close()
    return tmp / "r.duckdb", anchors, truth


def _right(anchors: pl.DataFrame, truth: np.ndarray, flip: set[int]) -> np.ndarray:
    """Whether a judge grading `flip` the other way round agrees with the people."""
    says = anchors["output"].str.starts_with("P").to_numpy()
    says = says != np.isin(np.arange(N_ANCHORS), list(flip))
    return says == truth


def test_the_anchor_set_is_followed_run_over_run(drift):
    db, anchors, truth = drift
    table = cb.Results(db).judge_drift("human")
    assert table["run_id"].n_unique() == 3 and table.height == 3
    first, same, other = table.iter_rows(named=True)
    right_a, right_b = _right(anchors, truth, set()), _right(anchors, truth, FLIPPED)
    for row, right in ((first, right_a), (same, right_a), (other, right_b)):
        assert row["anchors"] == N_ANCHORS
        assert row["agreement"] == pytest.approx(right.mean())
        assert row["tpr"] == pytest.approx(right[truth].mean())
        assert row["tnr"] == pytest.approx(right[~truth].mean())
    assert first["previous_run"] is None and first["p_value"] is None
    assert (same["matched"], same["worse"], same["better"], same["verdicts_changed"],
            same["p_value"], same["moved"]) == (N_ANCHORS, 0, 0, 0, 1.0, False)
    worse = int((right_a & ~right_b).sum())
    better = int((~right_a & right_b).sum())
    assert (other["judge_model"], other["previous_judge_model"]) == ("judge-b", "judge-a")
    assert (other["matched"], other["worse"], other["better"],
            other["verdicts_changed"]) == (N_ANCHORS, worse, better, len(FLIPPED))
    table_2x2 = [[int((right_a & right_b).sum()), worse],
                 [better, int((~right_a & ~right_b).sum())]]
    expected = mcnemar(table_2x2, exact=True).pvalue
    assert other["p_value"] == pytest.approx(expected, rel=1e-9)
    assert other["moved"] == (expected < 0.05)


DISCORDANT = [(0, 0), (0, 1), (1, 0), (0, 5), (3, 12), (7, 7), (40, 55), (9, 30),
              (200, 260), (513, 498)]


@pytest.mark.parametrize("worse, better", DISCORDANT)
def test_exact_mcnemar_matches_statsmodels(worse, better):
    got = duckdb.sql(f"SELECT {_exact_mcnemar('w', 'b')} AS p "
                     f"FROM (SELECT {worse} AS w, {better} AS b)").fetchall()[0][0]
    assert got == pytest.approx(mcnemar([[10, worse], [better, 10]], exact=True).pvalue,
                                rel=1e-9, abs=1e-300)


def test_cli_says_the_judge_moved(drift):
    db, *_ = drift
    shown = CliRunner().invoke(main, ["labels", "drift", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    held = [line for line in lines if "no significant move of the judge" in line]
    moved = [line for line in lines if "the judge moved (judge-a -> judge-b" in line]
    assert len(held) == 1 and len(moved) == 1, shown.output
    as_json = CliRunner().invoke(main, ["labels", "drift", "--db", str(db), "--format",
                                        "json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output)


def test_drift_without_an_anchor_set_says_how_to_freeze_one(drift, tmp_path):
    db, *_ = drift
    refused = CliRunner().invoke(main, ["labels", "drift", "--db", str(db), "--label", "x"])
    assert refused.exit_code == 2 and "labels import FILE --label x --anchor" in refused.output
