"""Fuzzing: on any input, every public function returns values within their documented
ranges or raises ValueError; nothing else (no TypeError, IndexError, silent NaN...)."""

import math
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opinion_metrics import (
    agreement,
    aspect_sentiment_score,
    keyword_prf,
    make_normalizer,
    map_at_k,
    merge_references,
    ndcg_at_k,
    normalize_keyword,
    pool_by_group,
    weighted_keyword_prf,
)
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness
from opinion_metrics.trainer import ratings_from_logits, ratings_from_regression

# OPINION_METRICS_FUZZ_EXAMPLES=5000 for a longer hunt than the test suite's.
SETTINGS = settings(
    max_examples=int(os.environ.get("OPINION_METRICS_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=3),
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=2), inner, max_size=2)),
    max_leaves=6,
)
words = st.sampled_from(["war", "star wars", "Jedi!", "café", "Cafe\u0301", "", "  ", "a b", "peace", "ＡＢＣ"])
keyword_list = st.one_of(st.lists(st.one_of(words, st.text(max_size=6)), max_size=5), junk)
corpus = st.one_of(st.lists(keyword_list, min_size=0, max_size=4), junk)
score = st.one_of(st.floats(0, 1), st.floats(allow_nan=True, allow_infinity=True), scalars)
score_list = st.one_of(st.lists(score, max_size=5), junk)


def option(valid):
    return st.one_of(st.sampled_from(valid), scalars)


KEYWORD_OPTIONS = {
    "match": option(["exact", "substring", "token"]),
    "normalize": option(["default", "ascii", "none"]),
    "average": option(["macro", "micro"]),
    "top_k": option([None, 1, 3, "O", "M"]),
    "zero_division": option([0.0, 1.0, 0.5]),
    "one_to_one": option([True, False]),
}


def in_unit(value, upper=1.0):
    return isinstance(value, float) and not math.isnan(value) and 0.0 <= value <= upper + 1e-9


def check_result(result, upper=1.0):
    assert isinstance(result, dict)
    for key, value in result.items():
        if key == "per_example":
            for values in value.values():
                assert all(v is None or in_unit(v, upper) for v in values)
        else:
            assert in_unit(value, upper), (key, value)


def outcome(function, *args, **kwargs):
    """The result, or None when the function rejected the input with ValueError."""
    try:
        return function(*args, **kwargs)
    except ValueError:
        return None


@SETTINGS
@given(corpus, corpus, st.fixed_dictionaries({}, optional=KEYWORD_OPTIONS))
def test_keyword_prf(predictions, references, options):
    result = outcome(keyword_prf, predictions, references, return_per_example=True, **options)
    if result is not None:
        check_result(result)


WEIGHTED_OPTIONS = {
    **KEYWORD_OPTIONS,
    "k": option([1, 5]),
    "relevance": option(["graded", "binary"]),
    "clip_scores": option([True, False]),
}
texts = st.one_of(st.none(), st.lists(st.one_of(st.text(max_size=9), scalars), max_size=4), junk)


@SETTINGS
@given(
    corpus,
    st.one_of(st.lists(score_list, max_size=4), junk),
    corpus,
    st.fixed_dictionaries({}, optional=WEIGHTED_OPTIONS),
)
def test_weighted_keyword_prf(predictions, scores, references, options):
    result = outcome(weighted_keyword_prf, predictions, scores, references, return_per_example=True, **options)
    if result is not None:
        # Without one-to-one, several predictions can credit one gold keyword (documented).
        upper = 1.0 if options.get("one_to_one", True) is not False else 10.0
        check_result({k: v for k, v in result.items() if "recall" not in k and "weighted_f1" not in k})
        check_result({k: v for k, v in result.items() if k != "per_example"}, upper)


@SETTINGS
@given(corpus, corpus, option([1, 3, 5]), option(["graded", "binary"]))
def test_rankings(predictions, references, k, relevance):
    for value in (
        outcome(ndcg_at_k, predictions, references, k=k, relevance=relevance),
        outcome(map_at_k, predictions, references, k=k),
    ):
        assert value is None or in_unit(value)


