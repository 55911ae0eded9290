"""The combined Space in headless Chromium with three systems (issue 37): every keyword family
on them (typed with `[name]` prefixes, a file with a `model` column) and the compare systems
tab (pasted, a file with a `model` column, a file per system). The page must show no error
badge or toast, every system, and the values of the library on the same inputs: each family
function's in the results, `compare_systems`' (with Holm's correction) in the report."""

import re

import pytest
from conftest import VIEWPORT, launch_space
from three_systems import (
    SYSTEMS,
    assert_no_error_shown,
    files_per_system,
    library_comparison,
    library_values,
    metric_name,
    results_by_system,
    settle,
    shown,
    system_column_file,
    table_rows,
    typed,
)

pytest.importorskip("gradio")
pytest.importorskip("sentence_transformers")
pytest.importorskip("vaderSentiment")

from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.controls import COMBINED  # noqa: E402
from opinion_metrics.stats.significance import holm  # noqa: E402


@pytest.fixture(scope="module")
def url():
    """The combined app, launched once for the module."""
    app = build_combined_app()
    yield launch_space(app)
    app.close()


@pytest.fixture
def page(browser):
    """A page that may paste (the clipboard allowed), closed after."""
    context = browser.new_context(viewport=VIEWPORT, permissions=["clipboard-read", "clipboard-write"])
    yield context.new_page()
    context.close()


def _status(page):
    return page.locator('[data-testid="markdown"].om-status:visible')


def _check_every_family(page, when: str) -> None:
    """The results of the "all metrics" tab: a column per system, each family function's values."""
    assert_no_error_shown(page, when)
    assert _status(page).inner_text().startswith("Computed on "), _status(page).inner_text()
    found = results_by_system(table_rows(page.locator("div.table-wrap:visible").first))
    assert list(found) == list(SYSTEMS), f"{when}: the systems shown: {list(found)}"
    for system, values in found.items():
        expected = {
            f"{family}: {key}": shown(value)
            for family in COMBINED
            for key, value in library_values(family, system).items()
        }
        assert values == expected, f"{when}, {system}"


def _paste(page, box, text: str) -> None:
    """Replace the box's text by a paste (Ctrl+V), as a visitor pastes a table's column."""
    box.click()
    box.press("Control+a")
    page.evaluate("text => navigator.clipboard.writeText(text)", text)
    box.press("Control+v")


