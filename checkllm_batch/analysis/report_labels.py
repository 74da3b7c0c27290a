"""The report's "why the judge disagrees" (`--label VAR`): the judge's agreement with a
person's labels, the corrected estimate when `Results` has one, and the cases where they
disagree: test, vars, output, the judge's reason and the label, filterable by juror and by
direction (the judge too lenient: it passed what the person failed; too strict: the other
way round). The label var is a label, never a var: it is not shown among the vars."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import orjson
import polars as pl

from ..errors import InputError
from .corrected import CAVEAT
from .report_html import html_table, td
from .wording import number, percent, rate_text, value_text

if TYPE_CHECKING:
    from .database import Results

PER_GROUP = 100  # disagreements shown per juror x direction
TEXT_CHARS = 600
DIRECTIONS = {"pass": "judge too lenient", "fail": "judge too strict"}

_DISAGREEMENTS = f"""
    SELECT * FROM (
        SELECT j.case_id, coalesce(c.test_id, c.description, 'case ' || j.case_id) AS test,
               j.provider, j.judge_model, j.type, j.metric, c.vars::VARCHAR AS vars,
               left(j.output, {TEXT_CHARS}) AS output, j.status, j.score,
               left(j.reason, {TEXT_CHARS}) AS reason, j.label,
               row_number() OVER (PARTITION BY j.judge_model, j.status ORDER BY j.case_id) AS k,
               count(*) OVER () AS total
        FROM judge_labels($label) j JOIN cases c USING (run_id, case_id)
        WHERE j.run_id = $run AND NOT j.agrees)
    WHERE k <= {PER_GROUP} ORDER BY judge_model NULLS FIRST, case_id"""


def disagreements(results: Results, run_id: str, label: str) -> pl.DataFrame:
    return results.query(_DISAGREEMENTS, {"label": label, "run": run_id})


def _vars_text(text: str | None, label: str) -> str:
    """The case's vars without the label and promptfoo's rendered prompt."""
    values = orjson.loads(text) if text else {}
    if not isinstance(values, dict):
        return text or ""
    kept = {k: v for k, v in values.items() if k not in (label, "rendered_prompt")}
    return ", ".join(f"{k}: {v if isinstance(v, str) else orjson.dumps(v).decode()}"
                     for k, v in kept.items())


def _options(select_id: str, values: list[str]) -> str:
    return (f'<select id="{select_id}"><option value="">all</option>'
            + "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
            + "</select>")


def _corrected(results: Results, run_id: str, label: str) -> str:
    """The judge's pass rates beside the people's, corrected for the judge's errors with
    the labels (PPI++), each with its 95 % interval, and what the judge was worth in
    labels; where the labels cannot correct (no drawn sample), the refusal in words."""
    try:
        frame = results.corrected_pass_rates(label, run=run_id)
    except InputError as e:
        return f'<p class="note" id="corrected">Corrected pass rates: {escape(str(e))}</p>'
    rows = [td(r["judge_model"] or "(unknown)")
            + td(r["type"] + (f' · {r["metric"]}' if r["metric"] else ""))
            + td(r["provider"] or "") + td(number(r["n_labelled"]), "num")
            + td(number(r["n_judged"]), "num")
            + td(rate_text(r["judge_only"], r["judge_low"], r["judge_high"]), "num")
            + td(rate_text(r["labels_only"], r["labels_low"], r["labels_high"]), "num")
            + td(rate_text(r["corrected"], r["corrected_low"], r["corrected_high"])
                 if r["corrected"] is not None else r["note"], "num corrected")
            + td(_worth(r["n_effective"], r["n_labelled"]), "num")
            for r in frame.iter_rows(named=True)]  # a row per judge x assertion x provider
    return ('<h3 id="corrected">Pass rates: the judge\'s and corrected with the labels</h3>'
            f'<p class="note">The judge\'s rate is what the judge says; corrected is the '
            f"people's rate estimated from the labels and the judge on every case "
            f"(prediction-powered, PPI++), valid although the judge errs; labels "
            f"{escape(frame['labels'][0])}. {escape(CAVEAT)}</p>"
            + html_table(["judge", "assertion", "provider", "labels", "judged",
                          "judge's rate [95 %]", "labels alone [95 %]",
                          "corrected [95 %]", "labels the judge was worth"], rows,
                         "corrected"))


def _worth(effective: float | None, labelled: int) -> str:
    """`120 (x 1.5)`: the labels alone as precise as the corrected estimate."""
    if effective is None or not labelled:
        return "n/a"
    return f"{number(round(effective))} (× {effective / labelled:.2f})"


def _agreement_table(agreement: pl.DataFrame) -> str:
    """Per judge (juror or jury) x graded assertion x provider, worded: kappa with its
    interval, the judge's rates, how often it was too lenient (fp) or too strict (fn)."""
    rows = [td(r["judge_model"] or "(unknown)") + td(r["type"] + (f' · {r["metric"]}'
                                                                  if r["metric"] else ""))
            + td(r["provider"] or "") + td(number(r["n"]), "num")
            + td(percent(r["agreement"]), "num")
            + td(value_text(r["kappa"], r["kappa_low"], r["kappa_high"]), "num")
            + td(percent(r["tpr"]), "num") + td(percent(r["tnr"]), "num")
            + td(number(r["fp"]), "num") + td(number(r["fn"]), "num")
            + td(number(r["errors"]), "num") + td(number(r["bad_labels"]), "num")
            for r in agreement.iter_rows(named=True)]  # a row per judge x assertion x provider
    return html_table(["judge", "assertion", "provider", "n", "agreement",
                       "kappa [95 % interval]", "tpr", "tnr", "too lenient", "too strict",
                       "errors", "bad labels"], rows, "agreement")


