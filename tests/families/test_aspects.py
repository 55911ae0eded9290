"""Family 5 (SPEC section 7): hand-computed rules, the real train set, the bad-input table."""

import csv

import numpy as np
import pytest
from conftest import TOURISM_REVIEWS, require_shared

from opinion_metrics.families import aspect_sentiment_score as aspects_module
from opinion_metrics.families.aspect_sentiment_score import (
    VIETNAMESE_COLUMNS,
    aspect_sentiment_score,
    aspect_statistics,
)
from opinion_metrics.stats.resampling import bootstrap_counts, compare_systems_statistics

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
    assert score(np.array([[0, 4]], dtype=np.uint16), np.array([[0, 5]], dtype=object)) == expected
    assert score(np.array([[0, 4]], dtype=np.float32), [np.array([0, 5])]) == expected
    assert score(np.array([[0, 1, 4, 1]])[:, ::2], np.array([[0, 5]])) == expected  # a strided view


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
    ([[True, 2]], [[0, 2]], {}, r"predictions: example 0, aspect 'food': rating must be an integer, got bool True"),
    ([[0, 2], [1, False]], [[0, 2]] * 2, {}, r"example 1, aspect 'hotel': rating must be an integer, got bool False"),
    ([[0, 2]], [[0, 2], [np.True_, 1]], {}, r"references: example 1, aspect 'food': .* got bool np.True_"),
    (
        [np.array([0, 2]), np.array([True, False])],
        [[0, 2]] * 2,
        {},
        r"predictions: example 1, aspect 'food': .* got bool np.True_",
    ),
    (np.array([[True, False]]), [[0, 2]], {}, r"rating must be an integer, got bool"),
    (
        [[0, 10**20]],
        [[0, 2]],
        {},
        r"example 0, aspect 'hotel': rating 100000000000000000000 is outside \{0\} ∪ \[1, 5\]",
    ),
    ([[0, 1e20]], [[0, 2]], {}, r"example 0, aspect 'hotel': rating 100000000000000000000 is outside"),
    (np.array([[0, 2**40]]), [[0, 2]], {}, r"example 0, aspect 'hotel': rating 1099511627776 is outside"),
    (np.array([[0, 2**64 - 1]], dtype=np.uint64), [[0, 2]], {}, r"rating 18446744073709551615 is outside"),
    ([[0, 2]], [[0, 2]], {"confidence_level": 1.5}, r"confidence_level must be a number strictly between 0 and 1"),
    ([[0, 2]], [[0, 2]], {"n_resamples": True}, r"n_resamples must be a positive integer, got True"),
    ([[0, 2]], [[0, 2]], {"random_state": "x"}, r"random_state must be None, a non-negative integer"),
]


@pytest.mark.parametrize(("predictions", "references", "options", "message"), BAD)
def test_bad_inputs(predictions, references, options, message):
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


def independent_scores(predicted, gold, min_rating=1, max_rating=5):
    """Per-aspect F1 x R2 with plain numpy masks, one aspect at a time."""
    scores = []
    for j in range(predicted.shape[1]):
        p, g = predicted[:, j].astype(np.float64), gold[:, j].astype(np.float64)
        tp, fp, fn = np.sum((p != 0) & (g != 0)), np.sum((p != 0) & (g == 0)), np.sum((p == 0) & (g != 0))
        f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
        both = (p != 0) & (g != 0)
        r2 = 1 - np.sum((p[both] - g[both]) ** 2) / (both.sum() * (max_rating - min_rating) ** 2) if both.any() else 1.0
        scores.append(f1 * r2)
    return scores


def random_ratings(rng, shape, max_rating=5, present=0.4):
    return np.where(rng.random(shape) < present, rng.integers(1, max_rating + 1, shape), 0)


@pytest.mark.parametrize("max_rating", [5, 12, 100])  # int8 blocks, the largest int8 range, float64 blocks
def test_many_blocks_equal_an_independent_computation(monkeypatch, max_rating):
    monkeypatch.setattr(aspects_module, "CACHE_ROWS", 1000)  # 23 full blocks and a partial one
    rng = np.random.default_rng(max_rating)
    predicted, gold = random_ratings(rng, (23_456, 4), max_rating), random_ratings(rng, (23_456, 4), max_rating)
    result = aspect_sentiment_score(predicted, gold, aspects=list("abcd"), max_rating=max_rating)
    expected = independent_scores(predicted, gold, max_rating=max_rating)
    assert [result[f"score_{name}"] for name in "abcd"] == pytest.approx(expected, abs=1e-12)
    assert result["score"] == pytest.approx(np.mean(expected), abs=1e-12)


def test_large_default_blocks_use_every_summing_lane():
    rng = np.random.default_rng(3)
    predicted, gold = random_ratings(rng, (300_001, 6)), random_ratings(rng, (300_001, 6))
    result = aspect_sentiment_score(predicted, gold)
    expected = independent_scores(predicted, gold)
    assert [result[f"score_{name}"] for name in aspects_module.DEFAULT_ASPECTS] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("side", ["predictions", "references"])
