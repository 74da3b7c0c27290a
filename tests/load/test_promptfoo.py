"""promptfoo's own results file read as outputs. The fixture was written by promptfoo 0.123.1
(offline kit, see promptfooconfig.yaml): 3 tests x 2 prompts x 2 providers; its `success`
per result is promptfoo's verdict, which our run of the same config must match."""

from __future__ import annotations

import orjson
import polars as pl
import pytest
from conftest import ROOT

import checkllm_batch as cb
from checkllm_batch.load.outputs import read_batches

HERE = ROOT / "tests" / "promptfoo_results"
CONFIG = HERE / "promptfooconfig.yaml"
FILES = ["results.json", "results.jsonl"]


def promptfoo_results() -> list[dict]:
    return orjson.loads((HERE / "results.json").read_bytes())["results"]["results"]


@pytest.mark.parametrize("name", FILES)
def test_rows_carry_output_provider_prompt_vars_latency_cost(name):
    frame = pl.concat([pl.from_arrow(b) for b in read_batches(str(HERE / name), 5)],
                      how="diagonal_relaxed")
    assert frame.height == 12
    first = frame.row(0, named=True)
    assert first["output"] == "The capital of France is Paris."
    assert (first["provider"], first["prompt"]) == ("model-a", "Answer: {{output}}")
    assert first["rendered_prompt"] == "Answer: The capital of France is Paris."
    assert (first["test_id"], first["country"]) == ("capital", "France")
    assert (first["latency_ms"], first["cost"]) == (120, 0.002)
    assert set(frame["output"]) == {"The capital of France is Paris.", "Zürich — 東京", ""}
    assert set(frame["prompt"]) == {"Answer: {{output}}", "short"}


@pytest.mark.parametrize("name", FILES)
def test_verdicts_match_promptfoo(name):
    run = cb.evaluate(CONFIG, HERE / name)
    statuses = run.test_results["status"].to_list()
    assert statuses == ["pass" if r["success"] else "fail" for r in promptfoo_results()]


CASES = [  # (file content, error fragment)
    ('{"results": {"version": 3}}', "expected promptfoo's results file"),
    ("[1, 2]", "expected promptfoo's results file"),
    ("{\n  \"results\": [", "malformed JSON"),
]


@pytest.mark.parametrize("text, error", CASES)
def test_other_json_documents_are_named_errors(tmp_path, text, error):
    path = tmp_path / "out.json"
    path.write_text(text)
    with pytest.raises(cb.InputError, match=error):
        list(read_batches(str(path), 10))


def test_json_array_of_rows(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text('[\n{"output": "ok"},\n{"output": null},\n{"output": "ü"}\n]')
    frame = pl.from_arrow(next(read_batches(str(path), 10)))
    assert frame["output"].to_list() == ["ok", None, "ü"]
