"""The HTML report as a person debugging a run uses it, in headless Chromium (Debian
`chromium`): charts drawn to scale, the tests x providers matrix filtered by status,
provider, type and metric, searched, a cell opened; no console errors, no network requests.

Skipped when Chromium is missing, unless CHECKLLM_REQUIRE_BROWSER=1 (set by .ci/run,
which installs Chromium), so CI can never pass by skipping it."""

from __future__ import annotations

import duckdb
import pytest
from fixtures.browser import page_of, require_browser

from checkllm_batch.analysis import Results

require_browser()


def _rows(page) -> list[str]:
    return page.locator("#matrix tbody td.test").all_inner_texts()


def _drive(page) -> dict:
    """Use the matrix as a person would; what each step showed."""
    page.click("#show-matrix")  # drawn on demand
    seen = {"all": _rows(page), "columns": page.locator("#matrix thead th").all_inner_texts()}
    page.select_option("#f-status", "fail")
    seen["fail"] = _rows(page)
    seen["fail_cells"] = page.locator("#matrix button.cell.fail:not(.dim)").count()
    page.select_option("#f-provider", label="local")
    seen["fail_local"] = _rows(page)
    page.select_option("#f-provider", "")
    page.select_option("#f-status", "")
    page.select_option("#f-metric", "fp")
    seen["metric_fp"] = _rows(page)
    page.select_option("#f-metric", "")
    page.select_option("#f-type", "not-equals")
    seen["type_not_equals"] = _rows(page)
    page.select_option("#f-type", "")
    page.fill("#f-search", "réunion")  # a var, any case
    seen["search_var"] = _rows(page)
    page.fill("#f-search", "<b>")  # an output (XSS probe), not a var
    seen["search_output"] = _rows(page)
    seen["injected"] = page.locator("#matrix b").count()
    page.fill("#f-search", "")
    page.select_option("#f-status", "fail")
    page.select_option("#f-provider", label="local")
    page.locator("#matrix tbody tr").filter(has_text="t5").locator("button.cell").click()
    seen["panel"] = page.inner_text("#panel")
    seen["first_assertion"] = page.locator("#panel table.asserts tr").nth(1).inner_text()
    page.keyboard.press("Escape")
    seen["panel_hidden"] = page.locator("#panel").is_hidden()
    return seen


@pytest.fixture(scope="module")
def rendered(two_runs, tmp_path_factory):
    db, run_a, _ = two_runs
    directory = tmp_path_factory.mktemp("browser")
    con = duckdb.connect(str(db))  # an output with markup: shown as text, never parsed
    con.execute("UPDATE case_rows SET output = '<b>bold</b> ham' WHERE run_id = ? "
                "AND case_id = 1", [run_a])  # outputs.jsonl: the text is stored
    con.close()
    path = Results(db).report(directory / "report.html", run_a)
    with page_of(path, directory / "profile") as (page, problems, requests):
        charts = page.locator("figure.chart svg").count()
        bars = {name: [page.locator(f'figure[data-chart="{name}"] rect.bar').nth(i).bounding_box()
                       for i in range(page.locator(f'figure[data-chart="{name}"] rect.bar').count())]
                for name in ("pass-rate", "metric", "type", "scores")}
        text = page.inner_text("body")
        matrix = _drive(page)
        matrix["count"] = page.inner_text("#matrix-count")
        page.screenshot(path=str(directory / "report.png"), full_page=True)
    return {"problems": problems, "requests": requests, "charts": charts, "bars": bars,
            "text": text, "matrix": matrix}


def test_no_console_errors_and_no_network(rendered):
    assert rendered["problems"] == []
    assert all(url.startswith("file://") for url in rendered["requests"]), rendered["requests"]


def test_charts_are_drawn(rendered):
    assert rendered["charts"] >= 11  # pass rate, 7 metrics, 1 type (counters apart), 2 scores
    for name, boxes in rendered["bars"].items():
        assert boxes and all(box is not None for box in boxes), name
        assert any(box["width"] > 20 and box["height"] > 5 for box in boxes), name


def test_pass_rate_bars_are_to_scale(rendered):
    # run A pass rates: gpt-bad 3/6, gpt-good 6/6, local 4/6 (providers in that order)
    widths = [box["width"] for box in rendered["bars"]["pass-rate"]]
    assert len(widths) == 3
    assert widths[0] / widths[1] == pytest.approx(0.5, abs=0.01)
    assert widths[2] / widths[1] == pytest.approx(4 / 6, abs=0.01)


@pytest.mark.parametrize("words", ["How it went", "Metrics", "Where it fails",
                                   "Cases: tests × providers", "Judge cost",
                                   "Test pass rate per provider"])
def test_sections_are_visible(rendered, words):
    assert words in rendered["text"]


# Expected from the fixture by hand (classifier/outputs.jsonl, run A): gpt-bad fails t2, t3,
# t5; local fails t4 and t5 (a null output fails equals).
MATRIX = [  # (step, test rows shown)
    ("all", ["t1", "t2", "t3", "t4", "t5", "t6"]),
    ("fail", ["t2", "t3", "t4", "t5"]),
    ("fail_local", ["t4", "t5"]),
    ("metric_fp", ["t2", "t4", "t6"]),  # ham tests carry the fp counter
    ("type_not_equals", ["t1", "t3", "t5"]),  # spam tests carry not-equals (fn)
    ("search_var", ["t4"]),  # vars.text "Réunion demain à 9h ☕"
    ("search_output", ["t2"]),  # the output rewritten with markup above
]


@pytest.mark.parametrize("step, rows", MATRIX)
def test_matrix_filters_and_search(rendered, step, rows):
    assert rendered["matrix"][step] == rows


def test_matrix_counts_its_tests(rendered):
    assert rendered["matrix"]["count"].startswith("2 of 6 tests match")  # t4, t5: local, fail


def test_matrix_has_a_column_per_provider_and_cells_per_case(rendered):
    assert rendered["matrix"]["columns"] == ["test", "vars", "gpt-bad", "gpt-good", "local"]
    assert rendered["matrix"]["fail_cells"] == 5


PANEL = ["t5 — local", "FAIL", "(null output)", "You have been selected!!!",  # vars
         "output is null"]  # the reason


@pytest.mark.parametrize("words", PANEL)
def test_opening_a_cell_shows_its_case(rendered, words):
    assert words in rendered["matrix"]["panel"]
    assert rendered["matrix"]["panel_hidden"]


def test_assertion_values_are_rendered_with_the_vars(rendered):
    # t5's first assertion: equals "{{label}}" (metric accuracy), label = spam
    cells = rendered["matrix"]["first_assertion"].split("\t")
    assert cells[:5] == ["equals", "accuracy", "fail", "0", "spam"], cells


def test_outputs_are_text_never_markup(rendered):
    assert rendered["matrix"]["injected"] == 0
