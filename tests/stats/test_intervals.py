"""Intervals and paired comparisons of every family (SPEC section 11) against plain loops that
resample the examples and call the metric itself."""

import numpy as np
import pytest

from opinion_metrics import (
    aspect_sentiment_score,
    compare_systems,
    keyword_diversity,
    keyword_prf,
    sentiment_appropriateness,
    weighted_keyword_prf,
)
from opinion_metrics.families.keyword_prf import keyword_prf_statistics
from opinion_metrics.stats.resampling import bootstrap_counts

PREDICTIONS = [["war", "jedi"], ["pizza"], ["empire", "rebels", "x"], [], ["droid"], ["force", "war"]]
SCORES = [[0.9, 0.4], [0.3], [0.8, 0.5, 0.1], [], [0.7], [0.6, 0.2]]
REFERENCES = [["war", "jedi knight"], ["jedi"], ["empire"], ["han"], ["droids", "r2"], ["the force"]]


def looped_interval(metric, statistics, n_resamples, level, random_state, *columns):
    """Each key's percentile interval over the resamples that `bootstrap_counts` draws, with the
    metric called on each resampled corpus (example i repeated counts[i] times)."""
    samples = {}
    for block in bootstrap_counts(statistics, n_resamples, random_state):
        for counts in block:
            rows = np.repeat(np.arange(len(counts)), counts)
            result = metric(*([column[i] for i in rows] for column in columns))
            for key, value in result.items():
                samples.setdefault(key, []).append(value)
    quantiles = [(1 - level) / 2, (1 + level) / 2]
    return {key: tuple(np.quantile(values, quantiles)) for key, values in samples.items()}


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_keyword_prf_intervals_equal_a_loop_over_resampled_corpora(average):
    options = {"average": average, "top_k": 2}
    statistics, _, _ = keyword_prf_statistics(PREDICTIONS, REFERENCES, **options)
    result = keyword_prf(PREDICTIONS, REFERENCES, confidence_level=0.9, n_resamples=200, random_state=3, **options)
    expected = looped_interval(
        lambda p, r: keyword_prf(p, r, **options), statistics, 200, 0.9, 3, PREDICTIONS, REFERENCES
    )
    for key, (low, high) in expected.items():
        assert (result[f"{key}_ci_low"], result[f"{key}_ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert list(result) == [f"{k}{s}" for k in ("precision", "recall", "f1") for s in ("", "_ci_low", "_ci_high")]


def test_weighted_intervals_equal_a_loop_including_ndcg_left_out_examples():
    from opinion_metrics.families.weighted_keyword_prf import weighted_statistics

    references = [*REFERENCES[:3], [], *REFERENCES[4:]]  # example 3 has no gold: out of nDCG and MAP
    statistics, _, _ = weighted_statistics(PREDICTIONS, SCORES, references, k=2)
    result = weighted_keyword_prf(PREDICTIONS, SCORES, references, k=2, confidence_level=0.8, n_resamples=150)
    expected = looped_interval(
        lambda p, s, r: weighted_keyword_prf(p, s, r, k=2), statistics, 150, 0.8, 0, PREDICTIONS, SCORES, references
    )
    for key, (low, high) in expected.items():
        assert (result[f"{key}_ci_low"], result[f"{key}_ci_high"]) == pytest.approx((low, high), abs=1e-12), key


def test_sentiment_and_diversity_intervals_equal_a_loop():
    from opinion_metrics.families.keyword_diversity import diversity_statistics
    from opinion_metrics.families.sentiment_appropriateness import sentiment_statistics

    def sentiment(text):
        return (len(text) % 5) / 4

    options = {"sentiment": sentiment}
    statistics, _, _ = sentiment_statistics(PREDICTIONS, REFERENCES, **options)
    result = sentiment_appropriateness(PREDICTIONS, REFERENCES, confidence_level=0.9, n_resamples=100, **options)
    expected = looped_interval(
        lambda p, r: sentiment_appropriateness(p, r, **options), statistics, 100, 0.9, 0, PREDICTIONS, REFERENCES
    )
    low, high = expected["sas_from_keywords"]
    assert (result["sas_from_keywords_ci_low"], result["sas_from_keywords_ci_high"]) == pytest.approx((low, high))

    predictions = [["a", "a", "b"], ["c d", "d"], [], ["e"]]
    statistics, _, _ = diversity_statistics(predictions)
    result = keyword_diversity(predictions, confidence_level=0.9, n_resamples=100)
    expected = looped_interval(keyword_diversity, statistics, 100, 0.9, 0, predictions)
    for key, (low, high) in expected.items():
        assert (result[f"{key}_ci_low"], result[f"{key}_ci_high"]) == pytest.approx((low, high), abs=1e-12)


def test_intervals_are_reproducible_and_bad_options_are_refused():
    first = keyword_prf(PREDICTIONS, REFERENCES, confidence_level=0.95)
    assert first == keyword_prf(PREDICTIONS, REFERENCES, confidence_level=0.95)  # random_state=0
    assert first["precision_ci_low"] <= first["precision"] <= first["precision_ci_high"]
    with pytest.raises(ValueError, match="confidence_level must be a number strictly between 0 and 1"):
        keyword_prf(PREDICTIONS, REFERENCES, confidence_level=95)
    with pytest.raises(ValueError, match="n_resamples must be a positive integer"):
        weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES, confidence_level=0.9, n_resamples=0)


def test_compare_systems_of_identical_systems_gives_p_one():
    for method in ("permutation", "bootstrap"):
        result = compare_systems("keyword_prf", PREDICTIONS, PREDICTIONS, REFERENCES, method=method)
        assert {key: value["p_value"] for key, value in result.items()} == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
        assert all(value["difference"] == 0.0 for value in result.values())


def test_compare_systems_values_equal_the_plain_metric_for_every_family():
    other = [["war"], ["jedi"], ["empire"], ["han"], [], ["force"]]
    other_scores = [[0.5], [0.9], [0.7], [0.6], [], [0.4]]
    result = compare_systems(
        "weighted_keyword_prf", PREDICTIONS, other, REFERENCES, scores_a=SCORES, scores_b=other_scores
    )
    a = weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES)
    b = weighted_keyword_prf(other, other_scores, REFERENCES)
    for key in a:
        assert (result[key]["a"], result[key]["b"]) == pytest.approx((a[key], b[key]))
        assert result[key]["difference"] == pytest.approx(b[key] - a[key])
    ratings_a, ratings_b, gold = [[0, 4], [3, 0], [5, 5]], [[0, 5], [3, 2], [5, 4]], [[0, 5], [3, 2], [4, 4]]
    aspects = compare_systems("aspect_sentiment_score", ratings_a, ratings_b, gold, aspects=["food", "hotel"])
    assert aspects["score"]["a"] == aspect_sentiment_score(ratings_a, gold, aspects=["food", "hotel"])["score"]
    diversity = compare_systems("keyword_diversity", [["a", "a"]] * 3, [["a", "b"]] * 3)
    assert diversity["unique_keyword_ratio"]["difference"] == 0.5


