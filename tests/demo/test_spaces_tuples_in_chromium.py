"""The sentiment tuple Space in headless Chromium with three systems typed as JSON: the library's
values in a column per system, the why table of each system chosen (assigned pairs with their
credits, unmatched tuples), then a model's text read with the format control, and a line that
cannot be read named by its system and line in the status, with no error badge or toast."""

import pytest
from conftest import VIEWPORT, launch_space
from three_systems import (
    PREDICTED_TUPLES,
    SYSTEMS,
    TUPLES,
    assert_no_error_shown,
    library_values,
    results_by_system,
    settle,
    shown,
    table_rows,
    typed,
)

pytest.importorskip("gradio")

from opinion_metrics import sentiment_tuple_prf  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402

NAME = "sentiment_tuple_prf"


def _text(rows):
    """A system's tuples written as generative ABSA's text: (a, b, c); (d, e, f)."""
    return "; ".join(f"({', '.join(row)})" for row in rows)


@pytest.mark.slow
def test_three_systems_their_why_tables_a_models_text_and_a_bad_line(browser, tmp_path):
    from playwright.sync_api import expect

    app = build_app(NAME)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        status = page.locator('[data-testid="markdown"].om-status')
        expect(status).to_contain_text("Computed on the text boxes", timeout=120_000)
        settle(page)
        for label, text in typed(NAME).items():
            page.get_by_label(label, exact=True).fill(text)
        page.get_by_role("button", name="Compute").click()
        expect(status).to_contain_text(f"3 systems ({', '.join(SYSTEMS)})", timeout=120_000)
        settle(page)
        assert_no_error_shown(page, "typed as JSON")
        tables = page.locator("div.table-wrap")
        found = results_by_system(table_rows(tables.first))
        assert found == {s: {k: shown(v) for k, v in library_values(NAME, s).items()} for s in SYSTEMS}
        why = tables.nth(2)
        expect(why).to_contain_text("(pizza, over cooked, NEG) → (pizza, over cooked, NEG) (1.0000, 1.0000)")
        page.get_by_label("system shown per example").click()
        page.get_by_role("option", name="keybert", exact=True).click()
        expect(why).to_contain_text("(music, loud, NEG)", timeout=30_000)  # keybert's prediction no gold tuple has
        expect(why).to_contain_text("(wine list, long, POS)")  # the gold tuple keybert missed
        settle(page)
        assert_no_error_shown(page, "keybert's why table")
        # A model's text, one system per line as before, read with the format control.
        lines = [f"[{s}] {_text(row)}" for s in SYSTEMS for row in PREDICTED_TUPLES[s]]
        lines[0] += "; (the view"  # tfidf's first line: a segment that cannot be read
        page.get_by_label("predictions", exact=True).fill("\n".join(lines))
        page.get_by_label("format", exact=True).click()
        page.get_by_role("option", name="tuples", exact=True).click()
        page.get_by_role("button", name="Compute").click()
        expect(status).to_contain_text("format tuples", timeout=120_000)
        settle(page)
        assert_no_error_shown(page, "a model's text")
        found = results_by_system(table_rows(tables.first))
        generated = {s: [_text(row) for row in PREDICTED_TUPLES[s]] for s in SYSTEMS}
        generated["tfidf"][0] += "; (the view"
        for system in SYSTEMS:
            expected = sentiment_tuple_prf(generated[system], TUPLES, format="tuples")
            assert found[system] == {key: shown(value) for key, value in expected.items()}, system
        assert found["tfidf"]["unparsed"] == "1.0000"
        expect(tables.nth(2)).to_contain_text("'(the view'")
        # Without a format, a line of text is named by its system and its line in the box.
        page.get_by_label("format", exact=True).click()
        page.get_by_role("option", name="none", exact=True).click()
        page.get_by_role("button", name="Compute").click()
        expect(status).to_contain_text("Not computed:", timeout=60_000)
        expect(status).to_contain_text("system 'tfidf': predictions: example 1 (predictions line 1)")
        expect(status).to_contain_text("is not a list of tuples")
        page.screenshot(path=str(tmp_path / "sentiment_tuple_prf-error.png"))
    finally:
        page.close()
        app.close()