class TinyEncoder:
    def encode(self, texts, **options):
        return np.array([[len(t) + 1.0, sum(map(ord, t)) % 13, 1.0] for t in texts], dtype=np.float32)


@SETTINGS
@given(corpus, corpus, option([0.75, 0.0, -1.0, 1.0]), st.fixed_dictionaries({}, optional=KEYWORD_OPTIONS))
def test_semantic_keyword_prf(predictions, references, threshold, options):
    options.pop("match", None)
    result = outcome(
        semantic_keyword_prf,
        predictions,
        references,
        model=TinyEncoder(),
        threshold=threshold,
        return_per_example=True,
        **options,
    )
    if result is not None:
        check_result(result)


@SETTINGS
@given(
    corpus,
    st.one_of(corpus, st.none()),
    texts,
    st.one_of(st.none(), st.lists(score_list, max_size=4), junk),
    option(["weighted", "compound"]),
)
def test_sentiment_appropriateness(predictions, references, texts, sentiments, mapping):
    result = outcome(
        sentiment_appropriateness,
        predictions,
        references,
        texts=texts,
        prediction_sentiments=sentiments,
        sentiment=lambda s: (len(s) % 11) / 10,
        mapping=mapping,
        return_per_example=True,
    )
    if result is not None:
        check_result(result)


ratings = st.one_of(
    st.lists(
        st.lists(st.one_of(st.integers(-1, 7), st.floats(allow_nan=True), scalars), min_size=0, max_size=3), max_size=4
    ),
    junk,
)


@SETTINGS
@given(ratings, ratings, option([["x", "y"], ["x", "y", "z"]]), option([1, 2]), option([5, 3]), option([1.0, 0.0]))
def test_aspect_sentiment_score(predictions, references, aspects, min_rating, max_rating, zero_division):
    result = outcome(
        aspect_sentiment_score,
        predictions,
        references,
        aspects=aspects,
        min_rating=min_rating,
        max_rating=max_rating,
        zero_division=zero_division,
    )
    if result is not None:
        check_result(result)


@SETTINGS
@given(
    corpus,
    corpus,
    st.one_of(st.lists(st.one_of(st.integers(0, 2), scalars), max_size=4), junk),
    st.one_of(st.none(), st.lists(score_list, max_size=4)),
)
def test_pool_by_group(predictions, references, groups, scores):
    pooled = outcome(pool_by_group, predictions, references, groups, scores=scores)
    if pooled is not None:
        assert len(pooled.predictions) == len(pooled.references) == len(pooled.groups)
        assert all(isinstance(k, str) for row in pooled.predictions for k in row)


annotations = st.one_of(st.lists(st.lists(keyword_list, max_size=3), max_size=3), junk)


@SETTINGS
@given(annotations, option(["union", "intersection"]), option(["micro", "macro"]))
def test_annotators(annotations, mode, average):
    merged = outcome(merge_references, annotations, mode)
    if merged is not None:
        assert all(isinstance(k, str) for row in merged for k in row)
    matrix = outcome(agreement, annotations, average=average)
    if matrix is not None:
        assert all(in_unit(value) for row in matrix for value in row)


@SETTINGS
@given(st.one_of(st.text(), scalars), option(["default", "ascii", "none"]), option([None, "porter"]))
def test_normalization(keyword, normalize, stemmer):
    normalized = outcome(normalize_keyword, keyword, normalize, stemmer)
    assert normalized is None or isinstance(normalized, str)
    normalizer = outcome(make_normalizer, normalize, stemmer)
    assert normalizer is None or callable(normalizer)


arrays = st.builds(
    lambda shape, seed: np.random.default_rng(seed).normal(0, 3, size=shape),
    st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple),
    st.integers(0, 100),
)


@SETTINGS
@given(st.one_of(arrays, junk))
def test_trainer_conversions(outputs):
    for function in (ratings_from_logits, ratings_from_regression):
        ratings = outcome(function, outputs)
        if ratings is not None:
            assert ratings.ndim == 2 and ((ratings >= 0) & (ratings <= max(5, ratings.max(initial=0)))).all()
