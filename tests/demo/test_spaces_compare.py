"""Several systems in the Spaces, in Chromium (issue 30): three systems from the movie reviews with
intervals on, every header and value whole, the best in bold, a baseline's differences and report,
the compare tab, errors in the status line without a toast. Screenshots are kept in
$OPINION_METRICS_SCREENSHOTS when set."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from conftest import MOVIE_REVIEWS, VIEWPORT, keep_screenshots, launch_space, require_shared

pytest.importorskip("gradio")

from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.ui import build_app

SYSTEMS = {"base": "tfidf", "sentiment": "yake", "metadata": "keybert"}  # the data's models, renamed


@pytest.fixture(scope="module")
def three_systems(tmp_path_factory) -> Path:
    """Three systems on the same 40 reviews of SW_Episode4: a `model` column, gold keywords per
    movie joined in (the first 40), scores, the review texts."""
    directory = require_shared(MOVIE_REVIEWS)
    lines = (directory / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines()
    gold = {row["movie"]: row["keywords"][:40] for row in map(json.loads, lines)}
    with gzip.open(directory / "SW_Episode4.jsonl.gz", "rt", encoding="utf-8") as stream:
        reviews = [json.loads(line) for _, line in zip(range(40), stream)]
    rows = [
        {"review_id": review["review_id"], "model": name, "predictions": review[f"keywords_{model}"],
         "scores": review[f"scores_{model}"], "references": gold[review["movie"]], "review": review["review"][:400]}
        for model, name in SYSTEMS.items()
        for review in reviews
    ]  # fmt: skip
    path = tmp_path_factory.mktemp("three") / "three_systems.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# The cells (headers included) whose text is wider than the cell shows, or broken inside a word.
CUT_CELLS = """table => [...table.querySelectorAll('th, td')].filter(cell => {
    if (!cell.innerText.trim()) return false;
    const inner = cell.querySelector('.cell-wrap, span, div') || cell;
    return inner.scrollWidth > inner.clientWidth + 1 || cell.scrollWidth > cell.clientWidth + 1;
}).map(cell => cell.innerText)"""


def _whole(table) -> None:
    cut = table.locator("table").first.evaluate(CUT_CELLS)
    assert cut == [], f"cut cells: {cut}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["keyword_prf", "weighted_keyword_prf"])
def test_three_systems_with_intervals_and_a_baseline_read_whole_in_chromium(browser, three_systems, name, tmp_path):
    from playwright.sync_api import expect

    app = build_app(name)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        status = page.locator('[data-testid="markdown"].om-status')
        expect(status).to_contain_text("Computed on the text boxes", timeout=60_000)
        page.get_by_label("confidence intervals (95%)").first.check()
        page.get_by_text("or upload a file").click()
        page.locator(".om-upload input[type=file]").set_input_files(str(three_systems))
        # the upload recomputes by itself: no click
        expect(status).to_contain_text("3 systems of its model column: 40 examples each", timeout=60_000)
        results = page.locator("div.table-wrap").first
        for system in SYSTEMS.values():
            expect(results.locator("thead")).to_contain_text(system)
        expect(results).to_contain_text(re.compile(r"\[0\.\d{4},\s0\.\d{4}\]"))
        page.wait_for_timeout(1500)
        _whole(results)
        metric = "ndcg@5" if name == "weighted_keyword_prf" else "precision"
        expect(results).to_contain_text(f"{metric} ↑")
        assert results.locator("strong").count() >= len(results.locator("tbody tr").all()) - 1  # a best per metric
        page.screenshot(path=str(tmp_path / f"{name}-three-systems-intervals.png"))
        # a baseline: each difference under its value, the report below
        page.get_by_role("combobox", name="baseline").click()
        page.get_by_role("option", name="tfidf").click()
        expect(results.locator("thead")).to_contain_text("tfidf (baseline)", timeout=60_000)
        expect(results).to_contain_text(re.compile(r"[+-]0\.\d{4}"))
        report = page.locator("div.table-wrap").filter(has_text="p (Holm)")
        expect(report).to_be_visible()
        expect(page.get_by_text("after Holm's correction for the 2 systems compared with tfidf")).to_be_visible()
        page.wait_for_timeout(1500)
        _whole(results)
        _whole(report)
        page.screenshot(path=str(tmp_path / f"{name}-three-systems-baseline.png"), full_page=True)
    finally:
        page.close()
        app.close()
    keep_screenshots(tmp_path)


@pytest.mark.slow
def test_the_aspect_space_scores_typed_systems_one_block_per_aspect(browser, tmp_path):
    from playwright.sync_api import expect

    app = build_app("aspect_sentiment_score")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        status = page.locator('[data-testid="markdown"].om-status')
        expect(status).to_contain_text("Computed on the text boxes", timeout=60_000)
        typed = [f"[{system}] {line}" for system, lines in (("A", ["0, 4, 0, 5, 0, 0", "3, 0, 0, 4, 2, 0"]),
                 ("B", ["0, 5, 0, 5, 0, 0", "3, 0, 0, 0, 2, 0"]), ("C", ["0, 3, 0, 4, 0, 1", "2, 0, 0, 4, 2, 0"]))
                 for line in lines]  # fmt: skip
        page.get_by_label("predictions").fill("\n".join(typed))
        page.get_by_label("references").fill("0, 5, 0, 5, 0, 0\n3, 0, 0, 4, 2, 0")
        page.get_by_label("confidence intervals (95%)").first.check()
        page.get_by_role("button", name="Compute").click()
        expect(status).to_contain_text(
            "3 systems (A, B, C) named at the start of their lines: 2 examples each", timeout=60_000
        )
        results = page.locator("div.table-wrap").first
        expect(results).to_contain_text("accommodation: f1 ↑")
        expect(results).to_contain_text("shopping: score ↑")
        page.wait_for_timeout(1500)
        _whole(results)
        page.screenshot(path=str(tmp_path / "aspect_sentiment_score-three-systems.png"), full_page=True)
    finally:
        page.close()
        app.close()
    keep_screenshots(tmp_path)


@pytest.mark.slow
def test_an_error_stays_in_the_status_line_with_no_toast_over_it(browser, tmp_path):
    from playwright.sync_api import expect

    app = build_app("keyword_prf")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        status = page.locator('[data-testid="markdown"].om-status')
        expect(status).to_contain_text("Computed on the text boxes", timeout=60_000)
        page.get_by_label("predictions").fill("[tfidf] satire\nsatire")  # a line without its system
        for _ in range(3):  # three clicks: still one message, in the status line
            page.get_by_role("button", name="Compute").click()
            page.wait_for_timeout(700)
        expect(status).to_contain_text("Not computed:", timeout=30_000)
        expect(status).to_contain_text("line 1 starts with [a system's name] but line 2 does not")
        assert page.locator(".toast-body").count() == 0
        page.screenshot(path=str(tmp_path / "keyword_prf-error-no-toast.png"))
    finally:
        page.close()
        app.close()
    keep_screenshots(tmp_path)


@pytest.mark.slow
def test_the_combined_space_shows_three_typed_systems_and_compares_them_with_a_baseline(browser, tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("vaderSentiment")
    from playwright.sync_api import expect

    from opinion_metrics.demo.combined import _GOLD, _SYSTEMS

    app = build_combined_app()
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        status = page.locator('[data-testid="markdown"].om-status').first
        expect(status).to_contain_text("Computed on the text boxes", timeout=120_000)
        page.get_by_label("predictions").first.fill(_SYSTEMS)
        page.get_by_label("references").first.fill(_GOLD)
        page.get_by_label("texts").first.fill("")
        page.get_by_label("confidence intervals (95%)").first.check()
        page.get_by_role("button", name="Compute").click()
        expect(status).to_contain_text(
            "3 systems (A, B, C) named at the start of their lines: 8 examples each", timeout=120_000
        )
        results = page.locator("div.table-wrap").first
        expect(results).to_contain_text("self_similarity ↓")
        page.wait_for_timeout(1500)
        _whole(results)
        page.screenshot(path=str(tmp_path / "opinion_metrics-three-systems.png"), full_page=True)
        page.get_by_role("tab", name="compare systems").click()
        compared = page.locator('[data-testid="markdown"].om-status').last
        expect(compared).to_contain_text("A against B, C, 8 examples paired by position", timeout=60_000)
        page.get_by_role("combobox", name="baseline").click()
        page.get_by_role("option", name="C", exact=True).click()
        expect(compared).to_contain_text("C against A, B", timeout=60_000)
        report = page.locator("div.table-wrap").filter(has_text="p (Holm)")
        expect(report).to_be_visible()
        page.wait_for_timeout(1500)
        _whole(report)
        page.screenshot(path=str(tmp_path / "opinion_metrics-compare-three-systems.png"), full_page=True)
    finally:
        page.close()
        app.close()
    keep_screenshots(tmp_path)
