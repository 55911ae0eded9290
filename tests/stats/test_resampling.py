"""The resampling engine (SPEC section 11): coverage, null p-values, equality with a plain
loop over the same resamples, exact permutation enumeration, real movie data, bad options."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import sys
import tracemalloc

import numpy as np
import pytest
from conftest import MOVIE_REVIEWS, require_shared

from opinion_metrics import keyword_prf
from opinion_metrics.core import validation
from opinion_metrics.stats import resampling
from opinion_metrics.stats.resampling import (
    add_intervals,
    bootstrap_counts,
    bootstrap_intervals,
    compare_systems_statistics,
)

PRF = ("precision", "recall", "f1")


def mean_of_first(sums):
    """Value: column 0 summed over column 1 (a macro mean when column 1 is all ones)."""
    return {"mean": sums[..., 0] / sums[..., 1]}


def ratio_values(sums):
    """A macro mean (column 0 / column 2) and a micro ratio (column 1 / column 3)."""
    return {"macro": sums[..., 0] / sums[..., 2], "micro": sums[..., 1] / sums[..., 3]}


def prf_values(sums):
    """Macro P/R/F1 from sums of per-example P, R, F1 and a count column."""
    return {name: sums[..., column] / sums[..., 3] for column, name in enumerate(PRF)}


def prf_statistics(result):
    per_example = result["per_example"]
    return np.column_stack([*(per_example[name] for name in PRF), np.ones(len(per_example["f1"]))])


# --- Coverage ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["bernoulli", "continuous"])
def test_95_percent_intervals_cover_the_population_value_95_percent_of_the_time(kind):
    rng = np.random.default_rng(2024)
    repetitions, n_examples, covered = 400, 150, {"macro": 0, "micro": 0}
    # Population: per-example hit ~ Bernoulli(0.3) and predicted ~ 1 + Bernoulli(0.5) (few
    # distinct rows: grouped draws), or a Beta(2, 5) score and predicted ~ 1 + Poisson(2)
    # (many distinct rows: index draws); matched ~ Binomial(predicted, 0.4), so the micro
    # ratio E[matched] / E[predicted] is 0.4.
    macro_truth = 0.3 if kind == "bernoulli" else 2 / 7
    for _ in range(repetitions):
        if kind == "bernoulli":
            first, predicted = (rng.random(n_examples) < 0.3) * 1.0, 1 + (rng.random(n_examples) < 0.5)
        else:
            first, predicted = rng.beta(2, 5, n_examples), 1 + rng.poisson(2, n_examples)
        matched = rng.binomial(predicted, 0.4)
        statistics = np.column_stack([first, matched, np.ones(n_examples), predicted])
        intervals = bootstrap_intervals(statistics, ratio_values, confidence_level=0.95, random_state=rng)
        covered["macro"] += intervals["macro"][0] <= macro_truth <= intervals["macro"][1]
        covered["micro"] += intervals["micro"][0] <= 0.4 <= intervals["micro"][1]
    assert covered["macro"] / repetitions == pytest.approx(0.95, abs=0.03)
    assert covered["micro"] / repetitions == pytest.approx(0.95, abs=0.03)


def test_wider_level_gives_a_wider_interval_around_the_value():
    statistics = np.column_stack([np.random.default_rng(1).random(300), np.ones(300)])
    narrow = bootstrap_intervals(statistics, mean_of_first, confidence_level=0.5)["mean"]
    wide = bootstrap_intervals(statistics, mean_of_first, confidence_level=0.99)["mean"]
    value = statistics[:, 0].mean()
    assert wide[0] < narrow[0] < value < narrow[1] < wide[1]


# --- Equality with a plain loop over the same resamples ------------------------------------


def plain_loop_interval(counts_blocks, plain_value, level):
    values = []
    for block in counts_blocks:
        for counts in block:
            assert counts.sum() == block.shape[1] and (counts >= 0).all()
            values.append(plain_value(np.repeat(np.arange(block.shape[1]), counts)))
    return np.quantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)


def small_keyword_corpus(seed, n_examples):
    rng = np.random.default_rng(seed)
    vocabulary = ["star wars", "wars", "luke", "darth vader", "vader", "princess leia", "han solo", "droid", "music"]
    predictions = [list(rng.choice(vocabulary, size=rng.integers(0, 4), replace=False)) for _ in range(n_examples)]
    references = [list(rng.choice(vocabulary, size=rng.integers(1, 4), replace=False)) for _ in range(n_examples)]
    return predictions, references


@pytest.mark.parametrize("n_examples", [12, 200])  # index draws, then grouped draws of equal rows
def test_intervals_equal_a_loop_calling_keyword_prf_on_the_same_resamples(n_examples):
    predictions, references = small_keyword_corpus(7, n_examples)
    statistics = prf_statistics(keyword_prf(predictions, references, return_per_example=True))
    grouped = len(np.unique(statistics, axis=0)) * resampling.GROUPING_RATIO <= n_examples
    assert grouped == (n_examples == 200)
    intervals = bootstrap_intervals(statistics, prf_values, confidence_level=0.9, n_resamples=150, random_state=3)

    def plain(indices):
        result = keyword_prf([predictions[i] for i in indices], [references[i] for i in indices])
        return [result[name] for name in PRF]

    looped = plain_loop_interval(bootstrap_counts(statistics, 150, 3), plain, 0.9)
    for column, name in enumerate(PRF):
        assert intervals[name] == pytest.approx(tuple(looped[:, column]), abs=1e-12)


def test_intervals_equal_a_loop_over_blocks_of_many_examples(monkeypatch):
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", 5000)  # 2 resamples per block
    scores = np.random.default_rng(5).random(2000)
    statistics = np.column_stack([scores, np.ones(2000)])
    blocks = list(bootstrap_counts(statistics, 9, 11))
    assert [block.shape for block in blocks] == [(2, 2000)] * 4 + [(1, 2000)]
    looped = plain_loop_interval(blocks, lambda indices: scores[indices].mean(), 0.8)
    interval = bootstrap_intervals(statistics, mean_of_first, confidence_level=0.8, n_resamples=9, random_state=11)
    assert interval["mean"] == pytest.approx(tuple(looped), abs=1e-12)


def test_random_state_reproducible_and_fresh():
    statistics = np.column_stack([np.random.default_rng(0).random(50), np.ones(50)])
    run = lambda state: bootstrap_intervals(statistics, mean_of_first, confidence_level=0.9, random_state=state)  # noqa: E731
    assert run(4) == run(4) == run(np.random.default_rng(4))
    assert run(4) != run(5)
    assert run(None) != run(None)


def test_memory_stays_bounded_by_blocks(monkeypatch):
    # 100,000 examples x 100 resamples: the whole count matrix would take 80 MB.
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", 2**17)
    statistics = np.column_stack([np.random.default_rng(0).random(100_000), np.ones(100_000)])
    tracemalloc.start()
    try:
        bootstrap_intervals(statistics, mean_of_first, confidence_level=0.95, n_resamples=100)
        compare_systems_statistics(statistics, statistics[::-1], mean_of_first, n_resamples=100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20


# --- Paired comparison ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_a_system_against_itself_has_p_value_one(method):
    rng = np.random.default_rng(8)
    statistics = np.column_stack([rng.random(500), rng.integers(0, 3, 500), np.ones(500), rng.integers(1, 5, 500)])
    comparison = compare_systems_statistics(statistics, statistics.copy(), ratio_values, method=method)
    for key in ("macro", "micro"):
        assert comparison[key]["p_value"] == 1.0
        assert comparison[key]["difference"] == 0.0
        assert comparison[key]["difference_ci_low"] == comparison[key]["difference_ci_high"] == 0.0


def test_permutation_p_values_are_uniform_over_exchangeable_systems():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(99)
    p_values = []
    for _ in range(300):
        # Both systems draw per-example scores from the same distribution.
        a, b = rng.beta(2, 3, 80), rng.beta(2, 3, 80)
        ones = np.ones(80)
        comparison = compare_systems_statistics(
            np.column_stack([a, ones]), np.column_stack([b, ones]), mean_of_first, n_resamples=400, random_state=rng
        )
        p_values.append(comparison["mean"]["p_value"])
    assert stats.kstest(p_values, "uniform").pvalue > 0.01
    assert np.mean(np.array(p_values) < 0.05) == pytest.approx(0.05, abs=0.035)


def test_permutation_p_value_matches_exact_enumeration_of_all_swaps():
    a = np.array([[0.2, 1], [0.5, 1], [0.1, 1], [0.9, 1], [0.4, 1], [0.3, 1], [0.6, 1]])
    b = np.array([[0.6, 1], [0.5, 1], [0.4, 1], [1.0, 1], [0.2, 1], [0.8, 1], [0.7, 1]])
    observed = abs(b[:, 0].mean() - a[:, 0].mean())
    extreme = 0
    for swaps in itertools.product([0, 1], repeat=len(a)):
        x = np.array(swaps, dtype=bool)
        new_a, new_b = np.where(x, b[:, 0], a[:, 0]), np.where(x, a[:, 0], b[:, 0])
        extreme += abs(new_b.mean() - new_a.mean()) >= observed - 1e-12
    exact = extreme / 2 ** len(a)
    comparison = compare_systems_statistics(a, b, mean_of_first, n_resamples=20000, random_state=1)["mean"]
    assert comparison["p_value"] == pytest.approx(exact, abs=0.01)
    assert comparison["difference"] == pytest.approx(observed)


@pytest.mark.parametrize("grouped", [True, False])
def test_permutation_p_value_of_many_examples_matches_the_exact_binomial_value(monkeypatch, grouped):
    # b beats a by 1 on 60 examples and loses by 1 on 40 (300 ties): delta = 20 / 400.
    # Swapping X1 ~ Bin(60, 1/2) wins and X2 ~ Bin(40, 1/2) losses gives
    # delta* = (20 - 2 X1 + 2 X2) / 400, so p = P(|20 - 2 X1 + 2 X2| >= 20) exactly.
    if not grouped:
        monkeypatch.setattr(resampling, "GROUPING_RATIO", 10**9)
    a = np.zeros(400)
    b = np.concatenate([np.ones(60), -np.ones(40), np.zeros(300)])
    ones = np.ones(400)
    exact = (
        sum(
            math.comb(60, x1) * math.comb(40, x2)
            for x1 in range(61)
            for x2 in range(41)
            if abs(20 - 2 * x1 + 2 * x2) >= 20
        )
        / 2**100
    )
    comparison = compare_systems_statistics(
        np.column_stack([a, ones]), np.column_stack([b, ones]), mean_of_first, n_resamples=20000, random_state=2
    )["mean"]
    assert 0.05 < exact < 0.1
    assert comparison["p_value"] == pytest.approx(exact, abs=0.01)


def test_paired_bootstrap_equals_a_loop_calling_keyword_prf_on_the_same_resamples():
    predictions_a, references = small_keyword_corpus(21, 40)
    predictions_b = [keywords[::-1][:2] for keywords in predictions_a]
    result_a = keyword_prf(predictions_a, references, return_per_example=True)
    result_b = keyword_prf(predictions_b, references, return_per_example=True)
    statistics_a, statistics_b = prf_statistics(result_a), prf_statistics(result_b)
    comparison = compare_systems_statistics(
        statistics_a,
        statistics_b,
        prf_values,
        method="bootstrap",
        confidence_level=0.8,
        n_resamples=300,
        random_state=9,
    )
    differences = []
    for block in bootstrap_counts(np.hstack([statistics_a, statistics_b]), 300, 9):
        for counts in block:
            rows = np.repeat(np.arange(40), counts)
            plain_a = keyword_prf([predictions_a[i] for i in rows], [references[i] for i in rows])
            plain_b = keyword_prf([predictions_b[i] for i in rows], [references[i] for i in rows])
            differences.append([plain_b[name] - plain_a[name] for name in PRF])
    differences = np.array(differences)
    for column, name in enumerate(PRF):
        low, high = np.quantile(differences[:, column], [0.1, 0.9])
        at_most, at_least = np.sum(differences[:, column] <= 1e-12), np.sum(differences[:, column] >= -1e-12)
        assert comparison[name]["difference"] == pytest.approx(result_b[name] - result_a[name], abs=1e-12)
        assert (comparison[name]["difference_ci_low"], comparison[name]["difference_ci_high"]) == pytest.approx(
            (low, high), abs=1e-12
        )
        assert comparison[name]["p_value"] == min(1.0, 2 * min(at_most, at_least) / 300)


def test_paired_bootstrap_interval_of_a_shift_and_its_p_value():
    rng = np.random.default_rng(12)
    a = rng.random(400)
    b = a + 0.05 + rng.normal(0, 0.01, 400)  # b beats a on every example
    ones = np.ones(400)
    for method in ("bootstrap", "permutation"):
        comparison = compare_systems_statistics(
            np.column_stack([a, ones]), np.column_stack([b, ones]), mean_of_first, method=method
        )["mean"]
        assert comparison["difference"] == pytest.approx((b - a).mean())
        assert comparison["difference_ci_low"] < (b - a).mean() < comparison["difference_ci_high"]
        assert comparison["difference_ci_low"] > 0.045 and comparison["difference_ci_high"] < 0.055
        assert comparison["p_value"] == (0.0 if method == "bootstrap" else 1 / 1001)


def load_sw_episode4():
    directory = require_shared(MOVIE_REVIEWS)
    with open(directory / "ground_truth.jsonl", encoding="utf-8") as lines:
        gold = next(record["keywords"] for record in map(json.loads, lines) if record["movie"] == "SW_Episode4")
    with gzip.open(directory / "SW_Episode4.jsonl.gz", "rt", encoding="utf-8") as lines:
        reviews = [json.loads(line) for line in lines]
    return reviews, gold


def test_sentiment_versus_base_on_sw_episode4_from_both_methods():
    reviews, gold = load_sw_episode4()

    def system(model, n):
        predictions, references = [review[f"keywords_{model}"] for review in reviews[:n]], [gold] * n
        return keyword_prf(predictions, references, return_per_example=True)

    results = {}
    for n in (len(reviews), 30):  # every review: a clear difference; the first 30: a borderline one
        base, sentiment = system("base", n), system("sentiment", n)
        for method in ("permutation", "bootstrap"):
            comparison = compare_systems_statistics(
                prf_statistics(base), prf_statistics(sentiment), prf_values, method=method, n_resamples=5000
            )
            for name in PRF:
                assert comparison[name]["a"] == pytest.approx(base[name], abs=1e-12)
                assert comparison[name]["difference"] == pytest.approx(sentiment[name] - base[name], abs=1e-12)
            results[n, method] = comparison["f1"]
    assert len(reviews) == 2157
    for method in ("permutation", "bootstrap"):
        assert results[2157, method]["p_value"] < 0.001
        assert results[2157, method]["difference_ci_low"] > 0
        assert 0.01 < results[30, method]["p_value"] < 0.2
    permutation, bootstrap = results[30, "permutation"]["p_value"], results[30, "bootstrap"]["p_value"]
    assert 0.5 < permutation / bootstrap < 2


# --- Helpers and bad options ---------------------------------------------------------------


def test_add_intervals_puts_flat_float_keys_after_each_value():
    result = {"precision": 0.5, "recall": 0.25, "per_example": {}}
    combined = add_intervals(result, {"precision": (np.float64(0.4), 0.6), "recall": (0.2, 0.3)})
    assert list(combined) == [
        "precision",
        "precision_ci_low",
        "precision_ci_high",
        "recall",
        "recall_ci_low",
        "recall_ci_high",
        "per_example",
    ]
    assert type(combined["precision_ci_low"]) is float and combined["recall_ci_high"] == 0.3


def test_undefined_values_get_no_interval_and_zero_denominators_stay_defined():
    statistics = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])

    def values(sums):
        with np.errstate(invalid="ignore", divide="ignore"):
            return {"defined": sums[..., 0] / 3, "undefined": sums[..., 0] / sums[..., 1]}

    assert list(bootstrap_intervals(statistics, values, confidence_level=0.9)) == ["defined"]
    assert list(compare_systems_statistics(statistics, statistics, values)) == ["defined"]


GOOD = np.column_stack([np.arange(4.0), np.ones(4)])
BAD_OPTIONS = [
    ({"confidence_level": 0}, r"confidence_level must be a number strictly between 0 and 1, got 0"),
    ({"confidence_level": 1.0}, r"confidence_level must be .* got 1.0"),
    ({"confidence_level": True}, r"confidence_level must be .* got True"),
    ({"confidence_level": "0.95"}, r"confidence_level must be .* got '0.95'"),
    ({"n_resamples": 0}, r"n_resamples must be a positive integer, got 0"),
    ({"n_resamples": True}, r"n_resamples must be a positive integer, got True"),
    ({"n_resamples": 10.0}, r"n_resamples must be a positive integer, got 10.0"),
    ({"random_state": -1}, r"random_state must be None, a non-negative integer or a numpy.random.Generator, got -1"),
    ({"random_state": False}, r"random_state must be .* got False"),
    ({"random_state": "seed"}, r"random_state must be .* got 'seed'"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_bad_options_raise_clear_errors(options, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_intervals(GOOD, mean_of_first, **{"confidence_level": 0.95, **options})
    with pytest.raises(ValueError, match=message):
        compare_systems_statistics(GOOD, GOOD, mean_of_first, **options)
    if "confidence_level" not in options:
        with pytest.raises(ValueError, match=message):
            validation.check_interval_options(None, **{"n_resamples": 1000, "random_state": 0, **options})


def test_bad_systems_raise_clear_errors():
    with pytest.raises(ValueError, match=r"method must be one of \('permutation', 'bootstrap'\), got 'exact'"):
        compare_systems_statistics(GOOD, GOOD, mean_of_first, method="exact")
    with pytest.raises(ValueError, match=r"system a has 4 examples but system b has 3; a paired comparison needs"):
        compare_systems_statistics(GOOD, GOOD[:3], mean_of_first)
    with pytest.raises(ValueError, match=r"system b: no examples"):
        compare_systems_statistics(GOOD, GOOD[:0], mean_of_first)
    with pytest.raises(ValueError, match=r"statistics: example 2 has a non-finite statistic"):
        bootstrap_intervals(np.array([[1.0], [2.0], [np.nan]]), mean_of_first, confidence_level=0.9)
    with pytest.raises(ValueError, match=r"must be an \(examples x statistics\) matrix, got shape \(4,\)"):
        bootstrap_intervals(np.ones(4), mean_of_first, confidence_level=0.9)
    assert validation.check_interval_options(None, 1000, None)["confidence_level"] is None
    assert validation.check_interval_options(0.9, 1000, 0) == {
        "confidence_level": 0.9,
        "n_resamples": 1000,
        "random_state": 0,
        "bootstrap": "multinomial",
    }


def test_poisson_weighted_sums_alone_equal_the_weights_times_the_statistics(monkeypatch):
    from opinion_metrics.stats import poisson

    monkeypatch.setattr(poisson, "BLOCK_ELEMENTS", 64)  # several blocks of resamples
    matrix = np.random.default_rng(5).random((30, 4))
    keys = np.arange(30, dtype=np.uint64)
    weighted, swapped = poisson.resample_sums(matrix, keys, 3, 50, signs=False)
    weights, signs = poisson.poisson_weights(range(30), 50, 3)
    assert swapped is None
    np.testing.assert_allclose(weighted, weights.astype(float) @ matrix, rtol=0, atol=1e-12)
    both, with_signs = poisson.resample_sums(matrix, keys, 3, 50)
    np.testing.assert_array_equal(both, weighted)
    np.testing.assert_allclose(with_signs, signs.astype(float) @ matrix, rtol=0, atol=1e-12)


def test_poisson_keys_need_no_pyarrow(monkeypatch):
    """The core library (numpy, tqdm) draws Poisson weights for int and str keys; a str key's
    word is the same whether it comes from Python strings or an Arrow column."""
    from opinion_metrics.stats import poisson

    keys = ["r1", "café", "", "🙂 x"]
    try:
        import pyarrow as pa
    except ImportError:
        arrow_words = None
    else:
        arrow_words = poisson.key_hashes(pa.array(keys))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    words = poisson.key_hashes(keys)
    assert len(set(words.tolist())) == 4
    if arrow_words is not None:
        np.testing.assert_array_equal(words, arrow_words)
    np.testing.assert_array_equal(poisson.key_hashes([3, 5]), np.array([3, 5], dtype=np.uint64))
    with pytest.raises(ValueError, match="keys: example 1 is not valid Unicode"):
        poisson.key_hashes(["ok", "bad \ud83d"])
    result = keyword_prf([["a"], ["b"]], [["a"], ["c"]], confidence_level=0.9, n_resamples=20, bootstrap="poisson")
    assert result["f1"] == 0.5 and result["f1_ci_low"] <= 0.5 <= result["f1_ci_high"]
