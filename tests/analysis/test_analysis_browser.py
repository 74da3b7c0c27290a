"""The HTML report as a person sees it: rendered by headless Chromium (Debian `chromium`),
no console errors, no network requests, and charts whose bars are drawn to scale.

Skipped when Chromium is missing, unless CHECKLLM_REQUIRE_BROWSER=1 (set by .ci/run,
which installs Chromium), so CI can never pass by skipping it."""

from __future__ import annotations

import os
import shutil

import pytest

from checkllm_batch.analysis import Results

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic"]

if not os.environ.get("CHECKLLM_REQUIRE_BROWSER"):
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install -y chromium)",
                    allow_module_level=True)
    pytest.importorskip("playwright.sync_api")

from playwright.sync_api import sync_playwright  # noqa: E402  (after the skip check)


@pytest.fixture(scope="module")
def rendered(two_runs, tmp_path_factory):
    db, run_a, _ = two_runs
    directory = tmp_path_factory.mktemp("browser")
    path = Results(db).report(directory / "report.html", run_a)
    problems, requests = [], []
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(directory / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1200, "height": 900})
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        charts = page.locator("figure.chart svg").count()
        bars = {name: [page.locator(f'figure[data-chart="{name}"] rect.bar').nth(i).bounding_box()
                       for i in range(page.locator(f'figure[data-chart="{name}"] rect.bar').count())]
                for name in ("pass-rate", "metric", "type", "scores")}
        text = page.inner_text("body")
        page.screenshot(path=str(directory / "report.png"), full_page=True)
        context.close()
    return {"problems": problems, "requests": requests, "charts": charts, "bars": bars,
            "text": text}


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


@pytest.mark.parametrize("words", ["Summary", "Metrics per provider", "Failures (5)",
                                   "Judge cost", "output is null", "Test pass rate per provider"])
def test_sections_are_visible(rendered, words):
    assert words in rendered["text"]
