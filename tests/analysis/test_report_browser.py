"""The report read first screen first, in headless Chromium at 1280 px, on four runs: the
bundled example, a comparison (`--against`), a labelled run of a two-juror jury
(`--label human`) and a run judged on a sample. Each: no horizontal scroll (before and after
the matrix is drawn), every provider's pass rate with its interval on the first screen (the
interval checked against statsmodels' Wilson interval), no console error, no request.
Screenshots are saved in each test's temp folder (first screen and whole page)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest
from fixtures.browser import HEIGHT, horizontal_overflow, page_of, require_browser
from statsmodels.stats.proportion import proportion_confint

import checkllm_batch as cb
from checkllm_batch.analysis import Results

require_browser()

ROOT = Path(__file__).parents[2]
EXAMPLE_SUITE, EXAMPLE_OUTPUTS = ROOT / "data" / "suite.yaml", ROOT / "data" / "outputs.jsonl"


def juror_reply(body: dict) -> str:
    """A judge passing a JSON reply naming a sentiment (one in seven failed at random);
    juror `b` also fails every "neutral" reply, so the two jurors disagree."""
    text = "\n".join(m["content"] for m in body.get("messages", []))
    out = text.split("<Output>")[-1].split("</Output>")[0] if "<Output>" in text else text
    ok = '"sentiment"' in out and int(hashlib.md5(out.encode()).hexdigest(), 16) % 7 != 0
    if body.get("model") == "b" and "neutral" in out:
        ok = False
    return json.dumps({"reason": "names a sentiment" if ok else "no clear sentiment",
                       "pass": ok, "score": float(ok)})


def _audit_suite(tmp: Path, server, judge: str) -> Path:
    from judge_server import KEY_ENV

    path = tmp / "audit.yaml"
    path.write_text((ROOT / "data" / "audit_suite.yaml").read_text(encoding="utf-8")
                    + f"\njudge:\n  {judge}\n  base_url: {server.url}\n"
                    f"  api_key_env: {KEY_ENV}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """(jury database, sampled database): the audit suite judged by two jurors, and by one
    judge on a 10 % sample, through the fake OpenAI-compatible server."""
    from judge_server import KEY_ENV, SECRET, JudgeServer

    tmp = tmp_path_factory.mktemp("judged")
    mp = pytest.MonkeyPatch()
    mp.setenv(KEY_ENV, SECRET)
    server = JudgeServer(answer=juror_reply).start()
    try:
        jury = cb.evaluate(_audit_suite(tmp, server, "models: [a, b]"), EXAMPLE_OUTPUTS,
                           db=tmp / "jury.duckdb")
        jury.con.close()
        sampled = cb.evaluate(_audit_suite(tmp, server, "model: a"), EXAMPLE_OUTPUTS,
                              db=tmp / "sampled.duckdb", judge_sample="10%")
        sampled.con.close()
    finally:
        server.stop()
        mp.undo()
    return tmp / "jury.duckdb", tmp / "sampled.duckdb"


def _look(path: Path, folder: Path, steps=None) -> dict:
    """Open the report as a reader would: the first screen, then `steps(page, seen)`, then
    the matrix drawn; what each showed, with screenshots in `folder`."""
    with page_of(path, folder / "profile") as (page, problems, requests):
        seen = {"overflow": horizontal_overflow(page),
                "rows": page.locator("#summary-table tbody tr").all(),
                "note": page.inner_text("#matrix-note")}
        seen["first_screen"] = [
            (r.locator("td.provider").inner_text(), r.locator("td.rate").inner_text(),
             r.bounding_box()["y"] + r.bounding_box()["height"]) for r in seen.pop("rows")]
        page.screenshot(path=str(folder / "first-screen.png"))
        if steps:
            steps(page, seen)
        if page.is_visible("#show-matrix"):  # a step may have drawn it already
            page.click("#show-matrix")
        seen["overflow_matrix"] = horizontal_overflow(page)
        seen["matrix_count"] = page.inner_text("#matrix-count")
        page.screenshot(path=str(folder / "whole.png"), full_page=True)
    seen["problems"], seen["requests"] = problems, requests
    return seen


def _expected_rates(db: Path) -> dict[str, str]:
    """Each provider's pass rate and Wilson interval, from the stored verdicts by
    statsmodels (a run without a sample)."""
    con = duckdb.connect(str(db), read_only=True)
    rows = con.sql("SELECT c.provider, count(*) FILTER (t.status = 'pass'), count(*) "
                   "FROM case_rows c JOIN test_results t USING (run_id, case_id) "
                   "GROUP BY ALL").fetchall()
    con.close()
    expected = {}
    for provider, passed, n in rows:
        low, high = proportion_confint(passed, n, method="wilson")
        expected[provider] = f"{100 * passed / n:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"
    return expected


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    folder = tmp_path_factory.mktemp("example")
    run = cb.evaluate(EXAMPLE_SUITE, EXAMPLE_OUTPUTS, db=folder / "r.duckdb")
    run.con.close()
    path = Results(folder / "r.duckdb").report(folder / "report.html")
    return folder / "r.duckdb", _look(path, folder)


@pytest.fixture(scope="module")
def compared(two_runs, tmp_path_factory):
    db, run_a, run_b = two_runs
    folder = tmp_path_factory.mktemp("compared")
    path = Results(db).report(folder / "report.html", run_b, against=run_a)

    def steps(page, seen):
        seen["shown_changes"] = page.locator("#changes-table tbody tr:visible").count()
        seen["all_changes"] = page.locator("#changes-table tbody tr").count()
        page.check("#show-all-changes")
        seen["shown_after_toggle"] = page.locator("#changes-table tbody tr:visible").count()
        seen["flips"] = page.locator("table.flips tbody tr").all_inner_texts()
        page.locator("table.flips button.case-link").first.click()  # to the matrix
        seen["panel"] = page.inner_text("#panel")
        seen["focused"] = page.locator("#matrix tr.focus td.test").all_inner_texts()
        page.keyboard.press("Escape")
    return db, _look(path, folder, steps)


@pytest.fixture(scope="module")
def jury(judged, tmp_path_factory):
    db = judged[0]
    folder = tmp_path_factory.mktemp("jury")
    path = Results(db).report(folder / "report.html", label="human")

    def steps(page, seen):
        rows = "#disagreements tbody tr"
        seen["disagreements"] = page.locator(rows).count()
        page.select_option("#f-juror", "b")
        seen["jurors_b"] = {r.get_attribute("data-juror")
                            for r in page.locator(f"{rows}:visible").all()}
        page.select_option("#f-direction", "judge too lenient")
        seen["b_lenient"] = page.locator(f"{rows}:visible").all_inner_texts()
        seen["disagreement_head"] = page.locator("#disagreements thead th").all_inner_texts()
        page.screenshot(path=str(tmp_path_factory.getbasetemp() / "jury-disagreements.png"))
    return db, _look(path, folder, steps)


@pytest.fixture(scope="module")
def sampled(judged, tmp_path_factory):
    db = judged[1]
    folder = tmp_path_factory.mktemp("sampled")
    path = Results(db).report(folder / "report.html")

    def filter_skipped(page, seen):
        page.click("#show-matrix")
        page.select_option("#f-status", "skipped")
        seen["skipped_cells"] = page.locator("#matrix button.cell.skipped:not(.dim)").count()
        seen["skipped_count"] = page.inner_text("#matrix-count")
        seen["other_cells"] = page.locator(
            "#matrix button.cell:not(.skipped):not(.dim)").count()
        seen["skipped_counts"] = page.locator("#summary-table td.skipped").all_inner_texts()
        page.select_option("#f-status", "")
    return db, _look(path, folder, filter_skipped)


REPORTS = ["example", "compared", "jury", "sampled"]


@pytest.mark.parametrize("name", REPORTS)
def test_fits_1280_px_with_no_error_and_no_request(name, request):
    _, seen = request.getfixturevalue(name)
    assert (seen["overflow"], seen["overflow_matrix"]) == (0, 0)
    assert seen["problems"] == []
    assert all(url.startswith("file://") for url in seen["requests"]), seen["requests"]


@pytest.mark.parametrize("name", ["example", "jury"])
def test_first_screen_shows_every_providers_pass_rate_with_its_interval(name, request):
    db, seen = request.getfixturevalue(name)
    shown = {provider: rate for provider, rate, _ in seen["first_screen"]}
    assert shown == _expected_rates(db)
    assert all(bottom <= HEIGHT for *_, bottom in seen["first_screen"])


def test_compared_runs_first_screen_is_run_b(compared, two_runs):
    db, run_a, run_b = two_runs
    # run B by hand (classifier/outputs_b.jsonl): gpt-bad 3/6, gpt-good 5/6, local 6/6
    shown = {p: r for p, r, _ in compared[1]["first_screen"]}
    assert all(bottom <= HEIGHT for *_, bottom in compared[1]["first_screen"])
    for provider, passed in (("gpt-bad", 3), ("gpt-good", 5), ("local", 6)):
        low, high = proportion_confint(passed, 6, method="wilson")
        assert shown[provider] == (f"{100 * passed / 6:.1f} % [{100 * low:.1f}, "
                                   f"{100 * high:.1f}]")


def test_comparison_shows_only_significant_rows_until_asked(compared):
    seen = compared[1]
    # nothing in these six-case runs is significant: no row until the toggle shows all
    # (3 pass rates and 7 metrics x 3 providers)
    assert (seen["shown_changes"], seen["all_changes"], seen["shown_after_toggle"]) == (
        0, 24, 24)
    # run A -> B by hand: gpt-good regressed on t3; local improved on t4 and t5
    assert sorted((r.split("\t")[0], r.split("\t")[2]) for r in seen["flips"]) == [
        ("t3", "regressed"), ("t4", "improved"), ("t5", "improved")]


def test_a_flipped_case_links_to_its_cell_in_the_matrix(compared):
    seen = compared[1]
    assert seen["focused"] == ["t3"]
    assert "t3 — gpt-good" in seen["panel"]


def test_labelled_run_has_one_matrix_row_per_test(jury):
    # 120 tests in data/audit_suite.yaml; the `human` label on some rows is not a var
    assert jury[1]["matrix_count"].startswith("120 of 120 tests match")


def test_disagreements_filter_by_juror_and_direction(jury):
    db, seen = jury
    assert seen["disagreement_head"][:4] == ["test", "provider", "vars", "output"]
    assert "human" in seen["disagreement_head"] and "judge's verdict" in seen["disagreement_head"]
    assert seen["jurors_b"] == {"b"}
    con = duckdb.connect(str(db), read_only=True)
    [(lenient,)] = con.sql("SELECT count(*) FROM judge_labels('human') WHERE judge_model = 'b' "
                           "AND NOT agrees AND status = 'pass'").fetchall()
    con.close()
    assert len(seen["b_lenient"]) == lenient > 0
    assert all("judge too lenient" in row and "\tfail\t" in row for row in seen["b_lenient"])


def test_skipped_is_counted_apart(sampled):
    db, seen = sampled
    con = duckdb.connect(str(db), read_only=True)
    # a matrix row: a test with its vars (here the `human` column is a var: no --label)
    [(failed, errors, skipped, bad_tests, tests, with_skipped)] = con.sql("""
        SELECT count(*) FILTER (status = 'fail'), count(*) FILTER (status = 'error'),
               count(*) FILTER (status = 'skipped'),
               count(DISTINCT (test_index, vars::VARCHAR)) FILTER (status IN ('fail', 'error')),
               count(DISTINCT (test_index, vars::VARCHAR)),
               count(DISTINCT (test_index, vars::VARCHAR)) FILTER (status = 'skipped')
        FROM test_results JOIN cases USING (run_id, case_id)""").fetchall()
    per_provider = dict(con.sql("SELECT provider, count(*) FILTER (status = 'skipped') FROM "
                                "test_results JOIN case_rows USING (run_id, case_id) "
                                "GROUP BY ALL").fetchall())
    con.close()
    assert 0 < failed < skipped
    assert seen["note"].startswith(f"{bad_tests} of {tests} tests have a failed or errored case "
                                   f"(360 cases: {failed} failed, {errors} errors, "
                                   f"{skipped} skipped)")
    # the status filter: skipped cells only
    assert seen["skipped_cells"] > 0 and seen["other_cells"] == 0
    assert seen["skipped_count"].startswith(f"{with_skipped} of {tests} tests match")
    assert sorted(int(n) for n in seen["skipped_counts"]) == sorted(per_provider.values())
