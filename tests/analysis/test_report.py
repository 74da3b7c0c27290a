"""The report's HTML without a browser (analysis/report*.py): a rate with no verdict said
in words, the slices a reader names, the label var kept out of the vars, the matrix's data
bounded and skipped counted apart."""

from __future__ import annotations

import polars as pl
import pytest

import checkllm_batch as cb
from checkllm_batch.analysis import Results
from checkllm_batch.analysis.report_failing import slices

GRADED = 'defaultTest:\n  assert:\n    - type: llm-rubric\n      value: polite\n'


def test_a_rate_with_no_verdict_says_so(tmp_path, judge_server):
    """A judge sample of one case: one provider's cases are all skipped, its rate (NULL:
    no verdict) is said in words, never 0 %."""
    from judge_server import JUDGE_HEADER

    (tmp_path / "s.yaml").write_text(
        JUDGE_HEADER.replace("tests:\n  - description: t\n    assert:\n", "")
        + f"  base_url: {judge_server.url}\n" + GRADED)
    run = cb.evaluate(tmp_path / "s.yaml", pl.DataFrame(
        {"provider": ["p", "p", "q", "q"], "output": ["good", "bad", "good", "bad"]}),
        judge_sample=1)
    results = Results(run.con)
    rates = results.pass_rates(run.run_id)
    assert rates["pass_rate"].null_count() == 1
    html = results.report(tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<td class="num rate none">no verdicts (0 errors)</td>' in html


def test_slices_by_a_named_var_with_wilson_intervals(tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    (tmp_path / "s.yaml").write_text(
        'defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    frame = pl.DataFrame({"label": ["x"] * 10, "lang": ["fr"] * 4 + ["en"] * 6,
                          "output": ["x", "y", "y", "y"] + ["x"] * 5 + ["y"]})
    run = cb.evaluate(tmp_path / "s.yaml", frame)
    found = slices(Results(run.con), run.run_id, ("lang",)).filter(dimension="var lang")
    assert found["slice"].to_list() == ["fr", "en"]  # the lowest first
    for lang, passed, n in (("fr", 1, 4), ("en", 5, 6)):
        row = found.filter(slice=lang).row(0, named=True)
        low, high = proportion_confint(passed, n, method="wilson")
        assert (row["passed"], row["n"]) == (passed, n)
        assert (row["low"], row["high"]) == (pytest.approx(low), pytest.approx(high))
    html = Results(run.con).report(tmp_path / "r.html", by="lang").read_text("utf-8")
    assert "<td>var lang</td>" in html


def test_the_label_var_is_a_label_not_a_var(tmp_path, judge_server):
    from judge_server import JUDGE_HEADER

    (tmp_path / "s.yaml").write_text(
        JUDGE_HEADER.replace("tests:\n  - description: t\n    assert:\n", "")
        + f"  base_url: {judge_server.url}\n"
        + "tests:\n  - description: t1\n    vars: {q: one}\n  - description: t2\n"
        "    vars: {q: two}\ndefaultTest:\n  assert:\n    - type: llm-rubric\n"
        "      value: good\n")
    frame = pl.DataFrame({"test_id": ["t1", "t1", "t2", "t2"], "provider": ["a", "b"] * 2,
                          "output": ["good", "bad", "good", "good"],
                          "human": ["pass", "pass", None, "fail"]})
    run = cb.evaluate(tmp_path / "s.yaml", frame)
    from checkllm_batch.analysis.cases_view import cases_document

    results = Results(run.con)
    plain = cases_document(results, run.run_id)
    labelled = cases_document(results, run.run_id, labels=("human",))
    # without --label the label is a var: t1's rows share it (pass), t2's differ
    assert plain["totals"]["tests"] == 3
    assert labelled["totals"]["tests"] == 2 and len(labelled["rows"]) == 2
    assert all("human" not in (row["vars"] or "") for row in labelled["rows"])
    html = results.report(tmp_path / "r.html", label="human").read_text("utf-8")
    assert "judge too strict" in html  # t1 on b: the judge failed what the person passed
    assert "judge too lenient" in html  # t2 on b: the judge passed what the person failed
