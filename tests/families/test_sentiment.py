"""Family 4 (SPEC section 6) against VADER called directly."""

import pytest

vader = pytest.importorskip("vaderSentiment.vaderSentiment")

from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness, vader_sentiment  # noqa: E402

ANALYZER = vader.SentimentIntensityAnalyzer()


def weighted(text):
    scores = ANALYZER.polarity_scores(text)
    return 1.0 * scores["pos"] + 0.5 * scores["neu"] + 0.0 * scores["neg"]


def compound(text):
    return (ANALYZER.polarity_scores(text)["compound"] + 1) / 2


def mean(values):
    return sum(values) / len(values)


PREDICTIONS = [["Great acting!", "moving story", "great acting"], ["boring plot", "  "], []]
REFERENCES = [["masterpiece", "beautiful"], ["dull", "waste of time"], ["x"]]
TEXTS = ["A moving, beautiful film.", "Dull and far too long.", "Nothing predicted here."]


@pytest.mark.parametrize(("mapping", "function"), [("weighted", weighted), ("compound", compound)])
def test_equals_vader_called_directly(mapping, function):
    # Example 0 keeps "Great acting!" (VADER reads it as written) and drops its duplicate;
    # example 1 drops the empty keyword; example 2 has no predictions and is left out.
    s0 = mean([function("Great acting!"), function("moving story")])
    s1 = function("boring plot")
    expected_keywords = mean(
        [
            1 - abs(s0 - mean([function("masterpiece"), function("beautiful")])),
            1 - abs(s1 - mean([function("dull"), function("waste of time")])),
        ]
    )
    expected_text = mean([1 - abs(s0 - function(TEXTS[0])), 1 - abs(s1 - function(TEXTS[1]))])
    result = sentiment_appropriateness(PREDICTIONS, REFERENCES, texts=TEXTS, mapping=mapping, return_per_example=True)
    assert result["sas_from_keywords"] == pytest.approx(expected_keywords)
    assert result["sas_from_text"] == pytest.approx(expected_text)
    assert result["per_example"]["sas_from_keywords"][2] is None
    assert vader_sentiment(mapping)("Great acting!") == pytest.approx(function("Great acting!"))


def test_examples_left_out_and_absent_keys():
    result = sentiment_appropriateness([["good"], ["bad"]], [["fine"], []], return_per_example=True)
    assert result["per_example"]["sas_from_keywords"][1] is None and "sas_from_text" not in result
    assert result["sas_from_keywords"] == pytest.approx(1 - abs(weighted("good") - weighted("fine")))
    only_text = sentiment_appropriateness([["good"]], texts=["It was good."])
    assert set(only_text) == {"sas_from_text"}
    assert sentiment_appropriateness([[]], [["a"]]) == {}
    texts_with_gaps = sentiment_appropriateness([["good"], ["bad"]], texts=["Fine.", None], return_per_example=True)
    assert texts_with_gaps["per_example"]["sas_from_text"][1] is None
    # SPEC section 6: an empty or white-space text is left out (VADER would read it as negative).
    blank = sentiment_appropriateness([["good"], ["bad"], ["ok"]], texts=["Fine.", "", " \n"], return_per_example=True)
    assert blank["per_example"]["sas_from_text"][1:] == [None, None]
    assert blank["sas_from_text"] == pytest.approx(1 - abs(weighted("good") - weighted("Fine.")))


def test_prediction_sentiments_replace_vader_on_predictions():
    result = sentiment_appropriateness([["a", "b", "A"]], [["masterpiece"]], prediction_sentiments=[[0.9, 0.5, 0.1]])
    # "A" duplicates "a": its sentiment goes with it; s_pred = (0.9 + 0.5) / 2.
    assert result["sas_from_keywords"] == pytest.approx(1 - abs(0.7 - weighted("masterpiece")))


def test_custom_sentiment_function_for_other_languages():
    lexicon = {"tuyệt vời": 1.0, "ngon": 0.9, "dở": 0.1, "chán": 0.0}
    result = sentiment_appropriateness([["tuyệt vời", "dở"]], [["ngon", "chán"]], sentiment=lexicon.get)
    assert result["sas_from_keywords"] == pytest.approx(1 - abs(0.55 - 0.45))


def test_each_distinct_string_goes_through_the_sentiment_function_once():
    calls = []

    def counting(text):
        calls.append(text)
        return 0.5

    gold = ["fine", "good"]
    sentiment_appropriateness([["good", "bad"], ["bad", "good"], ["fine"]], [gold, gold, gold], sentiment=counting)
    assert sorted(calls) == ["bad", "fine", "good"]


