"""Spaces a person can read (issue 19): computed at load, errors that stay, several systems
scored one row each, per-example explanations, readable tables; checked in Chromium with
screenshots (kept in $OPINION_METRICS_SCREENSHOTS when set)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import VIEWPORT, keep_screenshots, launch_space, space_values

from opinion_metrics import compare_systems, keyword_prf, weighted_keyword_prf
from opinion_metrics.demo import ui
from opinion_metrics.demo.combined import build_combined_app
from opinion_metrics.demo.comparing import compare_systems_tab
from opinion_metrics.demo.controls import FAMILIES
from opinion_metrics.demo.explanations import explanation_table
from opinion_metrics.demo.handlers import run
from opinion_metrics.demo.parsing import parse_keyword_lines
from opinion_metrics.demo.results import options_line
from opinion_metrics.demo.ui import ASPECT_NOTE, build_app
from opinion_metrics.io.read import load_table

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "reviews.jsonl"  # two systems (a `model` column), six reviews each
HALF_A_SHOWN_UNIT = 5e-4 * (1 + 1e-9)  # p-values are shown to 3 decimals (3/16 as 0.188)


def _defaults(name: str) -> list:
    return [option.default for option in FAMILIES[name].options]


def _system(model: str) -> dict[str, list]:
    table = load_table(EXAMPLE, ["predictions", "references", "scores"], [])
    rows = [i for i, name in enumerate(table["model"]) if name == model]
    return {column: [table[column][i] for i in rows] for column in ("predictions", "references", "scores", "review")}


def test_an_upload_with_a_model_column_is_scored_one_column_per_system():
    status, summary, rows, _ = run("keyword_prf", "", "", "", str(EXAMPLE), *_defaults("keyword_prf"))
    assert list(summary.columns) == ["metric", "baseline", "sentiment"]
    assert summary.iloc[0].tolist() == ["examples", "6", "6"]
    values = {}
    for system in ("baseline", "sentiment"):
        data = _system(system)
        values[system] = keyword_prf(data["predictions"], data["references"])
        assert space_values(summary, system) == {key: round(value, 4) for key, value in values[system].items()}
    for index, key in enumerate(values["baseline"], start=1):  # the best of each metric in bold
        best = max(round(found[key], 4) for found in values.values())
        for system in values:
            assert summary[system][index].startswith("**") == (round(values[system][key], 4) == best)
    assert status.startswith(
        "Computed on the uploaded file `reviews.jsonl`: 2 systems of its `model` column: 6 examples each"
    )
    # the per-example view: the first system's rows, at their lines of the file
    table = load_table(EXAMPLE, ["predictions"], [])
    assert rows["line"].tolist() == [i + 1 for i, model in enumerate(table["model"]) if model == "baseline"]
    baseline = _system("baseline")
    expected = keyword_prf(baseline["predictions"], baseline["references"], return_per_example=True)
    assert rows["f1"].tolist() == [round(value, 4) for value in expected["per_example"]["f1"]]


def test_typed_lines_that_name_their_system_share_the_references_given_once_per_example():
    predictions = "[A] satire; pizza\n[B] satire\n[A] jedi\n[B] empire; space"
    references = "satire\njedi; empire"  # once per example, shared by every system
    status, summary, rows, _ = run("keyword_prf", predictions, references, "", None, *_defaults("keyword_prf"))
    expected = {
        "A": keyword_prf([["satire", "pizza"], ["jedi"]], [["satire"], ["jedi", "empire"]]),
        "B": keyword_prf([["satire"], ["empire", "space"]], [["satire"], ["jedi", "empire"]]),
    }
    assert list(summary.columns) == ["metric", "A", "B"]
    for system, values in expected.items():
        assert space_values(summary, system) == {key: round(value, 4) for key, value in values.items()}
    assert rows["line"].tolist() == [1, 2]  # system A's examples
    assert status.startswith(
        "Computed on the text boxes: 2 systems (A, B) named at the start of their lines: 2 examples each"
    )


@pytest.mark.parametrize(
    ("predictions", "references", "message"),
    [
        ("[A] a\nb\n[B] c", "a\nb", "predictions: line 1 starts with [a system's name] but line 2 does not"),
        ("[A] a\n[B] b\n[A] c", "a\nb", "predictions: system 'A' has 2 lines and 'B' 1"),
        ("[A] a\n[B] b\n[A] c\n[B] d", "a\nb\na\nb", "references has 4 lines but each system 2 examples (given per"),
    ],
)
def test_typed_systems_are_named_on_every_line_with_one_reference_line_per_example(predictions, references, message):
    import gradio

    with pytest.raises(gradio.Error) as raised:
        run("keyword_prf", predictions, references, "", None, *_defaults("keyword_prf"))
    assert message in raised.value.message


def test_the_aspect_space_takes_typed_systems_too():
    from opinion_metrics import aspect_sentiment_score

    predictions = "[A] 0, 4, 0\n[A] 3, 0, 1\n[B] 0, 5, 0\n[B] 3, 2, 0"
    references = "0, 5, 0\n3, 2, 1"
    status, summary, _, _ = run(
        "aspect_sentiment_score",
        predictions,
        references,
        "food, hotel, bus",
        None,
        *_defaults("aspect_sentiment_score"),
    )
    for system, predicted in (("A", [[0, 4, 0], [3, 0, 1]]), ("B", [[0, 5, 0], [3, 2, 0]])):
        expected = aspect_sentiment_score(predicted, [[0, 5, 0], [3, 2, 1]], aspects=["food", "hotel", "bus"])
        values = space_values(summary, system)
        assert values["score"] == round(expected["score"], 4)
        # one block per aspect: its F1, R2 and score
        assert values["hotel: f1"] == round(expected["f1_hotel"], 4)
        assert values["hotel: score"] == round(expected["score_hotel"], 4)
    assert status.startswith("Computed on the text boxes: 2 systems (A, B) named at the start of their lines")


def test_the_weighted_family_scores_each_system_with_its_scores():
    _, summary, _, _ = run("weighted_keyword_prf", "", "", "", str(EXAMPLE), *_defaults("weighted_keyword_prf"))
    data = _system("sentiment")
    expected = weighted_keyword_prf(data["predictions"], data["scores"], data["references"])
    assert space_values(summary, "sentiment") == {key: round(value, 4) for key, value in expected.items()}


def test_the_status_line_names_the_count_and_every_option():
    family = FAMILIES["semantic_keyword_prf"]
    values = {option.name: option.default for option in family.options} | {"threshold": 0.7, "confidence_level": True}
    line = options_line(family, values)
    assert line == (
        "presence all · model all-MiniLM-L6-v2 · threshold 0.7 · one_to_one off · average macro · top_k M"
        " · normalize default · stemmer none · zero_division 0 · precision float32 · 95% intervals"
    )


def test_the_keyword_explanation_shows_which_prediction_matched_which_gold_keyword():
    predictions, references, texts = FAMILIES["keyword_prf"].example
    data = {
        "predictions": parse_keyword_lines(predictions)[0],
        "references": parse_keyword_lines(references)[0],
        "texts": texts.split("\n"),
    }
    options = {option.name: option.default for option in FAMILIES["keyword_prf"].options}
    frame = explanation_table("keyword_prf", data, options, None)
    # By hand (substring relation, one-to-one): the family's description says the same.
    assert frame.iloc[0].tolist() == [1, "social satire → satire; dark comedy → comedy", "pizza", "class struggle"]
    assert frame.iloc[1].tolist() == [2, "space opera → space opera; jedi knight → jedi", "", "empire"]
    options["presence"] = "present"  # the reviews never mention "class struggle": it is left out
    assert frame.columns.tolist()[0] == "line"
    assert explanation_table("keyword_prf", data, options, None).iloc[0, 3] == ""


def test_the_semantic_explanation_gives_each_pairs_cosine_and_the_threshold():
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from opinion_metrics.embeddings.encoder import load_model

    predictions, references, _ = FAMILIES["semantic_keyword_prf"].example
    data = {"predictions": parse_keyword_lines(predictions)[0], "references": parse_keyword_lines(references)[0]}
    options = {option.name: option.default for option in FAMILIES["semantic_keyword_prf"].options}
    frame = explanation_table("semantic_keyword_prf", data, options, None)
    assert frame.columns.tolist() == [
        "line",
        "matched (cosine ≥ 0.75)",
        "unmatched predictions: closest gold keyword (cosine < 0.75)",
        "unmatched gold keywords (what recall misses): closest prediction",
    ]
    model = load_model("sentence-transformers/all-MiniLM-L6-v2")
    assert isinstance(model, sentence_transformers.SentenceTransformer)
    vectors = model.encode(["scary movie", "horror film", "pizza", "family drama"], normalize_embeddings=True)
    matched, unmatched = frame.iloc[0, 1], frame.iloc[0, 2]
    assert f"scary movie → horror film ({float(vectors[0] @ vectors[1]):.4f})" in matched
    assert unmatched == f"pizza → family drama ({float(vectors[2] @ vectors[3]):.4f})"
    # family drama: no prediction reaches 0.75; its closest is one of scary movie, pizza
    closest = max((float(vectors[i] @ vectors[3]), name) for i, name in ((0, "scary movie"), (2, "pizza")))
    assert f"family drama ← {closest[1]} ({closest[0]:.4f})" in frame.iloc[0, 3]


def test_the_sentiment_explanation_gives_each_keywords_and_the_reviews_sentiment():
    pytest.importorskip("vaderSentiment")
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    polarity = SentimentIntensityAnalyzer().polarity_scores

    def vader(text):  # the "weighted" mapping: pos + 0.5 neu
        scores = polarity(text)
        return scores["pos"] + 0.5 * scores["neu"]

    predictions, references, texts = FAMILIES["sentiment_appropriateness"].example
    data = {
        "predictions": parse_keyword_lines(predictions)[0],
        "references": parse_keyword_lines(references)[0],
        "texts": texts.split("\n"),
    }
    options = {option.name: option.default for option in FAMILIES["sentiment_appropriateness"].options}
    third = explanation_table("sentiment_appropriateness", data, options, None).iloc[2].tolist()
    mean = (vader("wonderful cast") + vader("happy ending")) / 2
    assert third == [
        3,
        f"wonderful cast {vader('wonderful cast'):.4f}; happy ending {vader('happy ending'):.4f}",
        f"{mean:.4f}",
        f"boring {vader('boring'):.4f}; terrible {vader('terrible'):.4f}",
        f"{(vader('boring') + vader('terrible')) / 2:.4f}",
        f"{vader('Boring and terrible.'):.4f}",
    ]


def test_the_aspect_note_explains_both_and_a_score_of_1_without_r2():
    family = FAMILIES["aspect_sentiment_score"]
    _, _, per_aspect, _ = run(family.name, *family.example, None, *_defaults(family.name))
    shopping = per_aspect[per_aspect["aspect"] == "shopping"].iloc[0]
    # absent from every review on both sides: F1 = zero_division = 1, R2 undefined, score 1
    assert (shopping["both"], shopping["r2"], shopping["f1"], shopping["score"]) == (0, "n/a (no overlap)", 1.0, 1.0)
    assert "*both*" in ASPECT_NOTE and "R2 = 1" in ASPECT_NOTE and "a score of 1" in ASPECT_NOTE


def _split(tmp_path: Path) -> tuple[Path, Path]:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    paths = []
    for model in ("baseline", "sentiment"):
        path = tmp_path / f"{model}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows if row["model"] == model), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


@pytest.mark.parametrize("family", ["keyword_prf", "weighted_keyword_prf", "sentiment_appropriateness"])
def test_the_comparison_tab_accepts_one_file_with_a_model_column_or_two_files(family, tmp_path):
    if family == "sentiment_appropriateness":
        pytest.importorskip("vaderSentiment")
    a, b = _system("baseline"), _system("sentiment")
    options = {"scores_a": a["scores"], "scores_b": b["scores"]} if family == "weighted_keyword_prf" else {}
    if family == "sentiment_appropriateness":
        options["texts"] = a["review"]
    expected = compare_systems(family, a["predictions"], b["predictions"], a["references"], **options)
    for upload in (str(EXAMPLE), [str(path) for path in _split(tmp_path)]):
        status, frame, _, _, names, base = compare_systems_tab(family, "", "", "", upload=upload)
        assert (names, base) == (["baseline", "sentiment"], "baseline")  # two files: named by their model column
        assert frame["metric"].tolist() == [f"{key} ↑" for key in expected]
        assert frame["difference"].tolist() == [f"{row['difference']:+.4f}" for row in expected.values()]
        assert [float(p) for p in frame["p"]] == pytest.approx(
            [row["p_value"] for row in expected.values()], abs=HALF_A_SHOWN_UNIT
        )
        assert "baseline against sentiment, 6 examples paired by review_id" in status


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def test_the_comparison_tab_pairs_rows_by_review_id_as_the_cli_does(tmp_path):
    import gradio

    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    baseline = [row for row in rows if row["model"] == "baseline"]
    sentiment = [row for row in rows if row["model"] == "sentiment"]
    a, b = _system("baseline"), _system("sentiment")  # in review_id order in the example file
    assert [row["review_id"] for row in baseline] == [row["review_id"] for row in sentiment] == list(range(6))
    expected = compare_systems("keyword_prf", a["predictions"], b["predictions"], a["references"])
    reversed_file = _write(tmp_path / "reversed.jsonl", baseline + sentiment[::-1])
    reversed_pair = [
        _write(tmp_path / "baseline.jsonl", baseline),
        _write(tmp_path / "sentiment.jsonl", sentiment[::-1]),
    ]
    for upload in (reversed_file, reversed_pair):
        status, frame, _, _, _, _ = compare_systems_tab("keyword_prf", "", "", "", upload=upload)
        assert [float(p) for p in frame["p"]] == pytest.approx(
            [row["p_value"] for row in expected.values()], abs=HALF_A_SHOWN_UNIT
        )
        assert frame["difference"].tolist() == [f"{row['difference']:+.4f}" for row in expected.values()]
        assert "paired by review_id" in status
    twice = _write(tmp_path / "twice.jsonl", baseline + sentiment[:5] + [{**sentiment[5], "review_id": 4}])
    with pytest.raises(gradio.Error, match="review_id 4 appears twice for system 'sentiment'"):
        compare_systems_tab("keyword_prf", "", "", "", upload=twice)
    missing = _write(tmp_path / "missing.jsonl", baseline + sentiment[:5])
    with pytest.raises(gradio.Error, match="review_id 5 .* has no row for system 'sentiment'"):
        compare_systems_tab("keyword_prf", "", "", "", upload=missing)
    # without an id column, rows pair by position: reversed rows then hold other reviews, refused
    anonymous = [{key: value for key, value in row.items() if key != "review_id"} for row in baseline + sentiment[::-1]]
    with pytest.raises(gradio.Error, match="their (texts|references) differ at .*paired by position"):
        compare_systems_tab("keyword_prf", "", "", "", upload=_write(tmp_path / "anonymous.jsonl", anonymous))


def test_a_file_with_other_column_names_is_read_through_the_column_mapping(tmp_path):
    import gradio

    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    renamed = [{"id": r["review_id"], "tool": r["model"], "keywords": r["predictions"], "gold": r["references"]}
               for r in rows]  # fmt: skip
    path = _write(tmp_path / "renamed.jsonl", renamed)
    # found by their usual names, but the system column is not one: named in the mapping
    status, summary, _, _ = run("keyword_prf", "", "", "", path, *_defaults("keyword_prf"), mapping={"system": "tool"})
    assert "columns: predictions ← `keywords`, references ← `gold`, system ← `tool` (given), id ← `id`" in status
    for system in ("baseline", "sentiment"):
        data = _system(system)
        assert space_values(summary, system) == pytest.approx(
            {key: round(value, 4) for key, value in keyword_prf(data["predictions"], data["references"]).items()}
        )
    with pytest.raises(gradio.Error, match="no column `nope` for system in renamed.jsonl"):
        run("keyword_prf", "", "", "", path, *_defaults("keyword_prf"), mapping={"system": "nope"})


def test_the_movie_files_columns_side_by_side_are_systems_with_a_baseline(tmp_path):
    import gzip

    from conftest import MOVIE_REVIEWS, require_shared

    directory = require_shared(MOVIE_REVIEWS)
    gold = {
        json.loads(line)["movie"]: json.loads(line)["keywords"] for line in (directory / "ground_truth.jsonl").open()
    }
    with gzip.open(directory / "SW_Episode4.jsonl.gz", "rt", encoding="utf-8") as stream:
        reviews = [json.loads(line) for _, line in zip(range(60), stream)]
    rows = [{"review_id": r["review_id"], "references": gold[r["movie"]][:40], **{f"keywords_{m}": r[f"keywords_{m}"]
            for m in ("base", "sentiment", "metadata")}} for r in reviews]  # fmt: skip
    path = _write(tmp_path / "wide.jsonl", rows)
    outcome = ui._evaluate("keyword_prf", "", "", "", path, _defaults("keyword_prf"), baseline="base")
    assert "3 systems side by side (`keywords_*`)" in outcome.status
    references = [row["references"] for row in rows]
    base = [r["keywords_base"] for r in rows]
    expected = {
        m: compare_systems("keyword_prf", base, [r[f"keywords_{m}"] for r in rows], references)
        for m in ("sentiment", "metadata")
    }
    report = outcome.report
    assert report.columns.tolist() == [
        "system", "metric", "base", "value", "difference", "95% interval", "p", "p (Holm)", "significant"
    ]  # fmt: skip
    for system, metric, *_, p, p_holm, significant in report.itertuples(index=False):
        assert float(p) == pytest.approx(expected[system][metric.removesuffix(" ↑")]["p_value"], abs=HALF_A_SHOWN_UNIT)
        assert significant == ("yes" if float(p_holm) < 0.05 else "no")
    # the results table: each difference under its value, marked where significant
    cell = outcome.summary["sentiment"][1]
    difference = expected["sentiment"]["precision"]["difference"]
    assert f"<br>{difference:+.4f}" in cell and cell.endswith("†") == (report.iloc[0]["significant"] == "yes")
    assert "60 pairs" in outcome.notes and "Holm's correction for the 2 systems compared with base" in outcome.notes


def test_the_movie_files_without_gold_say_where_gold_comes_from():
    import gradio
    from conftest import MOVIE_REVIEWS, require_shared

    upload = str(require_shared(MOVIE_REVIEWS) / "SW_Episode4.jsonl.gz")
    with pytest.raises(gradio.Error) as raised:
        run("keyword_prf", "", "", "", upload, *_defaults("keyword_prf"))
    message = raised.value.message
    assert message.startswith("no column of gold keywords in SW_Episode4.jsonl.gz: looked for references, gold")
    assert "`keywords_base`" in message and "`predictions`" not in message  # the file's own columns only
    assert "joined by the CLI: --gold FILE" in message


def test_the_differences_plot_is_drawn_on_the_differences_own_scale():
    from opinion_metrics.demo.plots import plot_differences

    axes = plot_differences([("keyword_prf", "recall", 0.001)], [(0.0005, 0.002)]).axes[0]
    assert axes.get_xlim() == pytest.approx((-0.0026, 0.0026))  # a difference of 0.001 is visible


def test_plots_say_where_lower_is_better():
    from opinion_metrics.demo.plots import plot_differences, plot_systems

    results = {"x": {"keyword_diversity": {"unique_keyword_ratio": 0.9, "self_similarity": 0.3}}}
    labels = [label.get_text() for label in plot_systems(results).axes[0].get_yticklabels()]
    assert labels == ["keyword_diversity: unique_keyword_ratio", "keyword_diversity: self_similarity (lower is better)"]
    rows = [("keyword_diversity", "unique_keyword_ratio", 0.9), ("keyword_diversity", "self_similarity", 0.3)]
    labels = [label.get_text() for label in plot_differences(rows, [(0, 1), (0, 1)]).axes[0].get_yticklabels()]
    assert labels == ["unique_keyword_ratio", "self_similarity (lower is better)"]


def test_the_comparison_tab_refuses_a_file_without_two_systems(tmp_path):
    import gradio

    path = tmp_path / "one.jsonl"
    path.write_text('{"predictions": ["a"], "references": ["a"]}\n', encoding="utf-8")
    with pytest.raises(gradio.Error, match="compare needs at least two systems"):
        compare_systems_tab("keyword_prf", "", "", "", upload=str(path))


# --- in Chromium ------------------------------------------------------------------------

FOUR_DECIMALS = re.compile(r"^-?\d\.\d{4}$")


def _unbroken(locator) -> bool:
    """Whether no word of the element's text is broken over two lines: its text takes at most
    one line per word (a single name such as "semantic_precision": one line)."""
    return locator.evaluate(
        "cell => { const range = document.createRange(); range.selectNodeContents(cell);"
        " const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));"
        " return tops.size <= cell.innerText.trim().split(/\\s+/).length; }"
    )


# The first text of a cell (a metric's name and its arrow) lies on one line.
FIRST_LINE_WHOLE = """cell => {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT,
        {acceptNode: node => node.textContent.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT});
    const node = walker.nextNode(); if (!node) return true;
    const range = document.createRange(); range.selectNodeContents(node);
    return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size <= 1; }"""


def _contrast(locator) -> float:
    """WCAG contrast ratio of the element's text colour against white."""
    color = locator.evaluate("e => getComputedStyle(e).color")
    channels = [int(v) / 255 for v in re.findall(r"\d+", color)[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 1.05 / (luminance + 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*FAMILIES, "opinion_metrics"])
def test_each_space_opens_with_its_example_computed_and_readable(browser, name, tmp_path):
    from playwright.sync_api import expect

    if name in ("semantic_keyword_prf", "keyword_diversity", "opinion_metrics"):
        pytest.importorskip("sentence_transformers")
    if name in ("sentiment_appropriateness", "opinion_metrics"):
        pytest.importorskip("vaderSentiment")
    combined = name == "opinion_metrics"
    app = build_combined_app() if combined else build_app(name)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        # no click: the example is computed when the page loads
        expect(page.get_by_text("Computed on the text boxes").first).to_be_visible(timeout=120_000)
        expect(page.get_by_text(re.compile(r"\d+ examples? · "))).to_be_visible()
        tables = page.locator("div.table-wrap")
        expected_tables = 2 if combined else 3 - (name == "aspect_sentiment_score")  # combined: results, why
        expect(tables).to_have_count(expected_tables, timeout=30_000)  # (the other tab renders when opened)
        page.wait_for_timeout(1500)  # the outputs fade in
        for index in range(expected_tables):  # results, per example (per aspect), why
            expect(tables.nth(index).locator('[role="gridcell"]').first).to_be_visible()
        results = tables.first
        names = results.locator('[role="gridcell"][data-col="0"]')
        for cell in names.all():  # a metric's name and direction on one line (its meaning wraps below)
            assert cell.evaluate(FIRST_LINE_WHOLE), cell.inner_text()
        values = results.locator('[role="gridcell"][data-col="1"]').all_inner_texts()[1:]  # after the examples
        assert values and all(FOUR_DECIMALS.match(value.strip()) for value in values), values
        assert page.locator("div.plot-container, .js-plotly-plot, img").first.is_visible()
        for info in page.locator(".info-text").all()[:3]:
            assert _contrast(info) >= 4.5
        page.screenshot(path=str(tmp_path / f"{name}-at-load.png"))
        page.screenshot(path=str(tmp_path / f"{name}-at-load-full.png"), full_page=True)  # the tables below
        if combined:
            page.get_by_role("tab", name="compare systems").click()
            comparison = page.locator("div.table-wrap").filter(has_text="p (Holm)")
            expect(comparison).to_contain_text("yes")  # computed at load too
            page.wait_for_timeout(1000)
            for header in comparison.locator("thead th span.header").all():  # headers unbroken too
                assert _unbroken(header), header.inner_text()
            page.screenshot(path=str(tmp_path / f"{name}-compared-at-load.png"))
    finally:
        page.close()
        app.close()
    keep_screenshots(tmp_path)


@pytest.mark.slow
def test_an_error_stays_in_the_status_line_and_two_systems_get_a_column_each_and_a_selector(browser, tmp_path):
    from playwright.sync_api import expect

    app = build_app("keyword_prf")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch_space(app))
        expect(page.get_by_text("Computed on the text boxes")).to_be_visible(timeout=60_000)
        why = page.locator("div.table-wrap").nth(2)
        expect(why).to_contain_text("social satire → satire; dark comedy → comedy")
        page.screenshot(path=str(tmp_path / "keyword_prf-explained.png"), full_page=True)
        # an error: one gold line for two prediction lines
        page.get_by_label("references").fill("satire")
        page.get_by_role("button", name="Compute").click()
        status = page.locator('[data-testid="markdown"].om-status')
        expect(status).to_contain_text("Not computed:", timeout=30_000)
        expect(status).to_contain_text("references")
        page.wait_for_timeout(11_000)  # longer than a toast stays
        expect(status).to_contain_text("Not computed:")
        page.screenshot(path=str(tmp_path / "keyword_prf-error.png"))
        # an upload with a model column: one row per system, a selector for the per-example view
        page.get_by_text("or upload a file").click()
        page.locator(".om-upload input[type=file]").set_input_files(str(EXAMPLE))
        # uploaded; the file's name by its accessible name (its text splits "reviews" from ".jsonl" by layout)
        expect(page.locator(".om-upload").get_by_role("cell", name="reviews.jsonl")).to_be_visible(timeout=30_000)
        expect(status).to_contain_text("2 systems of its model column", timeout=30_000)  # computed without a click
        results = page.locator("div.table-wrap").first
        expect(results).to_contain_text("baseline")
        expect(results).to_contain_text("sentiment")
        selector = page.get_by_label("system shown per example")
        expect(selector).to_be_visible()
        rows = page.locator("div.table-wrap").nth(1)
        first_line = rows.locator('[data-testid="cell-0-0"]')
        expect(first_line).to_have_text("1")  # baseline: lines 1, 3, ...
        selector.click()
        page.get_by_role("option", name="sentiment").click()
        expect(first_line).to_have_text("2", timeout=30_000)  # sentiment: lines 2, 4, ...
        page.wait_for_timeout(1000)
        page.screenshot(path=str(tmp_path / "keyword_prf-two-systems.png"), full_page=True)
    finally:
        page.close()
        app.close()
    keep_screenshots(tmp_path)
