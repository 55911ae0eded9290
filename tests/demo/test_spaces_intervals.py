"""Confidence intervals in the Spaces (issue 13 item 2): the intervals checkbox shows the
library's interval next to each value, in every family's app and in the combined app."""

import pytest
from conftest import space_results
from space_apps import call, running_clients

pytest.importorskip("gradio")

from opinion_metrics import keyword_prf  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines, parse_rating_lines  # noqa: E402


@pytest.fixture(scope="module")
def clients():
    yield from running_clients()


def _interval(low, high):
    return f"[{low:.4f}, {high:.4f}]"


@pytest.mark.parametrize(
    "name", ["keyword_prf", "weighted_keyword_prf", "sentiment_appropriateness", "aspect_sentiment_score"]
)
def test_the_intervals_checkbox_shows_the_librarys_interval_next_to_each_value(clients, name):
    if name == "sentiment_appropriateness":
        pytest.importorskip("vaderSentiment")
    from opinion_metrics.families import registry as declared

    family = FAMILIES[name]
    summary, rows, _ = call(clients[name], name, *family.example, confidence_level=True)
    assert summary["headers"] == ["metric", "value"]
    inputs = {
        "keyword_prf": lambda p, r, t: ((parse_keyword_lines(p)[0], parse_keyword_lines(r)[0]), {}),
        "weighted_keyword_prf": lambda p, r, t: ((*parse_keyword_lines(p), parse_keyword_lines(r)[0]), {}),
        "sentiment_appropriateness": lambda p, r, t: (
            (parse_keyword_lines(p)[0], parse_keyword_lines(r)[0]),
            {"texts": t.split("\n")},
        ),
        "aspect_sentiment_score": lambda p, r, a: ((parse_rating_lines(p), parse_rating_lines(r)), {}),
    }[name]
    arguments, keywords = inputs(*family.example)
    expected = declared.FAMILIES[name].function(*arguments, **keywords, confidence_level=0.95)
    shown = space_results(summary)  # each value with its interval below it, "[low, high]"
    assert shown == {
        key: (round(expected[key], 4), (round(expected[f"{key}_ci_low"], 4), round(expected[f"{key}_ci_high"], 4)))
        for key in shown
    }
    assert all(
        f"<br>[{low:.4f},\u00a0{high:.4f}]" in row[1]
        for row, (_, (low, high)) in zip(summary["data"][1:], shown.values())
    )
    assert expected[next(iter(shown)) + "_ci_low"] < expected[next(iter(shown)) + "_ci_high"]  # a real interval
    if name == "aspect_sentiment_score":  # each aspect's F1 and R2 intervals in the per-aspect table
        columns = dict(zip(rows["headers"], zip(*rows["data"])))
        aspects = columns["aspect"]
        assert list(columns["f1_ci_low"]) == [round(expected[f"f1_{a}_ci_low"], 4) for a in aspects]
        assert list(columns["r2_ci_high"])[:-1] == [round(expected[f"r2_{a}_ci_high"], 4) for a in aspects[:-1]]
        assert columns["r2_ci_high"][-1] == "n/a (no overlap)"


def test_the_combined_app_shows_intervals_and_keyword_diversity(clients):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.embeddings.encoder import DEFAULT_MODEL
    from opinion_metrics.families.keyword_diversity import keyword_diversity

    predictions = "great acting (0.9); moving story (0.6)\nboring plot (0.8); space (0.3); plot (0.2)"
    _, result, _ = clients["combined"].predict(
        predictions,
        "masterpiece; moving story\ndull; boring plot; space opera",
        "A moving, beautiful film.\nDull and far too long.",
        None,
        True,
        api_name="/compare",
    )
    assert result["headers"] == ["metric", "value"]
    rows = {tuple(name.split(": ")): found for name, found in space_results(result).items()}
    keywords = parse_keyword_lines(predictions)[0]
    expected = keyword_diversity(keywords, model=DEFAULT_MODEL, confidence_level=0.95)
    # By hand: line 2's words boring, plot, space, plot: 3 distinct of 4; line 1: 4 of 4.
    assert expected["unique_token_ratio"] == pytest.approx((1 + 3 / 4) / 2)
    for key in ("unique_keyword_ratio", "unique_token_ratio", "self_similarity"):
        assert rows[("keyword_diversity", key)] == (
            round(expected[key], 4),
            (round(expected[f"{key}_ci_low"], 4), round(expected[f"{key}_ci_high"], 4)),
        )
    f1 = keyword_prf(
        keywords, [["masterpiece", "moving story"], ["dull", "boring plot", "space opera"]], confidence_level=0.95
    )
    assert rows[("keyword_prf", "f1")] == (round(f1["f1"], 4), (round(f1["f1_ci_low"], 4), round(f1["f1_ci_high"], 4)))