def test_bad_rating_in_a_later_block_names_its_example(monkeypatch, side):
    monkeypatch.setattr(aspects_module, "CACHE_ROWS", 1000)
    good = np.zeros((5000, 2), dtype=np.int64)
    bad = good.copy()
    bad[3456, 1] = 7
    tables = {"predictions": good, "references": good, side: bad}
    with pytest.raises(ValueError, match=rf"{side}: example 3456, aspect 'hotel': rating 7 is outside"):
        score(tables["predictions"], tables["references"])
    bad[3456, 1] = 2
    with pytest.raises(ValueError, match=rf"{side}: example 3456, aspect 'hotel': rating 2 is outside .*\[3, 5\]"):
        score(tables["predictions"], tables["references"], min_rating=3)


def test_statistics_sum_to_the_score_and_match_hand_counts():
    predictions, references = [[0, 4], [3, 0], [2, 5]], [[0, 5], [3, 2], [0, 1]]
    statistics, values = aspect_statistics(predictions, references, aspects=TWO)
    # Columns: TP food, TP hotel, FP food, FP hotel, FN food, FN hotel, SE food, SE hotel.
    assert statistics.tolist() == [
        [0, 1, 0, 0, 0, 0, 0, 1],
        [1, 0, 0, 0, 0, 1, 0, 0],
        [0, 1, 1, 0, 0, 0, 0, 16],
    ]
    expected = score(predictions, references)
    assert {key: float(value) for key, value in values(statistics.sum(axis=0)).items()} == expected
    resampled = values(np.stack([statistics.sum(axis=0), statistics[:1].sum(axis=0) * 3]))
    assert resampled["score"].tolist() == [expected["score"], (1 + 15 / 16) / 2]  # three copies of review 0


def tourism_gold():
    with open(require_shared(TOURISM_REVIEWS), encoding="utf-8", newline="") as lines:
        return np.array([[int(row[column]) for column in VIETNAMESE_COLUMNS] for row in csv.DictReader(lines)])


def perturbed(gold, rng, flip, shift):
    """A model: presence flipped with probability `flip`, ratings off by up to `shift` stars."""
    present = (gold != 0) != (rng.random(gold.shape) < flip)
    noisy = np.clip(gold + rng.integers(-shift, shift + 1, gold.shape), 1, 5)
    return np.where(present, np.where(gold != 0, noisy, 3), 0)


def test_intervals_on_the_train_set_equal_a_loop_over_the_same_resamples():
    gold = tourism_gold()
    predicted = perturbed(gold, np.random.default_rng(0), 0.1, 2)
    options = {"aspects": VIETNAMESE_COLUMNS, "confidence_level": 0.9, "n_resamples": 60, "random_state": 4}
    result = aspect_sentiment_score(predicted, gold, **options)
    plain = aspect_sentiment_score(predicted, gold, aspects=VIETNAMESE_COLUMNS)
    assert [key for key in result if not key.endswith(("_ci_low", "_ci_high"))] == list(plain)
    assert list(result)[:3] == ["score", "score_ci_low", "score_ci_high"]
    statistics, _ = aspect_statistics(predicted, gold, aspects=VIETNAMESE_COLUMNS)
    looped = {key: [] for key in plain}
    for block in bootstrap_counts(statistics, 60, 4):
        for counts in block:
            rows = np.repeat(np.arange(len(gold)), counts)
            for key, value in aspect_sentiment_score(predicted[rows], gold[rows], aspects=VIETNAMESE_COLUMNS).items():
                looped[key].append(value)
    for key, value in plain.items():
        low, high = np.quantile(looped[key], [0.05, 0.95])
        assert result[key] == value
        assert (result[f"{key}_ci_low"], result[f"{key}_ci_high"]) == pytest.approx((low, high), abs=1e-12)
        assert low <= value + 1e-12 and value <= high + 1e-12 or key.startswith("r2_")


def test_comparison_of_two_models_on_the_train_set():
    gold = tourism_gold()
    rng = np.random.default_rng(1)
    weak, strong = perturbed(gold, rng, 0.15, 2), perturbed(gold, rng, 0.1, 1)
    options = {"aspects": VIETNAMESE_COLUMNS}
    statistics_weak, values = aspect_statistics(weak, gold, **options)
    statistics_strong, _ = aspect_statistics(strong, gold, **options)
    difference = (
        aspect_sentiment_score(strong, gold, **options)["score"]
        - aspect_sentiment_score(weak, gold, **options)["score"]
    )
    p_values = {}
    for method in ("permutation", "bootstrap"):
        comparison = compare_systems_statistics(statistics_weak, statistics_strong, values, method=method)
        assert comparison["score"]["difference"] == pytest.approx(difference, abs=1e-12)
        assert 0 < comparison["score"]["difference_ci_low"] < difference < comparison["score"]["difference_ci_high"]
        p_values[method] = comparison["score"]["p_value"]
        same = compare_systems_statistics(statistics_weak, statistics_weak.copy(), values, method=method)
        assert all(entry["p_value"] == 1.0 for entry in same.values())
    assert p_values["permutation"] < 0.01 and p_values["bootstrap"] < 0.01
