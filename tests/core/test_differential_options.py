"""Differential test (issue 10, "Method"): every option combination of `keyword_prf` and
`weighted_keyword_prf` on random corpora, with each internal strategy forced and also left
to choose (`differential_cases.strategy`), against the brute force of `reference_impl`.
`presence` ("all" / "present" / "absent", with random texts) is cycled over the
combinations, as is the shape of the inputs (lists, tuples, numpy arrays, pandas Series).
OPINION_METRICS_DIFFERENTIAL_SEEDS=5 runs each combination on 5 corpora instead of 1."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
import reference_impl as ref
from differential_cases import (
    MATCHES,
    NORMALIZES,
    PREPARATIONS,
    PRESENCES,
    STEMMERS,
    STRATEGIES,
    TOP_KS,
    check,
    close,
    differences,
    options_text,
    prepared_as,
    random_corpus,
    random_texts,
    strategy,
)

import opinion_metrics.core.preparation as preparation
from opinion_metrics import keyword_prf, map_at_k, ndcg_at_k, weighted_keyword_prf
from opinion_metrics._native import helper

SEEDS = int(os.environ.get("OPINION_METRICS_DIFFERENTIAL_SEEDS", "1"))
KEYWORD_OPTIONS = [
    dict(zip(("one_to_one", "average", "top_k", "zero_division"), values))
    for values in itertools.product((True, False), ("macro", "micro"), TOP_KS, (0.0, 1.0))
]
WEIGHTED_OPTIONS = [
    {**options, "k": k, "relevance": relevance}
    for options in KEYWORD_OPTIONS
    for k in (1, 3, 5)
    for relevance in ("graded", "binary")
]


def presence_for(n: int) -> str:
    """The presence option of combination n (cycled apart from the preparation path)."""
    return PRESENCES[n // len(PREPARATIONS) % len(PRESENCES)]


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
@pytest.mark.parametrize("match", MATCHES)
def test_keyword_prf_equals_spec(match, normalize, stemmer, monkeypatch):
    problems = []
    for seed, (n, options) in itertools.product(range(SEEDS), enumerate(KEYWORD_OPTIONS)):
        rng = np.random.default_rng([seed, n, MATCHES.index(match), NORMALIZES.index(normalize), int(stemmer is None)])
        predictions, _, references = random_corpus(rng, int(rng.integers(1, 12)))
        texts = random_texts(rng, predictions, references)
        options = {**options, "presence": presence_for(n), "match": match, "normalize": normalize, "stemmer": stemmer}
        expected = ref.keyword_prf(predictions, references, texts=texts, **options)
        preparation = PREPARATIONS[n % len(PREPARATIONS)]
        shaped, _, shaped_references, shaped_texts = prepared_as(
            preparation, predictions, [[]] * len(predictions), references, texts
        )
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                actual = keyword_prf(shaped, shaped_references, texts=shaped_texts, return_per_example=True, **options)
            where = f"keyword_prf({options_text(**options)}; strategy {name}, preparation {preparation})"
            problems += differences(actual, expected, (predictions, references, texts), where)
        without = keyword_prf(shaped, shaped_references, texts=shaped_texts, **options)
        assert without == {k: v for k, v in actual.items() if k != "per_example"}
    check(problems)


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
@pytest.mark.parametrize("match", MATCHES)
def test_weighted_keyword_prf_equals_spec(match, normalize, stemmer, monkeypatch):
    problems = []
    derived = []  # calls that read only the scores of rows the keyword family had prepared
    with_scores = preparation._with_scores
    monkeypatch.setattr(preparation, "_with_scores", lambda *args: derived.append(1) or with_scores(*args))
    for seed, (n, options) in itertools.product(range(SEEDS), enumerate(WEIGHTED_OPTIONS)):
        combination = [seed, n, MATCHES.index(match), NORMALIZES.index(normalize), int(stemmer is None), 1]
        rng = np.random.default_rng(combination)
        predictions, scores, references = random_corpus(rng, int(rng.integers(1, 10)))
        texts = random_texts(rng, predictions, references)
        options = {**options, "presence": presence_for(n), "match": match, "normalize": normalize, "stemmer": stemmer}
        expected = ref.weighted_keyword_prf(predictions, scores, references, texts=texts, **options)
        shape = PREPARATIONS[n % len(PREPARATIONS)]
        shaped = prepared_as(shape, predictions, scores, references, texts)
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                actual = weighted_keyword_prf(*shaped[:3], texts=shaped[3], return_per_example=True, **options)
            where = f"weighted_keyword_prf({options_text(**options)}; strategy {name}, preparation {shape})"
            problems += differences(actual, expected, (predictions, scores, references, texts), where)
        with strategy("auto", monkeypatch):  # after the keyword family on the same rows: its ids, these scores
            keyword_prf(shaped[0], shaped[2], match=match, normalize=normalize, stemmer=stemmer)
            actual = weighted_keyword_prf(*shaped[:3], texts=shaped[3], return_per_example=True, **options)
        where = f"weighted_keyword_prf({options_text(**options)}; after keyword_prf, preparation {shape})"
        problems += differences(actual, expected, (predictions, scores, references, texts), where)
        if options["presence"] == "all" and options["top_k"] is None and options["one_to_one"]:
            k, relevance = options["k"], options["relevance"]
            common = {key: options[key] for key in ("match", "normalize", "stemmer", "k", "zero_division")}
            ndcg = ndcg_at_k(shaped[0], shaped[2], relevance=relevance, **common)
            assert close(ndcg, expected[f"ndcg@{k}"]), (ndcg, expected[f"ndcg@{k}"], predictions, references, common)
            if relevance == "binary":
                ap = map_at_k(shaped[0], shaped[2], **common)
                assert close(ap, expected[f"map@{k}"]), (ap, expected[f"map@{k}"], predictions, references, common)
    check(problems)
    if helper() is not None and isinstance(normalize, str):  # (a callable's forms are not kept)
        assert derived, "the scores were never read for rows kept prepared without them"
