"""A self-contained HTML report of one run, read first screen first: how it went (pass
rates with their intervals, counts with errors and skipped apart, metrics), what changed
since another run (`against`), where it fails (the lowest slices, the common reasons, then
the tests x providers matrix, drawn on demand), why the judge disagrees with a person's
labels (`label`), then the charts and the judge's cost. Inline CSS, SVG and script
(report.js): nothing fetched, so the file can be mailed, archived, or opened offline.
Aggregates cover every case; the matrix holds a bounded sample (cases_view.py), so a run of
a million cases still makes a small page."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from .cases_view import MAX_TESTS, cases_document, script_json
from .charts import Svg, bars, histogram
from .report_changes import changes_section, flips
from .report_failing import failing_section, reasons, slices
from .report_html import frame_table
from .report_labels import imported_label, labels_section
from .report_summary import headline, summary_section
from .wording import label, number

if TYPE_CHECKING:
    from .database import Results

HERE = Path(__file__).parent
SCRIPT = (HERE / "report.js").read_text(encoding="utf-8")
CSS = (HERE / "report.css").read_text(encoding="utf-8")


def _bounds(frame: pl.DataFrame, low: str, high: str) -> list | None:
    return list(frame.select(low, high).iter_rows()) if low in frame.columns else None


def pass_rate_chart(rates: pl.DataFrame, title: str = "Test pass rate per provider "
                    "(error bars: 95 % Wilson, finite-population on a sample)") -> Svg:
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


def render(results: Results, run_id: str, against: str | None = None,
           label: str | None = None, by_vars: tuple[str, ...] = ()) -> str:
    """The report's HTML; `by_vars` are vars whose values are slices of "where it fails"."""
    db = results.con.sql("SELECT path FROM duckdb_databases() "
                         "WHERE database_name = current_database()").fetchall()[0][0] or ":memory:"
    rates, metrics = results.pass_rates(run_id), results.metrics(run_id)
    common = reasons(results, run_id)
    focus = common["example"].to_list()
    changes = ""
    if against is not None:
        comparison = results.compare(against, run_id)
        flipped = flips(comparison)
        changes = changes_section(comparison, flipped)
        focus += flipped["case_b"].to_list()
    label = label if label is not None else imported_label(results, run_id)
    labels = (label,) if label is not None else ()
    if label is not None:
        agreement = labels_section(results, run_id, label)
        focus += [int(c) for c in _linked(agreement)]
    cases = cases_document(results, run_id, labels=labels, focus=focus)
    sections = [
        f"<h1>checkllm-batch report — run {escape(run_id)}</h1>", headline(results, run_id),
        summary_section(rates, metrics),
        changes,
        failing_section(slices(results, run_id, by_vars), common),
        f'<h3 id="cases">Cases: tests × providers</h3>{_matrix(cases, db)}',
        agreement if label is not None else "",
        '<section id="charts"><h2>Charts</h2>',
        _figures([pass_rate_chart(rates)], "pass-rate"),
        _figures(metric_charts(metrics), "metric"),
        "<h3>Assertion types</h3>", _figures(type_charts(
            results.pass_rates(run_id, by="type").filter(~pl.col("metric_only"))), "type"),
        "<h3>Score distributions</h3>", _figures(score_charts(results.scores(run_id)), "scores"),
        "<h3>Judge cost</h3>", _judge(results.judge_costs(run_id)), "</section>",
    ]
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width">'
            f"<title>checkllm-batch report {escape(run_id)}</title><style>{CSS}</style></head>"
            f"<body>{''.join(sections)}"
            f'<script type="application/json" id="cases-data">{script_json(cases)}</script>'
            f"<script>{SCRIPT}</script></body></html>")


def _linked(html: str) -> list[str]:
    """The case ids a section's links name (data-case="...")."""
    return re.findall(r'data-case="(\d+)"', html)


def _matrix(cases: dict, db: str) -> str:
    """The matrix's note, controls, table and case panel; report.js draws it when asked."""
    t = cases["totals"]
    note = (f'{number(t["bad_tests"])} of {number(t["tests"])} tests have a failed or errored '
            f'case ({number(t["cases"])} cases: {number(t["failed"])} failed, '
            f'{number(t["errors"])} errors, {number(t["skipped"])} skipped).')
    if cases["shown"] < t["tests"]:
        query = (f"SELECT * FROM case_results WHERE run_id = '{cases['run']}' "
                 "AND status IN ('fail', 'error')")
        note += (f" The matrix holds {cases['shown']} of them (at most {MAX_TESTS}: those "
                 "the sections above link to and those with a failure or error first, then "
                 "a random sample); every case is in the database: checkllm-batch sql --db "
                 f'{db} "{query}"')
    statuses = "".join(f'<option value="{s}">{s}</option>'
                       for s in ("fail", "error", "skipped", "pass"))
    return (f'<p class="note" id="matrix-note">{escape(note)}</p>'
            '<button id="show-matrix" type="button">Show the matrix</button>'
            '<div id="matrix-area" hidden><div class="controls">'
            f'<label>status <select id="f-status"><option value="">all</option>{statuses}'
            '</select></label>'
            '<label>provider <select id="f-provider"><option value="">all</option></select>'
            '</label><label>type <select id="f-type"><option value="">all</option></select>'
            '</label><label>metric <select id="f-metric"><option value="">all</option>'
            '</select></label><label>sort <select id="f-order"><option value="run">as run'
            '</option><option value="failing">most failing first</option></select></label>'
            '<label>search <input id="f-search" type="search" '
            'placeholder="outputs and vars"></label><span id="matrix-count"></span></div>'
            '<table id="matrix"></table><button id="more" type="button" hidden>more</button>'
            '</div><aside id="panel" hidden><button id="panel-close" type="button">close ✕'
            '</button><div id="panel-body"></div></aside>')


def _judge(judge: pl.DataFrame) -> str:
    if judge.is_empty():
        return '<p class="note">no judge calls recorded for this run</p>'
    total = judge.select(pl.col("calls").sum(), pl.col("cost").sum()).row(0)
    return (f"<p>{total[0]} judge calls, total cost {number(total[1] or 0)}</p>" + frame_table(judge)
            + _figures([bars(list(judge.select(pl.col("model").fill_null("(unknown)"),
                                               "cost").iter_rows()), title="Judge cost per model")],
                       "judge-cost"))


def write_report(results: Results, run_id: str, path: Path, against: str | None = None,
                 label: str | None = None, by_vars: tuple[str, ...] = ()) -> Path:
    html = render(results, run_id, against, label, by_vars)
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None
    return path
