"""Differential test of the sentiment, aspect and diversity families, group pooling and
the annotator helpers (SPEC sections 3, 6, 7, 8 and 10) on the random corpora of
`differential_cases`, against the brute force of `reference_impl`: every combination of
normalize x stemmer x input (references, texts, prediction sentiments present or not),
with a custom sentiment function and a stand-in encoder."""

import itertools

import numpy as np
import pytest
import reference_impl as ref
from differential_cases import (
    NORMALIZES,
    STEMMERS,
    StandInEncoder,
    check,
    differences,
    embed,
    options_text,
    random_corpus,
    random_texts,
)

from opinion_metrics import agreement, aspect_sentiment_score, keyword_diversity, merge_references, pool_by_group
from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness


def sentiment(text: str) -> float:
    """Reads case and punctuation (as VADER does) but not the surrounding white space."""
    return sum(ord(c) for c in text.strip()) % 11 / 10


def with_blank_texts(rng: np.random.Generator, texts: list[str]) -> list:
    """Some texts None, empty or white space only (left out of sas_from_text)."""
    blanks = [None, "", "  \t", "\u3000"]
    return [blanks[int(rng.integers(len(blanks)))] if rng.random() < 0.2 else t for t in texts]


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
def test_sentiment_appropriateness_equals_spec(normalize, stemmer):
    problems = []
    inputs = itertools.product((True, False), (True, False), (True, False))
    for n, (seed, (given_references, given_texts, given_sentiments)) in enumerate(itertools.product(range(8), inputs)):
        if not given_references and not given_texts:
            continue
        rng = np.random.default_rng([seed, n, NORMALIZES.index(normalize), int(stemmer is None), 4])
        predictions, scores, references = random_corpus(rng, int(rng.integers(1, 12)))
        texts = with_blank_texts(rng, random_texts(rng, predictions, references))
        options = {"normalize": normalize, "stemmer": stemmer}
        inputs = {
            "references": references if given_references else None,
            "texts": texts if given_texts else None,
            "prediction_sentiments": scores if given_sentiments else None,
        }
        expected = ref.sentiment_appropriateness(predictions, sentiment=sentiment, **inputs, **options)
        actual = sentiment_appropriateness(
            predictions, sentiment=sentiment, return_per_example=True, **inputs, **options
        )
        where = f"sentiment_appropriateness({options_text(**options)}; given {[k for k, v in inputs.items() if v]})"
        problems += differences(actual, expected, (predictions, references, texts, scores), where)
    check(problems)


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
def test_keyword_diversity_equals_spec(normalize, stemmer):
    encoder = StandInEncoder()
    problems = []
    for seed, with_model, zero_division in itertools.product(range(10), (False, True), (0.0, 1.0)):
        rng = np.random.default_rng([seed, NORMALIZES.index(normalize), int(stemmer is None), 5])
        predictions, _, _ = random_corpus(rng, int(rng.integers(1, 12)))
        options = {"normalize": normalize, "stemmer": stemmer, "zero_division": zero_division}
        expected = ref.keyword_diversity(predictions, embed=embed if with_model else None, **options)
        model = {"model": encoder} if with_model else {}
        actual = keyword_diversity(predictions, return_per_example=True, **model, **options)
        where = f"keyword_diversity({options_text(**options)}, model {with_model})"
        problems += differences(actual, expected, (predictions,), where, tolerance=1e-6)
    check(problems)


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
def test_pool_by_group_equals_spec(normalize, stemmer):
    for seed, scored in itertools.product(range(10), (False, True)):
        rng = np.random.default_rng([seed, NORMALIZES.index(normalize), int(stemmer is None), 6])
        predictions, scores, references = random_corpus(rng, int(rng.integers(1, 15)))
        groups = [str(rng.choice(["SW4", "SW5", "SW6", "LotR"])) for _ in predictions]
        options = {"normalize": normalize, "stemmer": stemmer, "scores": scores if scored else None}
        expected = ref.pool_by_group(predictions, references, groups, **options)
        pooled = pool_by_group(predictions, references, groups, **options)
        actual = (pooled.groups, pooled.predictions, pooled.references, pooled.scores if scored else None)
        assert actual == expected, (predictions, scores, references, groups, options)


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
def test_annotators_equal_spec(normalize, stemmer):
    for seed in range(15):
        rng = np.random.default_rng([seed, NORMALIZES.index(normalize), int(stemmer is None), 7])
        n_annotators = int(rng.integers(1, 4))
        predictions, _, references = random_corpus(rng, int(rng.integers(1, 8)) * n_annotators)
        lists = [*predictions, *references]
        annotations = [lists[i : i + n_annotators] for i in range(0, len(predictions), n_annotators)]
        options = {"normalize": normalize, "stemmer": stemmer}
        for mode in ("union", "intersection"):
            expected = ref.merge_references(annotations, mode, **options)
            assert merge_references(annotations, mode, **options) == expected, (annotations, mode, options)
        for average, zero_division in itertools.product(("micro", "macro"), (0.0, 1.0)):
            expected = ref.agreement(annotations, average=average, zero_division=zero_division, **options)
            actual = agreement(annotations, average=average, zero_division=zero_division, **options)
            assert np.allclose(actual, expected, rtol=1e-12, atol=1e-12), (annotations, average, options)


@pytest.mark.parametrize("seed", range(40))
def test_aspect_sentiment_score_equals_spec(seed):
    rng = np.random.default_rng([seed, 8])
    n_aspects = int(rng.integers(1, 7))
    aspects = ref.ASPECTS if n_aspects == 6 and seed % 2 else tuple(f"aspect{j}" for j in range(n_aspects))
    min_rating, max_rating = [(1, 5), (1, 3), (2, 10), (1, 2)][seed % 4]
    zero_division = (1.0, 0.0)[seed % 3 == 0]
    n = int(rng.integers(1, 30))
    absent = rng.random((2, n, len(aspects))) < rng.random()  # from rarely to mostly absent
    ratings = np.where(absent, 0, rng.integers(min_rating, max_rating + 1, size=(2, n, len(aspects))))
    predictions, references = ratings[0].tolist(), ratings[1].tolist()
    if seed % 5 == 0:  # floats equal to integers, and numpy arrays, are ratings too
        predictions, references = [[float(v) for v in row] for row in predictions], ratings[1]
    options = {"min_rating": min_rating, "max_rating": max_rating, "zero_division": zero_division}
    expected = ref.aspect_sentiment_score(ratings[0].tolist(), ratings[1].tolist(), aspects=aspects, **options)
    named = {} if aspects == ref.ASPECTS else {"aspects": list(aspects)}  # the default names otherwise
    actual = aspect_sentiment_score(predictions, references, **named, **options)
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert actual[key] == pytest.approx(value, rel=1e-12, abs=1e-12), (key, predictions, references, options)
