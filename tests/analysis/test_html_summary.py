"""Jupyter shows a Run and a Results database as a short HTML summary: the run's status and
its pass rate per provider, counted here from the run's test results."""

from __future__ import annotations

import re

import polars as pl
from conftest import ROOT

import checkllm_batch as cb
from checkllm_batch.store import runs as store


def shown_rates(html: str) -> dict[str, str]:
    """provider -> the pass rate cell of its row."""
    rows = re.findall(r"<tr><td>(.*?)</td>.*?<td>([\d.]+%)</td></tr>", html)
    return dict(rows)


def test_a_run_and_its_database_show_pass_rates_per_provider():
    run = cb.evaluate(ROOT / "data" / "suite.yaml", str(ROOT / "data" / "outputs.jsonl"))
    counted = (run.test_results.join(run.cases.select("case_id", "provider"), on="case_id")
               .group_by("provider").agg(rate=(pl.col("status") == "pass").mean()))
    want = {p: f"{r:.1%}" for p, r in counted.iter_rows()}
    assert len(want) == 3
    for html in (run._repr_html_(), cb.Results(run.con)._repr_html_()):
        assert shown_rates(html) == want
        assert run.run_id in html and "finished" in html


def test_a_database_without_a_finished_run_says_so(tmp_path):
    db = tmp_path / "empty.duckdb"
    store.connect(db).close()
    html = cb.Results(db)._repr_html_()
    assert "0 run(s)" in html and "no finished run" in html