def imported_label(results: Results, run_id: str) -> str | None:
    """The name of the labels imported for the run, when there is one name: the report
    shows them without being asked (--label)."""
    names = results.query("SELECT DISTINCT label FROM case_labels WHERE run_id = ?",
                          [run_id])["label"].to_list()
    return names[0] if len(names) == 1 else None


def labels_section(results: Results, run_id: str, label: str) -> str:
    agreement = results.judge_agreement(label, run=run_id)
    shown = disagreements(results, run_id, label)
    total = int(shown["total"][0]) if shown.height else 0
    rows = []
    for r in shown.iter_rows(named=True):  # at most PER_GROUP per juror x direction
        direction = DIRECTIONS.get(r["status"], r["status"])
        rows.append(
            f'<tr data-juror="{escape(r["judge_model"] or "")}" '
            f'data-direction="{escape(direction)}">'
            + td(r["test"], "test") + td(r["provider"] or "")
            + td(_vars_text(r["vars"], label), "vars")
            + td(r["output"], "output") + td(r["judge_model"]) + td(direction)
            + td(f'{r["status"]}: {r["reason"] or ""}', "reason") + td(r["label"], "label")
            + td(f'<button type="button" class="case-link" data-case="{r["case_id"]}">'
                 f'case {r["case_id"]}</button>', raw=True) + "</tr>")
    jurors = sorted({j for j in shown["judge_model"].to_list() if j is not None})
    more = (f" (up to {PER_GROUP} per juror and direction shown; every one: SELECT * FROM "
            f"judge_labels('{escape(label)}') WHERE run_id = '{escape(run_id)}' AND NOT "
            "agrees)") if shown.height < total else ""
    table = html_table(["test", "provider", "vars", "output", "juror", "direction", "judge's verdict",
                        label, ""], rows, "disagreements", ' id="disagreements"')
    return ('<section id="agreement"><h2>Why the judge disagrees with the labels in '
            f"{escape(label)}</h2>"
            '<p class="note">n: cases with both a label and a verdict; kappa: Cohen\'s, with '
            "its 95 % asymptotic interval; tpr / tnr: the judge's pass rate on what the "
            "person passed / fail rate on what the person failed; errors and bad labels "
            "apart.</p>" + _agreement_table(agreement) + _corrected(results, run_id, label)
            + f"<h3>Disagreements: {number(total)}{more}</h3>"
            + ('<div class="controls"><label>juror ' + _options("f-juror", jurors)
               + "</label><label>direction " + _options("f-direction",
                                                        list(DIRECTIONS.values()))
               + '</label><span id="disagreement-count"></span></div>' + table
               if rows else '<p class="note">none: the judge agrees on every labelled case'
               "</p>") + "</section>")
