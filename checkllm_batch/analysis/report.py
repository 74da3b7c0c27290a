"""A self-contained HTML report of one run: summary, charts per provider and metric, score
distributions, failures with reasons, judge cost. Inline CSS and SVG only — no scripts, no
network — so the file can be mailed, archived, or opened offline."""

from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from .charts import Svg, bars, histogram

if TYPE_CHECKING:
    from .results import Results

MAX_FAILURES = 500
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:13px}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.reason,td.output{max-width:380px;overflow-wrap:anywhere;white-space:pre-wrap}
.charts{display:flex;flex-wrap:wrap;gap:1rem 2rem}figure{margin:0}
.meta{color:#555}.note{color:#666;font-style:italic}
"""


def _cell(value: object) -> str:
    if value is None:
        return "<td></td>"
    if isinstance(value, float):
        return f'<td class="num">{value:.4g}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value}</td>'
    if isinstance(value, datetime):
        return f"<td>{value:%Y-%m-%d %H:%M:%S}</td>"
    return f"<td>{escape(str(value))}</td>"


def table(frame: pl.DataFrame, classes: dict[str, str] | None = None) -> str:
    """An HTML table of a frame; `classes` gives a column's cells a CSS class."""
    classes = classes or {}
    head = "".join(f"<th>{escape(c)}</th>" for c in frame.columns)
    rows = []
    for row in frame.iter_rows():  # row-wise: rendering HTML, after all computing is done
        cells = []
        for name, value in zip(frame.columns, row):
            cell = _cell(value)
            if name in classes:
                cell = cell.replace("<td", f'<td class="{classes[name]}"', 1)
            cells.append(cell)
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _label(provider: str | None, prompt: str | None, prompts: int) -> str:
    name = provider if provider is not None else "(no provider)"
    return f"{name} · {prompt}" if prompts > 1 and prompt is not None else name


def pass_rate_chart(rates: pl.DataFrame, title: str = "Test pass rate per provider") -> Svg:
    prompts = rates["prompt"].n_unique()
    return bars([(_label(p, q, prompts), r) for p, q, r in
                 rates.select("provider", "prompt", "pass_rate").iter_rows()],
                title=title, percent=True, max_value=1.0)


def metric_charts(metrics: pl.DataFrame) -> list[Svg]:
    """One bar chart per named or derived metric, a bar per provider (x prompt)."""
    prompts = metrics["prompt"].n_unique() if metrics.height else 0
    charts = []
    for (name, kind), group in metrics.group_by("metric", "kind", maintain_order=True):
        items = [(_label(p, q, prompts), v) for p, q, v in
                 group.select("provider", "prompt", "value").iter_rows()]
        charts.append(bars(items, title=f"{name} ({kind})"))
    return charts


def type_charts(by_type: pl.DataFrame) -> list[Svg]:
    return [bars([(p if p is not None else "(no provider)", r) for p, r in
                  group.select("provider", "pass_rate").iter_rows()],
                 title=f"{name}: pass rate", percent=True, max_value=1.0)
            for (name,), group in by_type.group_by("type", maintain_order=True)]


def score_charts(scores: pl.DataFrame) -> list[Svg]:
    summed = scores.group_by("type", "bin_start").agg(pl.col("results").sum()).sort("type")
    return [histogram(list(group.select("bin_start", "results").iter_rows()),
                      title=f"{name}: scores")
            for (name,), group in summed.group_by("type", maintain_order=True)]


def _figures(charts: list[Svg], name: str) -> str:
    if not charts:
        return '<p class="note">nothing to chart</p>'
    return ('<div class="charts">' + "".join(
        f'<figure class="chart" data-chart="{name}">{svg}</figure>' for svg in charts)
        + "</div>")


def render(results: Results, run_id: str) -> str:
    run = results.query("SELECT * FROM run_overview WHERE run_id = ?", [run_id]).row(0, named=True)
    rates = results.pass_rates(run_id)
    failures = results.query(
        "SELECT * EXCLUDE (run_id) FROM failures WHERE run_id = ? ORDER BY provider NULLS FIRST, "
        f"case_id, assertion_index LIMIT {MAX_FAILURES}", [run_id])
    failed = results.query("SELECT COUNT(*) AS n FROM failures WHERE run_id = ?", [run_id])[0, 0]
    judge = results.judge_costs(run_id)
    metrics = results.metrics(run_id)
    sections = [
        f"<h1>checkllm-batch report — run {escape(run_id)}</h1>",
        (f'<p class="meta">suite {escape(str(run["suite_path"]))} · outputs '
        f'{escape(str(run["outputs_path"]))} · started {run["started_at"]:%Y-%m-%d %H:%M:%S} · '
        f'{escape(str(run["status"]))} · {run["cases"] or 0} cases · '
        f'{_pct(run["pass_rate"])} passed</p>'),
        "<h2>Summary</h2>", table(rates),
        _figures([pass_rate_chart(rates)], "pass-rate"),
        "<h2>Metrics per provider</h2>",
        table(results.metrics_wide(run_id)) if metrics.height else "",
        _figures(metric_charts(metrics), "metric"),
        "<h2>Assertion types</h2>", _figures(type_charts(results.pass_rates(run_id, by="type")
                                                         .filter(~pl.col("metric_only"))), "type"),
        "<h2>Score distributions</h2>", _figures(score_charts(results.scores(run_id)), "scores"),
        f"<h2>Failures ({failed})</h2>", _failures(failures, failed),
        "<h2>Judge cost</h2>", _judge(judge),
    ]
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>checkllm-batch report {escape(run_id)}</title><style>{CSS}</style></head>"
            f"<body>{''.join(sections)}</body></html>")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _failures(failures: pl.DataFrame, total: int) -> str:
    if failures.is_empty():
        return '<p class="note">no failed or errored assertions</p>'
    shown = failures.select(
        "case_id", "provider", "prompt", "test_id", "type", "metric", "status", "score",
        "reason", pl.col("output").str.slice(0, 300))
    more = total - shown.height
    note = (f'<p class="note">{more} more rows: checkllm-batch sql "SELECT * FROM failures '
            f'WHERE run_id = ..."</p>' if more > 0 else "")
    return table(shown, {"reason": "reason", "output": "output"}) + note


def _judge(judge: pl.DataFrame) -> str:
    if judge.is_empty():
        return '<p class="note">no judge calls recorded for this run</p>'
    total = judge.select(pl.col("calls").sum(), pl.col("cost").sum()).row(0)
    return (f"<p>{total[0]} judge calls, total cost {total[1] or 0:.4f}</p>" + table(judge)
            + _figures([bars(list(judge.select(pl.col("model").fill_null("(unknown)"),
                                               "cost").iter_rows()), title="Judge cost per model")],
                       "judge-cost"))


def write_report(results: Results, run_id: str, path: Path) -> Path:
    html = render(results, run_id)
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None
    return path