def test_real_movie_reviews_four_models(movie_reviews):
    sample = movie_reviews[::300]
    for model in ("base", "sentiment"):
        predictions = [review[f"keywords_{model}"] or [] for review in sample]
        references = [review["gold"][:30] for review in sample]
        texts = [review["review"] for review in sample]
        keyword_scores, text_scores = [], []
        for predicted, gold, text in zip(predictions, references, texts):
            kept, seen = [], set()
            for keyword in predicted:
                if keyword.strip() and keyword.strip().casefold() not in seen:
                    seen.add(keyword.strip().casefold())
                    kept.append(keyword.strip())
            if not kept:
                continue
            s_pred = mean([weighted(k) for k in kept])
            keyword_scores.append(1 - abs(s_pred - mean([weighted(g) for g in gold])))
            text_scores.append(1 - abs(s_pred - weighted(text)))
        result = sentiment_appropriateness(predictions, references, texts=texts)
        assert result["sas_from_keywords"] == pytest.approx(mean(keyword_scores))
        assert result["sas_from_text"] == pytest.approx(mean(text_scores))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"predictions": [["a", 3]], "references": [["b"]]}, r"predictions: example 0, keyword 1 must be a str"),
        (
            {"predictions": [["a"]], "references": [["b"]], "prediction_sentiments": [[1.5]]},
            r"prediction_sentiments: example 0, keyword 0 \('a'\): score 1.5 is outside \[0, 1\]",
        ),
        (
            {"predictions": [["a", "b"]], "references": [["b"]], "prediction_sentiments": [[0.5]]},
            r"predictions: example 0 has 2 keywords but 1 prediction_sentiments",
        ),
        ({"predictions": [["a"]], "references": [["b"]], "texts": [3]}, r"texts: example 0 must be a str"),
        ({"predictions": [["a"]], "references": [["b"]], "texts": ["x", "y"]}, r"predictions has 1, texts has 2"),
        ({"predictions": [["a"]]}, r"give references, texts, or both"),
        ({"predictions": [["a"]], "references": [["b"]], "mapping": "vader"}, r"mapping must be one of"),
        (
            {"predictions": [["a"]], "references": [["b"]], "sentiment": lambda s: 2.0},
            r"the sentiment function returned float 2.0 for 'a'",
        ),
    ],
)
def test_bad_inputs(options, message):
    with pytest.raises(ValueError, match=message):
        sentiment_appropriateness(**options)


def test_worker_processes_give_the_same_values(movie_reviews):
    sample = movie_reviews[::200]
    predictions = [review["keywords_base"] or [] for review in sample]
    references = [review["gold"] for review in sample]
    texts = [review["review"] for review in sample]
    alone = sentiment_appropriateness(predictions, references, texts=texts, workers=1, return_per_example=True)
    together = sentiment_appropriateness(predictions, references, texts=texts, workers=2, return_per_example=True)
    assert together == alone
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        sentiment_appropriateness(predictions, references, workers=0)


def _tricky_text(rng, n):
    words = [
        "good",
        "bad",
        "but",
        "BUT",
        "not",
        "never",
        "so",
        "this",
        "no",
        "or",
        "nor",
        "least",
        "at",
        "very",
        "kind",
        "of",
        "sort",
        "the",
        "movie",
        "GREAT",
        "awful",
        "without",
        "doubt",
        "isn't",
        ":)",
        "😀",
        "!",
        "?",
        "really",
        "extremely",
        "barely",
        "kiss",
        "death",
        "yeah",
        "right",
        "bomb",
        "cool",
        "cute",
    ]
    return " ".join(rng.choice(words) for _ in range(n))


def test_linear_vader_equals_vader_on_real_reviews_and_long_tricky_texts(movie_reviews):
    import random

    from opinion_metrics.families.sentiment_appropriateness import _linear_vader

    linear = _linear_vader(vader.SentimentIntensityAnalyzer)()
    reviews = [review["review"] for review in movie_reviews[::7]]
    assert all(linear.polarity_scores(text) == ANALYZER.polarity_scores(text) for text in reviews)
    rng = random.Random(0)
    for n in (1, 2, 3, 4, 10, 100, 3000):  # 'but' before, after and at the sentiment words; idioms; negations
        for _ in range(5 if n < 3000 else 1):
            text = _tricky_text(rng, n)
            assert linear.polarity_scores(text) == ANALYZER.polarity_scores(text), text[:200]
    joined = " ".join(reviews[:60])  # one long review: thousands of words
    assert linear.polarity_scores(joined) == ANALYZER.polarity_scores(joined)
    assert vader_sentiment("compound")(joined) == (ANALYZER.polarity_scores(joined)["compound"] + 1) / 2