def test_compare_systems_refuses_what_it_cannot_pair():
    with pytest.raises(ValueError, match="has no option 'averge'; did you mean 'average'"):
        compare_systems("keyword_prf", PREDICTIONS, PREDICTIONS, REFERENCES, averge="micro")
    with pytest.raises(ValueError, match="inputs must have one entry per example"):
        compare_systems("keyword_prf", PREDICTIONS, PREDICTIONS[:-1], REFERENCES)
    with pytest.raises(ValueError, match="give scores_a and scores_b"):
        compare_systems("weighted_keyword_prf", PREDICTIONS, PREDICTIONS, REFERENCES)
    with pytest.raises(ValueError, match="unknown metric family 'rouge'"):
        compare_systems("rouge", PREDICTIONS, PREDICTIONS, REFERENCES)


def test_a_real_difference_on_the_movie_data_from_both_methods(movie_reviews):
    sample = [review for review in movie_reviews if review["movie"] == "SW_Episode4"]
    references = [review["gold"] for review in sample]
    base = [review["keywords_base"] or [] for review in sample]
    sentiment = [review["keywords_sentiment"] or [] for review in sample]
    results = {
        method: compare_systems("keyword_prf", base, sentiment, references, method=method, n_resamples=2000)
        for method in ("permutation", "bootstrap")
    }
    plain = keyword_prf(sentiment, references)["f1"] - keyword_prf(base, references)["f1"]
    for result in results.values():
        assert result["f1"]["difference"] == pytest.approx(plain)
        assert result["f1"]["difference_ci_low"] <= plain <= result["f1"]["difference_ci_high"]
    p_permutation, p_bootstrap = (results[m]["f1"]["p_value"] for m in ("permutation", "bootstrap"))
    # The same region: both significant at 5%, or both not, and within a factor of a few.
    assert (p_permutation < 0.05) == (p_bootstrap < 0.05)
    assert abs(np.log10(max(p_permutation, 5e-4)) - np.log10(max(p_bootstrap, 5e-4))) < 1


def test_compare_systems_of_sentiment_on_texts_alone():
    def sentiment(text):
        return 0.9 if "good" in text.lower() else 0.1

    texts = ["A good film.", "Good acting.", "Bad plot."]
    a, b = [["bad"], ["bad"], ["good"]], [["good"], ["good"], ["bad"]]
    result = compare_systems("sentiment_appropriateness", a, b, texts=texts, sentiment=sentiment)
    # a: 1 - |0.1 - 0.9| = 0.2 on every review; b: 1.0 on every review.
    assert (result["sas_from_text"]["a"], result["sas_from_text"]["b"]) == (pytest.approx(0.2), pytest.approx(1.0))
    assert "sas_from_keywords" not in result


def test_resamples_without_a_counted_example_leave_no_nan():
    # A resample that draws only the example without predictions has no SAS: it is left out,
    # never a NaN interval; the permutation test of equal values gives p = 1.
    def sentiment(text):
        return 0.9 if text in ("great", "good") else 0.1

    result = sentiment_appropriateness(
        [["great"], ["awful"], []], [["good"], ["bad"], ["x"]], sentiment=sentiment, confidence_level=0.95
    )
    assert all(np.isfinite(value) for value in result.values())
    assert (result["sas_from_keywords_ci_low"], result["sas_from_keywords_ci_high"]) == (1.0, 1.0)
    for method in ("permutation", "bootstrap"):
        compared = compare_systems(
            "sentiment_appropriateness",
            [["great"], []],
            [[], ["great"]],
            [["good"], ["good"]],
            sentiment=sentiment,
            method=method,
        )["sas_from_keywords"]
        assert compared["p_value"] == 1.0 and all(np.isfinite(value) for value in compared.values())


def test_compare_systems_refuses_inputs_the_family_does_not_take():
    with pytest.raises(ValueError, match="aspect_sentiment_score takes no texts"):
        compare_systems("aspect_sentiment_score", [[0, 1]], [[0, 1]], [[0, 1]], aspects=["a", "b"], texts=["x"])
    with pytest.raises(ValueError, match="keyword_prf takes no scores"):
        compare_systems("keyword_prf", PREDICTIONS, PREDICTIONS, REFERENCES, scores_a=SCORES, scores_b=SCORES)
    with pytest.raises(ValueError, match="keyword_diversity takes no references"):
        compare_systems("keyword_diversity", PREDICTIONS, PREDICTIONS, REFERENCES)
