"""`eval -o FILE` keeps structure: `vars` is an object in JSON and JSON Lines and compact
JSON text in a CSV cell; numbers keep their full precision (analysis/export.py). And
`compare --format json` gives each flipped case's vars as an object."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

import checkllm_batch as cb
from checkllm_batch.analysis import Results
from checkllm_batch.analysis.export import write_results
from checkllm_batch.cli import main

SUITE = 'defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n'
VARS = [{"label": "a", "n": 1, "tags": ["x", "é"]}, {"label": "b", "n": 2, "tags": []},
        {"label": "", "n": None, "tags": ["<b>"]}]


@pytest.fixture()
def run(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    frame = pl.DataFrame({"label": [v["label"] for v in VARS], "n": [v["n"] for v in VARS],
                          "tags": [v["tags"] for v in VARS], "output": ["a", "c", ""],
                          "latency_ms": [1, 2, 3]})
    return cb.evaluate(tmp_path / "suite.yaml", frame, db=tmp_path / "r.duckdb")


def _rows(path):
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))["results"]
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return pl.read_csv(path).to_dicts()


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_vars_is_an_object_in_json(run, tmp_path, suffix):
    path = write_results(Results(run.con), run.run_id, tmp_path / f"r{suffix}")
    assert [r["vars"] for r in _rows(path)] == VARS
    assert [r["status"] for r in _rows(path)] == ["pass", "fail", "pass"]


def test_vars_is_compact_json_in_a_csv_cell(run, tmp_path):
    rows = _rows(write_results(Results(run.con), run.run_id, tmp_path / "r.csv"))
    assert [json.loads(r["vars"]) for r in rows] == VARS
    assert rows[0]["vars"] == '{"label":"a","n":1,"tags":["x","é"]}'  # one spacing


def test_compare_json_gives_vars_as_objects(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    db = tmp_path / "r.duckdb"
    for output in ("a", "z"):
        cb.evaluate(tmp_path / "suite.yaml", pl.DataFrame(
            {"label": ["a"], "k": [{"deep": [1, 2]}], "output": [output]}), db=db).con.close()
    result = CliRunner().invoke(main, ["compare", "previous", "last", "--db", str(db),
                                       "--format", "json", "--gate", "none"])
    assert result.exit_code == 0, result.output
    [regressed] = json.loads(result.stdout)["regressed"]
    assert regressed["vars"] == {"label": "a", "k": {"deep": [1, 2]}}
