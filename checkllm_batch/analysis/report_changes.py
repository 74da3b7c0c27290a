"""The report's "what changed" (`--against RUN`): the pass rates and metrics whose change is
significant (a toggle shows every row), each with its interval and its test in words, then
the cases that flipped, each linked to its cell of the matrix."""

from __future__ import annotations

from html import escape

import polars as pl

from .compare import Comparison
from .report_html import html_table, prompt_cell, td
from .wording import bound, level_text, number, p_text, percent, points

MAX_FLIPS = 100  # flipped cases listed (and put in the matrix)


def flips(comparison: Comparison) -> pl.DataFrame:
    """The cases that regressed, then those that improved, at most MAX_FLIPS."""
    return pl.concat([comparison.regressed, comparison.improved]).head(MAX_FLIPS)


def _row(cells: str, significant: bool) -> str:
    cls = "significant" if significant else "unchanged"
    return f'<tr class="{cls}"{"" if significant else " hidden"}>{cells}</tr>'


def _verdict(significant: bool | None, p: float | None, test: str) -> str:
    said = "significant" if significant else "not significant"
    return f"{said}: {test}, {p_text(p)} (Holm-adjusted)"


def _rate_rows(rates: pl.DataFrame, prompts: int) -> list[str]:
    rows = []
    for r in rates.iter_rows(named=True):  # one per provider x prompt
        cells = (td(r["provider"] or "(no provider)") + (prompt_cell(r["prompt"]) if prompts > 1
                                                         else "")
                 + td("pass rate") + td(f'{percent(r["pass_rate_a"])} → '
                                        f'{percent(r["pass_rate_b"])}', "num")
                 + td(f'{points(r["diff"])} points [{bound(r["diff_low"])}, '
                      f'{bound(r["diff_high"])}] ({level_text(r.get("level"))})', "num")
                 + td(_verdict(r["significant"], r["p_adjusted"],
                               f'exact McNemar test on {r["regressed"] + r["improved"]} '
                               "flipped cases")))
        rows.append(_row(cells, bool(r["significant"])))
    return rows


def _metric_rows(metrics: pl.DataFrame, prompts: int) -> list[str]:
    rows = []
    for r in metrics.iter_rows(named=True):  # one per provider x prompt x metric
        cells = (td(r["provider"] or "(no provider)") + (prompt_cell(r["prompt"]) if prompts > 1
                                                         else "")
                 + td(f'{r["metric"]} ({r["kind"]})')
                 + td(f'{number(r["value_a"])} → {number(r["value_b"])}', "num")
                 + td(f'{number(r["diff"])} [{number(r.get("diff_low"))}, '
                      f'{number(r.get("diff_high"))}] ({level_text(r.get("level"))})', "num")
                 + td(_verdict(r.get("significant"), r.get("p_adjusted"),
                               "paired bootstrap")))
        rows.append(_row(cells, bool(r.get("significant"))))
    return rows


def changes_section(comparison: Comparison, flipped: pl.DataFrame) -> str:
    rates, metrics = comparison.pass_rates, comparison.metrics.filter(
        pl.col("metric") != "pass_rate")
    prompts = rates["prompt"].n_unique() if rates.height else 0
    rows = _rate_rows(rates, prompts) + _metric_rows(metrics, prompts)
    significant = sum('class="significant"' in r for r in rows)
    counts = ", ".join(f"{number(n)} {k}" for k, n in comparison.counts().items())
    head = ["provider", *(["prompt"] if prompts > 1 else []), "figure", "A → B",
            "B − A [interval] (its level)", "test"]
    flip_rows = [td(r["test_id"] or "", "test") + td(r["provider"] or "") + td(r["change"])
                 + td(f'{r["status_a"]} → {r["status_b"]}')
                 + td(r["reason_b"] or "", "reason")
                 + td(f'<button type="button" class="case-link" data-case="{r["case_b"]}">'
                      f'case {r["case_b"]}</button>', raw=True)
                 for r in flipped.iter_rows(named=True)]  # at most MAX_FLIPS
    total_flips = comparison.counts()["regressed"] + comparison.counts()["improved"]
    return ('<section id="changes"><h2>What changed since run '
            f"{escape(comparison.run_a)}</h2>"
            f'<p class="meta">{escape(counts)}. {significant} of {len(rows)} pass rates and '
            "metrics changed significantly (Holm-adjusted p below "
            f"{comparison.alpha:g}). Each interval is at the level Holm's procedure tests "
            "its row at, so it excludes 0 exactly when the row is significant.</p>"
            '<label class="toggle"><input type="checkbox" id="show-all-changes"> show every '
            "row, changed or not</label>"
            + html_table(head, rows, "changes", ' id="changes-table"')
            + ('<p class="note" id="no-change">no pass rate or metric changed significantly'
               "</p>" if not significant else "")
            + f"<h3>Cases that flipped: {number(total_flips)}"
            + (f" (the first {MAX_FLIPS})" if total_flips > MAX_FLIPS else "") + "</h3>"
            + (html_table(["test", "provider", "change", "status A → B", "reason (B)", ""],
                          flip_rows, "flips") if flip_rows
               else '<p class="note">no case changed its verdict</p>') + "</section>")
