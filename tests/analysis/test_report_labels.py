"""The report's labels section (analysis/report_labels.py, issue 44): the judge's pass rate
beside the people's corrected one, each with its interval, rendered from a run whose labels
were drawn by `sample_labels` and imported after it (the section then shown without
--label); the corrected figure is ppi_py's; labels no sample drew are refused in words."""

from __future__ import annotations

import json
import re
from html import unescape

import numpy as np
import polars as pl
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from statsmodels.stats.proportion import proportion_confint

import checkllm_batch as cb
from checkllm_batch.judge import ScriptedJudge

SUITE = "judge:\n  model: judge-a\ndefaultTest:\n  assert:\n    - type: llm-rubric\n" \
        "      value: the answer is right\n"


def _judge(request) -> str:
    text = "\n".join(c for _, c in request.messages)
    passed = text.split("<Output>")[-1].strip().startswith("P")
    return json.dumps({"pass": passed, "score": float(passed), "reason": "r"})


def _run(tmp_path, columns, n=400, seed=9):
    """n cases, a judge with TPR 0.9 / TNR 0.6 against the people's verdicts (truth)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.5
    says = np.where(truth, rng.random(n) < 0.9, rng.random(n) > 0.6)
    (tmp_path / "s.yaml").write_text(SUITE)
    frame = pl.DataFrame({"output": [("P" if s else "F") + f" reply {i} ✓"
                                     for i, s in enumerate(says)], **columns(truth)})
    run = cb.evaluate(tmp_path / "s.yaml", frame, db=tmp_path / "r.duckdb",
                      judge=ScriptedJudge(_judge))
    return cb.Results(run.con), run.run_id, truth, says.astype(float)


def _cells(html: str, table_class: str) -> list[list[str]]:
    body = re.search(rf'<table class="{table_class}">.*?<tbody>(.*?)</tbody>', html, re.S)[1]
    return [[unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)]
            for r in re.findall(r"<tr>(.*?)</tr>", body)]


def test_the_report_shows_the_judges_rate_beside_the_corrected_one(tmp_path):
    results, run_id, truth, says = _run(tmp_path, columns=lambda truth: {})
    sheet = results.sample_labels(80, seed=3, run=run_id)
    ids = sheet["case_id"].to_numpy()
    results.add_labels(sheet.select("case_id").with_columns(
        human=pl.Series(np.where(truth[ids], "pass", "fail"))), "human", run=run_id)
    html = results.report(tmp_path / "r.html", run=run_id).read_text("utf-8")  # no --label
    assert "Why the judge disagrees with the labels in human" in html
    [row] = _cells(html, "corrected")
    labelled = np.zeros(len(truth), bool)
    labelled[ids] = True
    y, f, fu = truth[labelled].astype(float), says[labelled], says[~labelled]
    low, high = proportion_confint(int(says.sum()), len(says), method="wilson")
    judge = f"{100 * says.mean():.1f} % [{100 * low:.1f}, {100 * high:.1f}]"
    estimate = ppi_mean_pointestimate(y, f, fu)[0]
    c_low, c_high = ppi_mean_ci(y, f, fu, alpha=0.05)
    corrected = f"{100 * estimate:.1f} % [{100 * c_low[0]:.1f}, {100 * c_high[0]:.1f}]"
    assert row[:5] == ["judge-a", "llm-rubric", "", "80", "400"]
    assert row[5] == judge and row[7] == corrected
    assert row[6].startswith(f"{100 * y.mean():.1f} % [")
    assert re.fullmatch(r"\d+ \(× \d\.\d\d\)", row[8])
    assert "Dorner, Nastl &amp; Hardt" in html and "labels a drawn sample" in html


def test_labels_no_sample_drew_are_refused_in_words(tmp_path):
    results, run_id, *_ = _run(tmp_path, n=40, columns=lambda truth: {
        "human": np.where(truth, "pass", "fail").tolist()})
    html = results.report(tmp_path / "r.html", run=run_id, label="human").read_text("utf-8")
    assert '<table class="corrected">' not in html
    refusal = re.search(r'<p class="note" id="corrected">(.*?)</p>', html)[1]
    assert "were not drawn by a sample" in unescape(refusal)
    assert "labels sample --n 300" in unescape(refusal)
