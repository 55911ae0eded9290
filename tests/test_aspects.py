"""Family 5 (SPEC section 7): hand-computed rules, the real train set, the bad-input table."""

import csv

import numpy as np
import pytest
from conftest import TOURISM_REVIEWS, require_shared

from opinion_metrics.aspects import VIETNAMESE_COLUMNS, aspect_sentiment_score

TWO = ["food", "hotel"]


def score(predictions, references, **options):
    return aspect_sentiment_score(predictions, references, aspects=options.pop("aspects", TWO), **options)


def test_hand_computed_example():
    # food: TP 1, F1 1; both rated once (3 vs 3): R2 1. hotel: TP 1, FN 1: F1 2/3; 4 vs 5: R2 1 - 1/16.
    result = score([[0, 4], [3, 0]], [[0, 5], [3, 2]])
    assert result == {
        "score": pytest.approx((1.0 + (2 / 3) * (15 / 16)) / 2),
        "f1_food": 1.0,
        "r2_food": 1.0,
        "score_food": 1.0,
        "f1_hotel": pytest.approx(2 / 3),
        "r2_hotel": 0.9375,
        "score_hotel": pytest.approx(0.625),
    }


def test_perfect_prediction_scores_one():
    ratings = [[0, 5], [1, 0], [3, 3]]
    assert score(ratings, ratings)["score"] == 1.0


def test_aspect_absent_from_both_sides_takes_zero_division():
    result = score([[0, 4]], [[0, 4]])
    assert result["f1_food"] == 1.0 and result["r2_food"] == 1.0 and result["score"] == 1.0
    result = score([[0, 4]], [[0, 4]], zero_division=0.0)
    assert result["f1_food"] == 0.0 and result["score"] == 0.5


def test_no_overlapping_rows_gives_r2_one_but_f1_zero():
    # food predicted only where absent, and missed where present: TP 0, FP 1, FN 1.
    result = score([[2, 0], [0, 0]], [[0, 0], [4, 0]])
    assert result["f1_food"] == 0.0 and result["r2_food"] == 1.0 and result["score_food"] == 0.0


def test_ratings_at_the_range_limits():
    # 1 vs 5 on both rated rows: RSS 32, K = 2 * 16: R2 0.
    result = score([[1, 5], [5, 1]], [[5, 1], [1, 5]])
    assert result["r2_food"] == 0.0 and result["r2_hotel"] == 0.0 and result["score"] == 0.0
    result = score([[1, 2]], [[2, 4]], min_rating=1, max_rating=10)
    assert result["r2_food"] == pytest.approx(1 - 1 / 81) and result["r2_hotel"] == pytest.approx(1 - 4 / 81)


def test_differs_from_sklearn_r2_score():
    # The denominator is the fixed range (3 rows x 4^2), not the variance of the references.
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    predictions, references = [[1], [3], [5]], [[2], [3], [4]]
    assert aspect_sentiment_score(predictions, references, aspects=["a"])["r2_a"] == pytest.approx(1 - 2 / 48)
    assert sklearn_metrics.r2_score([2, 3, 4], [1, 3, 5]) == pytest.approx(0.0)


def test_float_integers_and_numpy_inputs():
    expected = score([[0, 4]], [[0, 5]])
    assert score([[0.0, 4.0]], [[0, 5]]) == expected
    assert score(np.array([[0, 4]], dtype=np.int8), np.array([[0, 5]])) == expected


def test_aspects_option_renames_and_sets_the_count():
    result = aspect_sentiment_score([[1, 2, 3]], [[1, 2, 3]], aspects=["a", "b", "c"])
    assert list(result) == ["score", "f1_a", "r2_a", "score_a", "f1_b", "r2_b", "score_b", "f1_c", "r2_c", "score_c"]


