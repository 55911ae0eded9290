"""What a first-time user found in the Spaces after issue 30 was built (its cold pass), without a
browser: typed scores read alike everywhere, presence views counted, the CLI's files read, long
gold lists explained, the combined Space's why view, misspelt columns, readable option labels.
The Chromium checks are in test_spaces_compare.py."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
from conftest import MOVIE_REVIEWS, require_shared, space_values

pytest.importorskip("gradio")

from opinion_metrics import compare_systems, keyword_prf  # noqa: E402
from opinion_metrics.cli.command import main  # noqa: E402
from opinion_metrics.demo.comparing import compare_families, compare_systems_tab
from opinion_metrics.demo.controls import FAMILIES
from opinion_metrics.demo.explanations import explanation_table  # noqa: E402
from opinion_metrics.demo.handlers import _evaluate, run
from opinion_metrics.demo.results import frame_widths

MODELS = ("base", "reranker", "sentiment")


def _defaults(name: str, **given) -> list:
    return [given.get(option.name, option.default) for option in FAMILIES[name].options]


@pytest.fixture(scope="module")
def reviews() -> list[dict]:
    """The first 3 reviews of GoodBadUgly with its gold keywords (272 to 450 per film)."""
    directory = require_shared(MOVIE_REVIEWS)
    gold = {row["movie"]: row["keywords"] for row in map(json.loads, (directory / "ground_truth.jsonl").open())}
    with gzip.open(directory / "GoodBadUgly.jsonl.gz", "rt", encoding="utf-8") as stream:
        rows = [json.loads(line) for _, line in zip(range(3), stream)]
    return [{**row, "gold": gold[row["movie"]]} for row in rows]


def _typed(reviews: list[dict]) -> tuple[str, str, str]:
    """The boxes as the user typed them: every keyword with its score, "[model] a (0.55); b (0.54)"."""
    lines = [
        f"[{model}] " + "; ".join(f"{k} ({s:.2f})" for k, s in zip(r[f"keywords_{model}"], r[f"scores_{model}"]))
        for model in MODELS
        for r in reviews
    ]
    references = "\n".join("; ".join(r["gold"]) for r in reviews)
    return "\n".join(lines), references, "\n".join(r["review"].replace("\n", " ") for r in reviews)


def test_typed_scores_are_read_alike_in_every_tab_and_space(reviews):
    predictions, references, texts = _typed(reviews)
    gold = [r["gold"] for r in reviews]
    expected = {model: keyword_prf([r[f"keywords_{model}"] for r in reviews], gold) for model in MODELS}
    # the keyword_prf Space, the combined Space's two tabs: the same numbers
    _, summary, _, _ = run("keyword_prf", predictions, references, texts, None, *_defaults("keyword_prf"))
    _, combined, _, explained = compare_families(predictions, references, texts, None)
    for model in MODELS:
        rounded = {key: round(value, 4) for key, value in expected[model].items()}
        assert space_values(summary, model) == rounded
        assert {key: space_values(combined, model)[f"keyword_prf: {key}"] for key in rounded} == rounded
    _, report, _, _, _, _ = compare_systems_tab("keyword_prf", predictions, references, texts)
    first = report[(report["system"] == "sentiment") & (report["metric"] == "precision ↑")].iloc[0]
    assert first["base"] == f"{expected['base']['precision']:.4f}"  # 0.2000 (was 0.1333: "(0.46)" in a keyword)
    # the why view: the keyword, not "bad ugly (0.46) [bad ugly 046]"
    outcome = explained["keyword_prf"]
    inputs, part = outcome.systems["base"]
    why = explanation_table("keyword_prf", inputs.data, outcome.options, part)
    cells = " ".join(map(str, why.iloc[0].tolist()))
    assert "bad ugly → bad ugly" in cells and "(0." not in cells and "046" not in cells


def test_a_presence_view_counts_only_the_examples_that_count(reviews):
    predictions, references, texts = _typed(reviews)
    gold = [r["gold"] for r in reviews]
    review_texts = [r["review"].replace("\n", " ") for r in reviews]
    per_example = {
        model: keyword_prf([r[f"keywords_{model}"] for r in reviews], gold, texts=review_texts, presence="present",
                           return_per_example=True)["per_example"]
        for model in MODELS
    }  # fmt: skip
    counted = sum(value is not None for value in per_example["base"]["f1"])
    assert 0 < counted < 3  # some reviews mention no gold keyword
    left = 3 - counted
    status, summary, rows, _ = run(
        "keyword_prf", predictions, references, texts, None, *_defaults("keyword_prf", presence="present")
    )
    assert (
        f": {counted} of 3 examples each count ({left} left out: no present gold keyword) · presence present" in status
    )
    assert summary.iloc[0].tolist() == ["examples", *[f"{counted} of 3"] * 3]
    assert rows["f1"].tolist().count("left out (no present gold keyword)") == left
    status, _, notes, _, _, _ = compare_systems_tab("keyword_prf", predictions, references, texts, presence="present")
    assert f"3 examples paired by position, {counted} count" in status and "presence present" in status
    differing = sum(
        value is not None
        and any(
            per_example["sentiment"][k][i] != per_example["base"][k][i] for k in ("precision", "recall", "f1")
        )  # fmt: skip
        for i, value in enumerate(per_example["base"]["f1"])
    )
    pairs = f"{counted} pair" + "s" * (counted != 1)
    assert (
        f"sentiment vs base: {pairs} ({left} of 3 examples left out: no present gold keyword), {differing} scored"
        in notes
    )
    assert f"has only {pairs}, too few for a reliable comparison" in notes


def test_a_csv_written_by_pandas_is_read_as_the_cli_reads_it(tmp_path, reviews, capsys):
    rows = [{"doc": r["review_id"], "extractor": model, "kw": r[f"keywords_{model}"], "gt": r["gold"]}
            for model in MODELS for r in reviews]  # fmt: skip
    path = tmp_path / "pandas.csv"
    pd.DataFrame(rows).to_csv(path, index=False)  # list cells as "['bad movie', 'movie acting']"
    assert "['bad movie'," in path.read_text()
    mapping = {"predictions": "kw", "references": "gt", "system": "extractor", "id": "doc"}
    status, summary, _, _ = run("keyword_prf", "", "", "", str(path), *_defaults("keyword_prf"), mapping=mapping)
    output = tmp_path / "cli.json"
    arguments = ["--predictions", "kw", "--references", "gt", "--system", "extractor", "--output", str(output)]
    assert main([str(path), *arguments]) == 0
    cli = json.loads(output.read_text())
    for model in MODELS:
        expected = keyword_prf([r[f"keywords_{model}"] for r in reviews], [r["gold"] for r in reviews])
        assert cli[model]["keyword_prf"] == pytest.approx(expected)
        assert space_values(summary, model) == {key: round(value, 4) for key, value in expected.items()}
    assert "3 systems of its `extractor` column" in status
    # the usual names need no mapping: `keywords` and `gold` in pandas' list form are read too
    pd.DataFrame(rows).rename(columns={"kw": "keywords", "gt": "gold", "extractor": "model"}).to_csv(path, index=False)
    _, usual, _, _ = run("keyword_prf", "", "", "", str(path), *_defaults("keyword_prf"))
    assert space_values(usual, "base") == space_values(summary, "base")


def test_a_text_where_keywords_belong_names_the_column_the_line_and_the_fix(tmp_path):
    import gradio

    path = tmp_path / "texts.jsonl"
    path.write_text('{"keywords": ["a"], "gold": ["a"]}\n{"keywords": "a; b", "gold": ["a"]}\n', encoding="utf-8")
    with pytest.raises(gradio.Error) as raised:
        run("keyword_prf", "", "", "", str(path), *_defaults("keyword_prf"))
    message = raised.value.message
    assert message.startswith("column 'keywords', line 2 of texts.jsonl: 'a; b' is a text, not a list of keywords")
    assert "write the keywords as a list" in message and "expected a list of keyword lists" not in message


def test_a_misspelt_column_gets_the_closest_one(tmp_path):
    import gradio

    path = tmp_path / "odd.jsonl"
    path.write_text('{"kw": ["a"], "gt": ["a"]}\n', encoding="utf-8")
    with pytest.raises(gradio.Error) as raised:
        run("keyword_prf", "", "", "", str(path), *_defaults("keyword_prf"), mapping={"predictions": "kw",
            "references": "gtt"})  # fmt: skip
    assert (
        raised.value.message
        == "no column `gtt` for references in odd.jsonl (its columns: `kw`, `gt`); did you mean `gt`?"
    )


def test_the_why_view_shows_matches_first_a_few_gold_keywords_and_the_review_id(tmp_path, reviews):
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps({"review_id": r["review_id"], "model": m, "keywords": r[f"keywords_{m}"],
                    "gold": r["gold"]}) + "\n" for m in MODELS for r in reviews), encoding="utf-8")  # fmt: skip
    outcome = _evaluate("keyword_prf", "", "", "", str(path), _defaults("keyword_prf"))
    inputs, part = outcome.systems["base"]
    why = explanation_table("keyword_prf", inputs.data, outcome.options, part)
    assert why.columns.tolist()[:3] == ["line", "review_id", "matched: prediction → gold keyword"]
    assert why["review_id"].tolist() == [r["review_id"] for r in reviews]
    assert why.iloc[0, 2] == "bad ugly → bad ugly"
    unmatched = why.iloc[0, 4]
    left = len(reviews[0]["gold"]) - 1  # every gold keyword but "bad ugly"
    assert unmatched.endswith(f"; … and {left - 12} more ({left} in all)")
    assert unmatched.split("; ")[:3] == [g for g in reviews[0]["gold"] if g != "bad ugly"][:3]  # the first ones
    assert outcome.rows["review_id"].tolist() == [r["review_id"] for r in reviews]  # the per-example table too


def test_the_combined_space_explains_every_family_per_example():
    predictions, references, texts = "[A] satire (0.9); pizza (0.2)\n[B] comedy (0.5)", "satire; comedy", "x"
    _, _, _, explained = compare_families(predictions, references, texts, None)
    assert list(explained) == ["keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf",
                               "sentiment_appropriateness", "keyword_diversity"]  # fmt: skip
    outcome = explained["keyword_prf"]
    assert list(outcome.systems) == ["A", "B"]
    inputs, part = outcome.systems["A"]
    why = explanation_table("keyword_prf", inputs.data, outcome.options, part)
    assert why.iloc[0, 1:].tolist() == ["satire → satire", "pizza", "comedy"]


def test_the_report_table_is_as_wide_as_its_longest_line():
    from opinion_metrics.demo.combined import _GOLD, _SYSTEMS

    _, report, _, _, _, _ = compare_systems_tab("keyword_prf", _SYSTEMS, _GOLD, "")
    widths = dict(zip(report.columns, frame_widths(report)))
    longest = max(len(interval) for interval in report["95% interval"])  # "[+0.7083, +0.9583]": one line
    assert int(widths["95% interval"].removesuffix("px")) >= round(7.6 * longest) + 36
    assert int(widths["p (Holm)"].removesuffix("px")) >= round(7.6 * len("p (Holm)")) + 36


def test_option_labels_are_words_and_their_info_gives_the_api_name():
    labels = {option.name: (option.label or option.name, option.info) for option in FAMILIES["keyword_prf"].options}
    for name in ("one_to_one", "top_k", "zero_division"):
        label, info = labels[name]
        assert "_" not in label and info.endswith(f"(API: {name})")
    assert labels["one_to_one"][0] == "one-to-one matching"


def test_the_embedding_families_precision_is_labelled_as_the_models_number_format():
    """Beside semantic_precision, a control named "precision" reads as the metric's."""
    for family in ("semantic_keyword_prf", "keyword_diversity"):
        option = next(option for option in FAMILIES[family].options if option.name == "precision")
        assert option.label == "model's number format" and option.info.endswith("(API: precision)")
        assert (option.kind, tuple(option.choices), option.default) == (
            "choice",
            ("float32", "float16", "bfloat16"),
            "float32",
        )


