"""The report's first screen, "how did it go": per provider x prompt the pass rate with its
95 % interval drawn as an error bar, the counts (pass, fail, errors, skipped apart), then
the named and derived metrics with their bootstrap intervals, in tables that fit 1280 px."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import polars as pl

from .charts import rate_bar
from .report_html import group_name, html_table, prompt_cell, td
from .wording import number, rate_text, value_text

if TYPE_CHECKING:
    from .database import Results

MAX_METRIC_COLUMNS = 6  # provider x prompt columns of the metrics table; more: one row each


def summary_section(rates: pl.DataFrame, metrics: pl.DataFrame) -> str:
    prompts = rates["prompt"].n_unique() if rates.height else 0
    return ('<section id="summary"><h2>How it went</h2>'
            + _rates_table(rates, prompts) + _metrics_table(metrics, prompts) + "</section>")


def _rates_table(rates: pl.DataFrame, prompts: int) -> str:
    head = ["provider", *(["prompt"] if prompts > 1 else []), "pass rate [95 % interval]",
            "", "cases", "pass", "fail", "errors", "skipped", "mean score"]
    rows = []
    for r in rates.iter_rows(named=True):  # one row per provider x prompt: a handful
        rate = rate_text(r["pass_rate"], r["pass_rate_low"], r["pass_rate_high"], r["errors"])
        rows.append(
            td(r["provider"] if r["provider"] is not None else "(no provider)", "provider")
            + (prompt_cell(r["prompt"]) if prompts > 1 else "")
            + td(rate, "num rate" + (" none" if r["pass_rate"] is None else ""))
            + td(rate_bar(r["pass_rate"], r["pass_rate_low"], r["pass_rate_high"]), "bar",
                 raw=True)
            + "".join(td(number(r[k] or 0), "num " + k) for k in
                      ("cases", "passed", "failed", "errors", "skipped"))
            + td(value_text(r["mean_score"], r.get("mean_score_low"),
                            r.get("mean_score_high")), "num"))
    note = ('<p class="note">Pass rate: cases whose every assertion passed, over the cases '
            "with a verdict (errors count as not passing; skipped cases, outside a judge "
            "sample, are left out), with its 95 % Wilson interval; mean score with its "
            "bootstrap interval (tests resampled).</p>")
    return html_table(head, rows, "summary", ' id="summary-table"') + note


def _metrics_table(metrics: pl.DataFrame, prompts: int) -> str:
    """Named and derived metrics with their intervals: a column per provider (x prompt)
    when there are few, else a row per provider x prompt x metric."""
    if metrics.is_empty():
        return ""
    groups = metrics.select("provider", "prompt").unique(maintain_order=True)
    worded = metrics.with_columns(pl.Series("text", [
        value_text(v, lo, hi) for v, lo, hi in
        metrics.select("value", "value_low", "value_high").iter_rows()]))
    title = "<h3>Metrics</h3>"
    note = ('<p class="note">Named metrics (mean = sum / weight) and derived metrics, each '
            "with its 95 % bootstrap interval (tests resampled).</p>")
    if groups.height > MAX_METRIC_COLUMNS:
        rows = [td(p or "(no provider)") + (prompt_cell(q) if prompts > 1 else "")
                + td(m) + td(k) + td(t, "num") for p, q, m, k, t in
                worded.select("provider", "prompt", "metric", "kind", "text").iter_rows()]
        head = ["provider", *(["prompt"] if prompts > 1 else []), "metric", "kind", "value"]
        return title + html_table(head, rows, "metrics") + note
    keys = list(groups.iter_rows())
    cells: dict[tuple, dict] = {}
    for p, q, m, k, t in worded.select("provider", "prompt", "metric", "kind",
                                       "text").iter_rows():
        cells.setdefault((m, k), {})[(p, q)] = t
    rows = [td(m, "metric") + td(k) + "".join(td(by.get(g, ""), "num") for g in keys)
            for (m, k), by in cells.items()]
    head = ["metric", "kind", *(group_name(p, q, prompts) for p, q in keys)]
    return title + html_table(head, rows, "metrics") + note


def headline(results: Results, run_id: str) -> str:
    """The run in one line: suite, outputs, when, status, cases and how many passed, the
    prompt when there is one."""
    run = results.query("SELECT * FROM run_overview WHERE run_id = ?", [run_id]).row(
        0, named=True)
    judged = (run["cases"] or 0) - (run["skipped"] or 0)
    skipped = (f" · {number(run['skipped'])} skipped (outside the judge sample)"
               if run["skipped"] else "")
    prompts = results.query("SELECT DISTINCT prompt FROM case_rows WHERE run_id = ? LIMIT 2",
                            [run_id])["prompt"].to_list()
    prompt = (f' · prompt <span class="prompt" title="{escape(prompts[0])}">'
              f'{escape(" ".join(prompts[0].split())[:60])}</span>'
              if len(prompts) == 1 and prompts[0] else "")
    rate = rate_text(run["pass_rate"]) if judged else "no verdicts"
    return (f'<p class="meta">suite {escape(str(run["suite_path"]))} · outputs '
            f'{escape(str(run["outputs_path"]))} · started '
            f'{run["started_at"]:%Y-%m-%d %H:%M:%S} · {escape(str(run["status"]))} · '
            f'{number(run["cases"] or 0)} cases · {rate} passed{skipped}{prompt}</p>')