BAD = [
    ([[0, 6]], [[0, 5]], {}, r"predictions: example 0, aspect 'hotel': rating 6 is outside \{0\} ∪ \[1, 5\]"),
    ([[0, 5]], [[0, -1]], {}, r"references: example 0, aspect 'hotel': rating -1 is outside"),
    ([[0, 4.5]], [[0, 5]], {}, r"predictions: example 0, aspect 'hotel': rating must be an integer, got 4.5"),
    ([[0, np.nan]], [[0, 5]], {}, r"example 0, aspect 'hotel': rating must be an integer, got nan"),
    ([[0, 5], [None, 1]], [[0, 5], [0, 1]], {}, r"example 1, aspect 'food': rating must be an integer, got NoneType"),
    ([[0, 5], [1, "2"]], [[0, 5], [0, 1]], {}, r"example 1, aspect 'hotel': rating must be an integer, got str '2'"),
    ([[0, 5], [1]], [[0, 5], [0, 1]], {}, r"predictions: example 1 has 1 ratings, expected 2"),
    ([[0, 5, 1]], [[0, 5, 1]], {}, r"predictions: example 0 has 3 ratings, expected 2"),
    ([], [], {}, r"no examples"),
    ([[0, 5]], [[0, 5], [1, 1]], {}, r"predictions has 1 examples but references has 2"),
    ([[0, 2]], [[0, 2]], {"min_rating": 3}, r"rating 2 is outside \{0\} ∪ \[3, 5\]"),
    ([[0, 2]], [[0, 2]], {"min_rating": 0}, r"need 1 <= min_rating < max_rating"),
    ([[0, 2]], [[0, 2]], {"max_rating": 4.5}, r"max_rating must be an integer"),
    ([[0, 2]], [[0, 2]], {"aspects": "food"}, r"aspects must be a non-empty list"),
    ([[0, 2]], [[0, 2]], {"aspects": ["a", "a"]}, r"aspects must be distinct"),
    ([[0, 2]], [[0, 2]], {"zero_division": -1}, r"zero_division must be a number in \[0, 1\]"),
    ([[True, 2]], [[0, 2]], {}, None),  # bools inside int lists become ints (documented)
    (np.array([[True, False]]), [[0, 2]], {}, r"rating must be an integer, got bool"),
]


@pytest.mark.parametrize(("predictions", "references", "options", "message"), BAD)
def test_bad_inputs(predictions, references, options, message):
    if message is None:
        score(predictions, references, **options)
        return
    with pytest.raises(ValueError, match=message):
        score(predictions, references, **options)


def test_real_train_set_equals_an_independent_per_aspect_computation():
    with open(require_shared(TOURISM_REVIEWS), encoding="utf-8", newline="") as lines:
        rows = list(csv.DictReader(lines))
    gold = [[int(row[column]) for column in VIETNAMESE_COLUMNS] for row in rows]
    rng = np.random.default_rng(0)
    # A plausible model: right presence 90% of the time, ratings off by up to 2 stars.
    predicted = []
    for ratings in gold:
        row = []
        for value in ratings:
            present = (value != 0) != (rng.random() < 0.1)
            row.append(int(np.clip(value + rng.integers(-2, 3), 1, 5)) if present and value else (3 if present else 0))
        predicted.append(row)
    expected_scores = []
    for j in range(6):
        tp = sum(1 for p, g in zip(predicted, gold) if p[j] and g[j])
        fp = sum(1 for p, g in zip(predicted, gold) if p[j] and not g[j])
        fn = sum(1 for p, g in zip(predicted, gold) if not p[j] and g[j])
        f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
        both = [(p[j], g[j]) for p, g in zip(predicted, gold) if p[j] and g[j]]
        r2 = 1 - sum((p - g) ** 2 for p, g in both) / (len(both) * 16) if both else 1.0
        expected_scores.append(f1 * r2)
    result = aspect_sentiment_score(predicted, gold, aspects=VIETNAMESE_COLUMNS)
    assert len(gold) == 3688
    assert result["score"] == pytest.approx(sum(expected_scores) / 6, abs=1e-12)
    assert [result[f"score_{c}"] for c in VIETNAMESE_COLUMNS] == pytest.approx(expected_scores, abs=1e-12)
    assert aspect_sentiment_score(gold, gold, aspects=VIETNAMESE_COLUMNS)["score"] == 1.0