def _choose(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()


def _p(text: str) -> float:
    return 0.0 if text.startswith("<") else float(text)


def _check_comparison(page, family: str, when: str) -> None:
    """The compare tab's report: the first system against the two others, `compare_systems`'
    values, p-values and Holm's adjusted ones; its notes name the family."""
    from playwright.sync_api import expect

    assert_no_error_shown(page, when)
    assert _status(page).inner_text().startswith("Compared on "), _status(page).inner_text()
    report = page.locator("div.table-wrap:visible").filter(has_text="p (Holm)")
    rows = table_rows(report)
    baseline, others = SYSTEMS[0], list(SYSTEMS[1:])
    assert rows[0] == ["system", "metric", baseline, "value", "difference", "95% interval", "p", "p (Holm)",
                       "significant"]  # fmt: skip
    expected = {system: library_comparison(family, baseline, system) for system in others}
    assert {row[0] for row in rows[1:]} == set(others), f"{when}: the systems shown"
    assert {(row[0], metric_name(row[1])) for row in rows[1:]} == {
        (system, key) for system in others for key in expected[system]
    }
    for system, metric, base, value, difference, interval, p, p_holm, significant in rows[1:]:
        row = expected[system][metric_name(metric)]
        assert [base, value, difference, interval] == [
            shown(row["a"]), shown(row["b"]), f"{row['difference']:+.4f}",
            f"[{row['difference_ci_low']:+.4f}, {row['difference_ci_high']:+.4f}]",
        ], f"{when}, {system}, {metric}"  # fmt: skip
        assert _p(p) == pytest.approx(row["p_value"], abs=5e-4)
        adjusted = holm([expected[other][metric_name(metric)]["p_value"] for other in others])[others.index(system)]
        assert _p(p_holm) == pytest.approx(adjusted, abs=5e-4)
        assert significant.startswith("yes" if adjusted < 0.05 else "no")
    expect(page.get_by_text(f"(for {family}, ")).to_be_visible()  # the methods note names the family shown


@pytest.mark.slow
def test_three_typed_systems_in_the_combined_space_and_pasted_in_its_compare_tab(url, page):
    from playwright.sync_api import expect

    page.goto(url)
    expect(_status(page)).to_contain_text("Computed on the text boxes", timeout=180_000)
    settle(page)
    assert_no_error_shown(page, "at load")
    for label, text in typed("keyword_prf").items():
        page.get_by_label(label, exact=True).first.fill(text)
    page.get_by_role("button", name="Compute", exact=True).click()
    expect(_status(page)).to_contain_text(f"3 systems ({', '.join(SYSTEMS)})", timeout=180_000)
    settle(page)
    _check_every_family(page, "typed")
    # The compare tab: systems pasted; the baseline's choices follow before Compare.
    page.get_by_role("tab", name="compare systems").click()
    expect(_status(page)).to_contain_text("Compared on the text boxes", timeout=180_000)
    settle(page)
    _paste(page, page.get_by_label("predictions", exact=True).last, typed("keyword_prf")["predictions"])
    expect(page.get_by_role("combobox", name="baseline")).to_have_value(SYSTEMS[0], timeout=30_000)
    page.get_by_role("combobox", name="baseline").click()
    # every system offered, the first one chosen (text compared past the check mark and the spacing of its layout)
    expect(page.get_by_role("option")).to_have_text([re.compile(rf"(^|\s|✓){re.escape(name)}\s*$") for name in SYSTEMS])
    expect(page.get_by_role("option", selected=True)).to_have_text(re.compile(rf"(^|\s|✓){re.escape(SYSTEMS[0])}\s*$"))
    page.keyboard.press("Escape")
    _paste(page, page.get_by_label("references", exact=True).last, typed("keyword_prf")["references"])
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(_status(page)).to_contain_text(f"{SYSTEMS[0]} against {', '.join(SYSTEMS[1:])}, 3 examples paired by "
                                          "position", timeout=180_000)  # fmt: skip
    settle(page)
    _check_comparison(page, "keyword_prf", "pasted")


@pytest.mark.slow
def test_a_file_of_three_systems_in_the_combined_space_and_its_compare_tab(url, page, tmp_path):
    from playwright.sync_api import expect

    path = system_column_file(tmp_path, "keyword_prf")
    page.goto(url)
    expect(_status(page)).to_contain_text("Computed on the text boxes", timeout=180_000)
    settle(page)
    page.get_by_role("button", name="or upload a file").click()
    page.locator(".om-upload:visible input[type=file]").set_input_files(str(path))
    expect(_status(page)).to_contain_text("3 systems of its model column", timeout=180_000)
    settle(page)
    _check_every_family(page, "file")  # the scores column read: the weighted family shown too
    page.get_by_role("tab", name="compare systems").click()
    expect(_status(page)).to_contain_text("Compared on the text boxes", timeout=180_000)
    settle(page)
    _choose(page, "metric family", "weighted_keyword_prf")
    page.get_by_role("button", name="or upload: one file with a model column").click()
    page.locator(".om-upload:visible input[type=file]").set_input_files(str(path))
    expect(_status(page)).to_contain_text("3 examples paired by review_id (weighted_keyword_prf", timeout=180_000)
    settle(page)
    _check_comparison(page, "weighted_keyword_prf", "file")


@pytest.mark.slow
def test_a_file_per_system_in_the_compare_tab(url, page, tmp_path):
    from playwright.sync_api import expect

    paths = files_per_system(tmp_path)
    page.goto(url)
    page.get_by_role("tab", name="compare systems").click()
    expect(_status(page)).to_contain_text("Compared on the text boxes", timeout=180_000)
    settle(page)
    assert_no_error_shown(page, "at load")
    _choose(page, "metric family", "sentiment_appropriateness")
    page.get_by_role("button", name="or upload: one file with a model column").click()
    page.locator(".om-upload:visible input[type=file]").set_input_files([str(path) for path in paths])
    expect(_status(page)).to_contain_text("3 examples paired by review_id (sentiment_appropriateness",
                                          timeout=180_000)  # fmt: skip
    expect(_status(page)).to_contain_text(", ".join(path.name for path in paths))
    settle(page)
    _check_comparison(page, "sentiment_appropriateness", "a file per system")
