"""A short HTML summary of a run (or of a results database's last finished run), for
Jupyter: `Run` and `Results` are shown with it when they end a cell (`_repr_html_`). Pass
rates per provider, and the run's id and status, in a plain table notebooks style."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError

if TYPE_CHECKING:
    from .database import Results
    from .run import Run

COLUMNS = ("provider", "cases", "pass", "fail", "error", "pass_rate")


def run_html(run: Run, title: str = "Run") -> str:
    """The run's id, status and pass / fail / error counts and pass rate per provider."""
    summary = run.summary()
    total, passed = int(summary["cases"].sum()), int(summary["pass"].sum())
    rate = f"{passed / total:.1%}" if total else "no cases"
    head = (f"<p><b>{escape(title)} {escape(run.run_id)}</b> · {escape(run.status)} · "
            f"{total:,} cases · {rate} pass</p>")
    return f"<div>{head}{_table(summary)}</div>"


def results_html(results: Results) -> str:
    """How many runs the database holds, and its last finished run's summary."""
    runs = results.query("SELECT count(*) AS n FROM runs")["n"][0]
    try:
        run = results.run()
    except InputError as e:  # no finished run yet
        return f"<div><p><b>Results</b> · {runs} run(s) · {escape(str(e))}</p></div>"
    return (f"<div><p><b>Results</b> · {runs} run(s); the last finished:</p>"
            f"{run_html(run, 'run')}</div>")


def _table(summary: pl.DataFrame) -> str:
    """Rows of `summary` (Run.summary's columns) as an HTML table, rates as percentages."""
    head = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(c, row[c])}</td>" for c in COLUMNS) + "</tr>"
        for row in summary.iter_rows(named=True))  # a row per provider: a handful
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _cell(column: str, value: object) -> str:
    if value is None:
        return "<i>none</i>" if column == "provider" else ""
    if column == "pass_rate":
        return f"{float(value):.1%}"  # type: ignore[arg-type]
    return escape(f"{value:,}" if isinstance(value, int) else str(value))