def test_the_baseline_choices_follow_the_systems_typed():
    from opinion_metrics.demo.combined import _typed_choices
    from opinion_metrics.demo.results import ALL_OTHERS

    baseline, versus = _typed_choices("[tfidf] a\n[yake] b\n[keybert] c", "A", ALL_OTHERS)
    assert baseline["choices"] == ["tfidf", "yake", "keybert"] and baseline["value"] == "tfidf"
    assert versus["choices"] == [ALL_OTHERS, "yake", "keybert"]
    baseline, versus = _typed_choices("[tfidf] a\n[yake] b", "yake", "tfidf")
    assert (baseline["value"], versus["value"]) == ("yake", "tfidf")
    import gradio

    assert _typed_choices("[tfidf] a\nb", "A", ALL_OTHERS) == (gradio.skip(), gradio.skip())  # being fixed: kept


def test_a_comparison_of_a_reordering_system_has_no_pair_that_differs():
    gold = [["a", "b"], ["c"]]
    result = compare_systems("keyword_prf", [["a", "x"], ["c"]], [["x", "a"], ["c"]], gold)
    assert result["f1"]["p_value"] == 1.0
    _, report, notes, _, _, _ = compare_systems_tab("keyword_prf", "[A] a; x\n[A] c\n[B] x; a\n[B] c", "a; b\nc", "")
    assert "B vs A: 2 pairs, 0 scored differently; the two score every pair alike: p is 1" in notes
    assert report["difference"].tolist() == ["+0.0000"] * 3
