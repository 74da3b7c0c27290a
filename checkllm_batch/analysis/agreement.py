"""The judge against a person: `judge_agreement` and the cases where they disagree, read
from the store's macros (store/agreement.py) for one run.

A label names labels imported after the run (`labels import`, `Results.add_labels`) or a
var of the run's cases (a dataset column): pass/fail, true/false, yes/no,
1/0, a boolean, or a score read against the assertion's threshold. Kappa's interval is the
asymptotic one (the standard error statsmodels' `cohens_kappa` computes), not a bootstrap:
closed form, so it costs nothing at any size; with few labels (n below ~30) or a kappa near
1 it is too narrow, and the docs say so (docs/judge-audit.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError

if TYPE_CHECKING:
    from .database import Results

ORDER = "judge_model NULLS FIRST, type, metric NULLS FIRST, provider NULLS FIRST"
# what a person reads beside each disagreement: the output, the judge's reason, the label
DISAGREEMENT_COLUMNS = ["case_id", "provider", "prompt", "judge_model", "type", "metric",
                        "output", "status", "score", "reason", "label"]


def _args(label: str, metric: str | None, type_: str | None) -> list:
    if not isinstance(label, str) or not label:
        raise InputError("give the var holding the person's labels (e.g. label='human')")
    return [label, metric, type_]


def agreement(results: Results, run_id: str, label: str, metric: str | None = None,
              type_: str | None = None) -> pl.DataFrame:
    """judge_agreement for one run (run_id left out), its var checked to exist."""
    frame = results.query(
        "SELECT * EXCLUDE (run_id) FROM judge_agreement(?, metric := ?, type := ?) "
        f"WHERE run_id = ? ORDER BY {ORDER}", [*_args(label, metric, type_), run_id])
    if frame.is_empty():
        _check_label(results, run_id, label)
    return frame


def disagreements(results: Results, run_id: str, label: str, metric: str | None = None,
                  type_: str | None = None, limit: int | None = None) -> pl.DataFrame:
    """The labelled cases where the judge's verdict is not the person's (errors apart)."""
    cap = "" if limit is None else f" LIMIT {int(limit)}"
    return results.query(
        f"SELECT {', '.join(DISAGREEMENT_COLUMNS)} FROM judge_labels(?, metric := ?, "
        f"type := ?) WHERE run_id = ? AND NOT agrees ORDER BY {ORDER}, case_id{cap}",
        [*_args(label, metric, type_), run_id])


def _check_label(results: Results, run_id: str, label: str) -> None:
    """No labelled graded verdict: say whether the label is missing (no var, no labels
    imported under that name), or nothing is graded."""
    graded = results.query("SELECT count(*) AS n FROM graded_verdicts WHERE run_id = ?",
                           [run_id])["n"][0]
    if not graded:
        raise InputError(f"run {run_id} has no model-graded assertion: nothing to compare "
                         f"with the labels in {label!r}")
    names = results.query(
        "SELECT DISTINCT unnest(json_keys(vars)) AS name FROM cases WHERE run_id = ? "
        "ORDER BY 1", [run_id])["name"].to_list()
    given = results.query("SELECT DISTINCT label FROM case_labels WHERE run_id = ? ORDER BY 1",
                          [run_id])["label"].to_list()
    if label not in names and label not in given:
        shown = ", ".join(names[:20]) or "none"
        imported = f"; labels imported: {', '.join(given)}" if given else ""
        raise InputError(f"run {run_id}: no var {label!r} holds labels and none were "
                         f"imported under that name (its vars: {shown}{imported})")
