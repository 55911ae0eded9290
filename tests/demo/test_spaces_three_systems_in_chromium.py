"""Each family Space in headless Chromium with three systems (issue 37): typed with `[name]`
prefixes and uploaded as a file with a `model` column. The page must show no error badge or
toast (at load, after Compute, after choosing a baseline), every system in the results view,
and on it the values of the family function called on the same inputs."""

import re

import pytest
from conftest import VIEWPORT, launch_space
from three_systems import (
    SYSTEMS,
    aspect_key,
    assert_no_error_shown,
    library_values,
    results_by_system,
    settle,
    shown,
    system_column_file,
    table_rows,
    typed,
)

pytest.importorskip("gradio")

from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402

NEEDS = {"semantic_keyword_prf": "sentence_transformers", "keyword_diversity": "sentence_transformers"}
NEEDS["sentiment_appropriateness"] = "vaderSentiment"


@pytest.fixture(scope="module")
def space():
    """Each family's app, launched once for the module: {name: url}, built on first use."""
    apps, urls = {}, {}

    def url(name: str) -> str:
        if name not in apps:
            apps[name] = build_app(name)
            urls[name] = launch_space(apps[name])
        return urls[name]

    yield url
    for app in apps.values():
        app.close()


def _expected(name: str) -> dict[str, dict[str, str]]:
    """{system: {metric as the page names it: value as the page shows it}}, from the library."""
    expected = {}
    for system in SYSTEMS:
        values = library_values(name, system)
        expected[system] = {key: shown(value) for key, value in values.items()}
    return expected


def _check_results(page, name: str, when: str) -> dict[str, dict[str, str]]:
    """The results view: no error shown, a column per system, the library's values in it."""
    assert_no_error_shown(page, when)
    status = page.locator('[data-testid="markdown"].om-status')
    assert status.inner_text().startswith("Computed on "), status.inner_text()
    found = results_by_system(table_rows(page.locator("div.table-wrap").first))
    assert list(found) == list(SYSTEMS), f"{when}: the systems shown: {list(found)}"
    expected = _expected(name)
    for system, values in found.items():
        if name == "aspect_sentiment_score":
            values = {aspect_key(metric): value for metric, value in values.items()}
        assert values == expected[system], f"{when}, {system}"
    return found


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["typed", "file"])
@pytest.mark.parametrize("name", list(FAMILIES))
def test_three_systems_in_each_family_space_give_the_library_values_without_an_error(
    browser, space, name, kind, tmp_path
):
    from playwright.sync_api import expect

    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(space(name))
        status = page.locator('[data-testid="markdown"].om-status')
        expect(status).to_contain_text("Computed on the text boxes", timeout=180_000)
        settle(page)
        assert_no_error_shown(page, "at load")  # the prefilled example, one system
        if kind == "typed":
            for label, text in typed(name).items():
                page.get_by_label(label, exact=True).fill(text)
            page.get_by_role("button", name="Compute").click()
            expect(status).to_contain_text(f"3 systems ({', '.join(SYSTEMS)})", timeout=180_000)
        else:
            path = system_column_file(tmp_path, name)
            page.get_by_text("or upload a file").click()
            page.locator(".om-upload input[type=file]").set_input_files(str(path))
            expect(status).to_contain_text(f"{path.name} (the text boxes are not used", timeout=180_000)
            expect(status).to_contain_text("3 systems of its model column")
        settle(page)
        found = _check_results(page, name, f"{kind}, computed")
        selector = page.get_by_label("system shown per example")
        expect(selector).to_be_visible()
        # A baseline: each other system's difference under its value, the values unchanged.
        page.get_by_role("combobox", name="baseline").click()
        page.get_by_role("option", name=SYSTEMS[0], exact=True).click()
        expect(page.locator("div.table-wrap").first).to_contain_text(f"{SYSTEMS[0]} (baseline)", timeout=180_000)
        settle(page)
        with_baseline = _check_results(page, name, f"{kind}, with a baseline")
        assert with_baseline == found
        rows = table_rows(page.locator("div.table-wrap").first)
        for row in rows[2:]:  # the first line of each cell checked above; the difference below it
            base = float(row[1].split("\n")[0]) if row[1].split("\n")[0] != "n/a" else None
            for cell in row[2:]:
                lines = cell.split("\n")
                if base is None or lines[0] == "n/a":
                    continue
                difference = float(re.sub(r"[^\d.+-]", "", lines[1]))
                assert difference == pytest.approx(float(lines[0]) - base, abs=1.5e-4), (row[0], cell)
    finally:
        page.close()
