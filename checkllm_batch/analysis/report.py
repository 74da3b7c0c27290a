"""A self-contained HTML report of one run, the place to debug it: summary, charts per
provider and metric, score distributions, judge cost, and a tests x providers matrix with
filters (status, provider, type, metric), search over outputs and vars, and each case's
output, rendered prompt, vars, rendered assertion values and reasons. Inline CSS, SVG and
script (report.js) — nothing fetched — so the file can be mailed, archived, or opened
offline. Aggregates cover every case; the matrix holds a bounded sample (cases_view.py)."""

from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from .cases_view import MAX_TESTS, cases_document, script_json
from .charts import Svg, bars, histogram
from .wording import PASS_RATE_HEADING, label, pass_rate_lines

if TYPE_CHECKING:
    from .database import Results

SCRIPT = (Path(__file__).parent / "report.js").read_text(encoding="utf-8")
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:13px}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.reason,td.output{max-width:380px;overflow-wrap:anywhere;white-space:pre-wrap}
.charts{display:flex;flex-wrap:wrap;gap:1rem 2rem}figure{margin:0}
.meta{color:#555}.note{color:#666;font-style:italic}
ul.comparison li.significant{font-weight:600;color:#a12}ul.comparison li.noise{color:#444}
.controls{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;margin:.5rem 0}
.controls label{font-size:13px}#f-search{min-width:16rem}
#matrix td{max-width:300px}#matrix td.vars{font-size:12px;color:#444;overflow-wrap:anywhere;max-width:260px}
button.cell{display:block;width:100%;text-align:left;border:1px solid #ccc;border-radius:4px;
background:#fff;padding:.2rem .35rem;margin:.1rem 0;cursor:pointer;font:inherit;font-size:12px}
button.cell.pass{border-left:5px solid #3ca951}button.cell.fail{border-left:5px solid #ff725c}
button.cell.error{border-left:5px solid #efb118}button.cell.dim{opacity:.35}
.badge{font-weight:600;margin-right:.4rem}.preview{color:#333;overflow-wrap:anywhere}
#panel{position:fixed;top:0;right:0;bottom:0;width:min(640px,95vw);background:#fff;overflow:auto;
box-shadow:-4px 0 16px rgba(0,0,0,.2);padding:1rem 1.2rem;z-index:10}
#panel pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f7f9;padding:.4rem;margin:.2rem 0}
#panel h4{margin:.8rem 0 .1rem}.status-line.fail{color:#c0392b}.status-line.error{color:#a66f00}
.status-line.pass{color:#2a7a3b}table.asserts td.value{max-width:160px;overflow-wrap:anywhere}
table.asserts tr.fail td.status{color:#c0392b}table.asserts tr.error td.status{color:#a66f00}
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


def _bounds(frame: pl.DataFrame, low: str, high: str) -> list | None:
    return list(frame.select(low, high).iter_rows()) if low in frame.columns else None


def pass_rate_chart(rates: pl.DataFrame, title: str = "Test pass rate per provider "
                    "(error bars: 95 % Wilson interval)") -> Svg:
    prompts = rates["prompt"].n_unique()
    return bars([(label(p, q, prompts), r) for p, q, r in
                 rates.select("provider", "prompt", "pass_rate").iter_rows()],
                title=title, percent=True, max_value=1.0,
                errors=_bounds(rates, "pass_rate_low", "pass_rate_high"))


def metric_charts(metrics: pl.DataFrame) -> list[Svg]:
    """One bar chart per named or derived metric, a bar per provider (x prompt), with its
    bootstrap interval as an error bar when `metrics` has one."""
    prompts = metrics["prompt"].n_unique() if metrics.height else 0
    charts = []
    for (name, kind), group in metrics.group_by("metric", "kind", maintain_order=True):
        items = [(label(p, q, prompts), v) for p, q, v in
                 group.select("provider", "prompt", "value").iter_rows()]
        errors = _bounds(group, "value_low", "value_high")
        peak = max([abs(v) for _, v in items if v is not None]
                   + [abs(h) for _, h in errors or [] if h is not None] + [1.0])
        charts.append(bars(items, title=f"{name} ({kind})", max_value=peak,  # 0..1 at least
                           errors=errors))
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


def _comparison(results: Results, against: str | None, run_id: str) -> list[str]:
    """The section comparing run `against` (A) with this run (B): each pass rate's change in
    words, significant ones marked, and every metric's change with its interval."""
    if against is None:
        return []
    comparison = results.compare(against, run_id)
    items = "".join(
        f'<li class="{"significant" if significant else "noise"}">{escape(line)}</li>'
        for line, significant in zip(pass_rate_lines(comparison.pass_rates),
                                     comparison.pass_rates["significant"]))
    counts = ", ".join(f"{n} {k}" for k, n in comparison.counts().items())
    return [f"<h2>Compared with run {escape(comparison.run_a)}</h2>",
            f'<p class="meta">{escape(counts)}. '
            f'{escape(PASS_RATE_HEADING.format(alpha=comparison.alpha))}</p>'
            f'<ul class="comparison">{items}</ul>',
            table(comparison.metrics.filter(pl.col("metric") != "pass_rate"))]


MAX_DISAGREEMENTS = 200


def _agreement(results: Results, label: str | None, run_id: str) -> list[str]:
    """The section setting the judge against a person's labels (the var `label`): the
    agreement table, then each disagreeing case's output, judge's reason and label."""
    if label is None:
        return []
    table_ = results.judge_agreement(label, run=run_id)
    shown = results.judge_disagreements(label, run=run_id, limit=MAX_DISAGREEMENTS).select(
        "case_id", "provider", "judge_model", "type", "metric", "output", "status", "reason",
        "label")
    total = int(table_.select(pl.col("fn").sum() + pl.col("fp").sum()).item() or 0)
    more = (f" (the first {MAX_DISAGREEMENTS}; every one: SELECT * FROM judge_labels("
            f"'{label}') WHERE run_id = '{run_id}' AND NOT agrees)"
            if total > shown.height else "")
    return [f'<h2 id="agreement">Judge against the labels in {escape(label)}</h2>',
            '<p class="note">n: cases with both a label and a verdict; kappa: Cohen\'s, with '
            "its 95 % asymptotic interval; tpr / tnr: the judge's pass rate on what the "
            "person passed / fail rate on what the person failed; errors and bad labels "
            "apart.</p>", table(table_.with_columns(pl.col(pl.Float64).round(4))),
            f"<h3>Disagreements: {total}{escape(more)}</h3>",
            table(shown, {"output": "output", "reason": "reason"}) if shown.height
            else '<p class="note">none: the judge agrees on every labelled case</p>']


def render(results: Results, run_id: str, against: str | None = None,
           label: str | None = None) -> str:
    db = results.con.sql("SELECT path FROM duckdb_databases() "
                         "WHERE database_name = current_database()").fetchall()[0][0] or ":memory:"
    run = results.query("SELECT * FROM run_overview WHERE run_id = ?", [run_id]).row(0, named=True)
    rates = results.pass_rates(run_id)
    judge = results.judge_costs(run_id)
    metrics = results.metrics(run_id)
    cases = cases_document(results, run_id)
    sections = [
        f"<h1>checkllm-batch report — run {escape(run_id)}</h1>",
        (f'<p class="meta">suite {escape(str(run["suite_path"]))} · outputs '
        f'{escape(str(run["outputs_path"]))} · started {run["started_at"]:%Y-%m-%d %H:%M:%S} · '
        f'{escape(str(run["status"]))} · {run["cases"] or 0} cases · '
        f'{_pct(run["pass_rate"])} passed</p>'),
        "<h2>Summary</h2>", table(rates),
        _figures([pass_rate_chart(rates)], "pass-rate"),
        *_comparison(results, against, run_id),
        *_agreement(results, label, run_id),
        f"<h2>Cases: tests × providers</h2>{_matrix(cases, db)}",
        "<h2>Metrics per provider</h2>",
        table(results.metrics_wide(run_id)) if metrics.height else "",
        ('<p class="note">value_low, value_high: 95 % bootstrap interval (tests '
         'resampled)</p>' + table(metrics.select("provider", "prompt", "metric", "kind",
                                                 "value", "value_low", "value_high"))
         if metrics.height else ""),
        _figures(metric_charts(metrics), "metric"),
        "<h2>Assertion types</h2>", _figures(type_charts(results.pass_rates(run_id, by="type")
                                                         .filter(~pl.col("metric_only"))), "type"),
        "<h2>Score distributions</h2>", _figures(score_charts(results.scores(run_id)), "scores"),
        "<h2>Judge cost</h2>", _judge(judge),
    ]
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>checkllm-batch report {escape(run_id)}</title><style>{CSS}</style></head>"
            f"<body>{''.join(sections)}"
            f'<script type="application/json" id="cases-data">{script_json(cases)}</script>'
            f"<script>{SCRIPT}</script></body></html>")


def _matrix(cases: dict, db: str) -> str:
    """The matrix's controls, table and case panel; report.js fills them from the data."""
    totals = cases["totals"]
    note = (f'{totals["bad_tests"]} of {totals["tests"]} tests have a failed or errored case '
            f'({totals["cases"]} cases).')
    if cases["shown"] < totals["tests"]:
        query = (f"SELECT * FROM case_results WHERE run_id = '{cases['run']}' "
                 "AND status <> 'pass'")
        note += (f" The matrix holds {cases['shown']} of them (at most {MAX_TESTS}: those "
                 "with a failure or error first, then a random sample); every case is in the "
                 f'database: checkllm-batch sql --db {db} "{query}"')
    return (f'<p class="note" id="matrix-note">{escape(note)}</p>'
            '<div class="controls">'
            '<label>status <select id="f-status"><option value="">all</option>'
            '<option value="fail">fail</option><option value="error">error</option>'
            '<option value="pass">pass</option></select></label>'
            '<label>provider <select id="f-provider"><option value="">all</option></select>'
            '</label><label>type <select id="f-type"><option value="">all</option></select>'
            '</label><label>metric <select id="f-metric"><option value="">all</option>'
            '</select></label><label>sort <select id="f-order"><option value="run">as run'
            '</option><option value="failing">most failing first</option></select></label>'
            '<label>search <input id="f-search" type="search" '
            'placeholder="outputs and vars"></label><span id="matrix-count"></span></div>'
            '<table id="matrix"></table><button id="more" type="button" hidden>more</button>'
            '<aside id="panel" hidden><button id="panel-close" type="button">close ✕</button>'
            '<div id="panel-body"></div></aside>')


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _judge(judge: pl.DataFrame) -> str:
    if judge.is_empty():
        return '<p class="note">no judge calls recorded for this run</p>'
    total = judge.select(pl.col("calls").sum(), pl.col("cost").sum()).row(0)
    return (f"<p>{total[0]} judge calls, total cost {total[1] or 0:.4f}</p>" + table(judge)
            + _figures([bars(list(judge.select(pl.col("model").fill_null("(unknown)"),
                                               "cost").iter_rows()), title="Judge cost per model")],
                       "judge-cost"))


def write_report(results: Results, run_id: str, path: Path, against: str | None = None,
                 label: str | None = None) -> Path:
    html = render(results, run_id, against, label)
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None
    return path
