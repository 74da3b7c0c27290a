"""Run a small suite (as a Python dict) against outputs rows; used by the custom-logic tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import yaml

import checkllm_batch as cb


def write_suite(tmp: Path, suite: dict[str, Any], name: str = "suite.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(suite, allow_unicode=True), encoding="utf-8")
    return path


def run(tmp: Path, asserts: list[dict], rows: list[dict], vars: dict | None = None) -> cb.Run:
    """One test with `asserts`; every row of `rows` is a case of it."""
    path = write_suite(tmp, {"tests": [{"description": "t", "vars": vars or {}, "assert": asserts}]})
    return cb.evaluate(cb.load(path), pl.DataFrame(rows))


def results(tmp: Path, assertion: dict, rows: list[dict], vars: dict | None = None
            ) -> list[dict]:
    """The (status, score, reason) rows of one assertion over `rows`."""
    frame = run(tmp, [assertion], rows, vars).assertion_results
    return frame.select("status", "score", "reason").to_dicts()


def parse_problems(tmp: Path, suite: dict[str, Any]) -> str:
    try:
        cb.load(write_suite(tmp, suite))
    except cb.ConfigError as e:
        return str(e)
    raise AssertionError("expected a ConfigError")
