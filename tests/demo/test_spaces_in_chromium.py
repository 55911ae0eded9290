"""The Spaces in headless Chromium: each one explains itself at 1400x1000 (the card, the
example prefilled, Compute above the fold, the results with their meanings and intervals in
view), and a click while a computation runs is computed after it, not dropped."""

import os
import re
import shutil
import time

import pytest
from conftest import VIEWPORT
from space_apps import launch

from opinion_metrics.demo import comparing

pytest.importorskip("gradio")

from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("name", [*FAMILIES, "opinion_metrics"])
def test_each_space_in_headless_chromium_explains_itself(browser, name, tmp_path, monkeypatch):
    """At 1400x1000: the card under the app, the example prefilled, Compute above the
    fold, and after one click the results with their meanings in view (screenshots kept
    in $OPINION_METRICS_SCREENSHOTS when set)."""
    from playwright.sync_api import expect

    from opinion_metrics.demo import controls as families
    from opinion_metrics.demo.controls import meaning
    from opinion_metrics.demo.ui import metric_card

    if name in ("semantic_keyword_prf", "keyword_diversity", "opinion_metrics"):
        pytest.importorskip("sentence_transformers")
    if name in ("sentiment_appropriateness", "opinion_metrics"):
        pytest.importorskip("vaderSentiment")
    combined = name == "opinion_metrics"
    if name == "semantic_keyword_prf":  # a Space just started: no model loaded yet
        monkeypatch.setattr(families, "MODELS", families.ModelPool())
    app = build_combined_app() if combined else build_app(name)
    url = launch(app)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(url)
        button = page.get_by_role("button", name="Compute")
        expect(button).to_be_visible(timeout=30_000)
        heading = next(line for line in metric_card(name).splitlines() if line.startswith("# "))[2:]
        expect(page.get_by_role("heading", name=heading)).to_be_attached()
        prefilled = page.get_by_label("predictions").input_value()
        if not combined:
            assert prefilled == FAMILIES[name].example[0]
        assert prefilled.strip()
        box = button.bounding_box()
        assert box["y"] + box["height"] <= VIEWPORT["height"]
        page.screenshot(path=str(tmp_path / f"{name}-opened.png"))
        button.click()  # (the model loads with the page: tests/demo/test_spaces_readable.py checks its notice)
        expect(page.get_by_text("Computed on the text boxes").first).to_be_visible(timeout=120_000)
        results = page.locator("div.table-wrap").first
        expected = FAMILIES["keyword_prf" if combined else name]
        first_key = "precision" if combined else next(iter(expected.meanings))
        expect(results).to_contain_text(meaning(expected, first_key))
        top = results.bounding_box()["y"]
        assert 0 <= top < VIEWPORT["height"]  # the results are in view without scrolling
        page.screenshot(path=str(tmp_path / f"{name}-computed.png"))
        # Intervals on: a [low, high] next to each value.
        page.get_by_label("confidence intervals (95%)").first.check()
        button.click()
        expect(results).to_contain_text(re.compile(r"\[-?\d\.\d{4},\s-?\d\.\d{4}\]"), timeout=120_000)
        page.wait_for_timeout(1000)  # let the updated outputs fade in before the screenshot
        page.screenshot(path=str(tmp_path / f"{name}-intervals.png"))
        if combined:  # the comparison tab, prefilled with three systems, B clearly better than A
            page.get_by_role("tab", name="compare systems").click()
            page.get_by_role("button", name="Compare", exact=True).click()
            expect(page.get_by_text("A against B, C, 8 examples")).to_be_visible(timeout=120_000)
            comparison = page.locator("div.table-wrap").filter(has_text="p (Holm)")
            expect(comparison).to_contain_text("yes")
            page.evaluate("window.scrollTo(0, 0)")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(tmp_path / f"{name}-compared.png"))
    finally:
        page.close()
        app.close()
    assert (tmp_path / f"{name}-computed.png").stat().st_size > 10_000
    if os.environ.get("OPINION_METRICS_SCREENSHOTS"):
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, os.environ["OPINION_METRICS_SCREENSHOTS"])


@pytest.mark.slow
@pytest.mark.parametrize("combined", [False, True], ids=["keyword_prf", "opinion_metrics"])
def test_a_click_while_a_computation_runs_is_computed_after_it_not_dropped(browser, combined, monkeypatch):
    """Computing is slow (2 s here): the page's own computation and a first click are still
    running when the user turns intervals on and clicks again; that last click still runs."""
    from playwright.sync_api import expect

    from opinion_metrics.demo import ui

    def slowly(function):
        def slow(*args, **keywords):
            time.sleep(2)
            return function(*args, **keywords)

        return slow

    monkeypatch.setattr(ui, "_evaluate", slowly(ui._evaluate))
    monkeypatch.setattr(comparing, "compare_families", slowly(comparing.compare_families))
    app = build_combined_app() if combined else build_app("keyword_prf")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch(app))
        button = page.get_by_role("button", name="Compute")
        button.click()
        page.get_by_label("confidence intervals (95%)").first.check()
        button.click()
        results = page.locator("div.table-wrap").first
        expect(results).to_contain_text(re.compile(r"\[-?\d\.\d{4},\s-?\d\.\d{4}\]"), timeout=60_000)
    finally:
        page.close()
        app.close()
