"""Shared helpers: evaluate a suite (as a dict) against rows of outputs, in memory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

import checkllm_batch as cb

ROOT = Path(__file__).resolve().parent.parent


def write_suite(tmp_path: Path, suite: dict | str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(suite if isinstance(suite, str) else yaml.safe_dump(suite, sort_keys=False))
    return path


def run(tmp_path: Path, suite: dict | str, rows: list[dict] | None, **kwargs: Any) -> cb.Run:
    frame = pl.DataFrame(rows, infer_schema_length=None) if rows is not None else None
    return cb.evaluate(write_suite(tmp_path, suite), frame, **kwargs)


def verdicts(tmp_path: Path, assertion: dict, outputs: list, **vars: list) -> list[tuple]:
    """(status, score) of one assertion on each output, in order."""
    rows = [{"output": o, **{k: v[i] for k, v in vars.items()}} for i, o in enumerate(outputs)]
    result = run(tmp_path, {"defaultTest": {"assert": [assertion]}}, rows)
    frame = result.assertion_results.sort("case_id")
    return list(zip(frame["status"].to_list(), frame["score"].to_list()))


@pytest.fixture
def judge_server(request, monkeypatch):
    """A local OpenAI-compatible judge on a free port, its key in the environment; options
    by indirect parametrize."""
    from judge_server import KEY_ENV, SECRET, JudgeServer

    monkeypatch.setenv(KEY_ENV, SECRET)
    server = JudgeServer(**(getattr(request, "param", None) or {})).start()
    yield server
    server.stop()


@pytest.fixture
def check(tmp_path):
    """check(assertion, output, **vars) -> (status, score) for one output."""

    def one(assertion: dict, output: Any, **vars: Any) -> tuple:
        return verdicts(tmp_path, assertion, [output], **{k: [v] for k, v in vars.items()})[0]

    return one


# --- a real OpenAI-compatible judge: llama.cpp's llama-server (tests/fixtures/realserver/) ---------


def _real_server_required() -> bool:
    """Under CI (or tests/run.sh) a missing llama-server fails the tests: CI must never pass
    by skipping them. Elsewhere they skip, saying how to prepare the server."""
    return bool(os.environ.get("CHECKLLM_REQUIRE_JUDGE_SERVER")) or os.environ.get("CI") == "true"


def _prepared(path: Path) -> Path:
    if path.exists():
        return path
    why = (f"{path} is missing: prepare llama-server and its models with "
           "`python tests/fixtures/realserver/prepare.py` (tests/run.sh does, once per machine)")
    if _real_server_required():
        pytest.fail(why)
    pytest.skip(why)


def _serve(model: Path):
    from fixtures.realserver import prepare
    from fixtures.realserver.server import LlamaServer

    server = LlamaServer(_prepared(prepare.server_path()), model).start()
    return server


@pytest.fixture(scope="session")
def tiny_server():
    """llama-server with the tiny random model: meaningless replies, fast protocol checks."""
    from fixtures.realserver import prepare

    _prepared(prepare.vocab_path())
    server = _serve(prepare.ensure_tiny_model())  # written from the cached vocab, no download
    yield server
    server.close()


@pytest.fixture(scope="session")
def smol_server():
    """llama-server with SmolLM2-135M-Instruct: a real instruction-tuned model's replies."""
    from fixtures.realserver import prepare

    server = _serve(_prepared(prepare.smollm2_path()))
    yield server
    server.close()


# a results database with two runs of a classifier suite (analysis and cli tests)
CLASSIFIER = ROOT / "tests" / "analysis" / "classifier"


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory) -> tuple[Path, str, str]:
    """(database, run A, run B): run B regresses gpt-good on t3, improves local on t4, t5."""
    db = tmp_path_factory.mktemp("analysis") / "results.duckdb"
    run_a = cb.evaluate(CLASSIFIER / "suite.yaml", CLASSIFIER / "outputs.jsonl", db=db)
    run_a.con.close()
    run_b = cb.evaluate(CLASSIFIER / "suite.yaml", CLASSIFIER / "outputs_b.jsonl", db=db)
    run_b.con.close()
    return db, run_a.run_id, run_b.run_id


@pytest.fixture()
def label_suite(tmp_path) -> Path:
    """A suite with no inline tests: each row is a case, its `label` column the gold label."""
    path = tmp_path / "suite.yaml"
    path.write_text('defaultTest:\n  assert:\n    - type: equals\n      value: "{{label}}"\n')
    return path


@pytest.fixture()
def labelled_run(label_suite):
    """Evaluate columns (provider, output, label, ...) as rows of the label suite."""
    def run(**columns) -> cb.Run:
        return cb.evaluate(label_suite, pl.DataFrame(columns))
    return run
