"""Family 4: Sentiment Appropriateness Score (docs/definitions.md section 6).

Does the sentiment of an example's predicted keywords fit its gold keywords
(`sas_from_keywords`) and its review text (`sas_from_text`)? Sentiment is VADER's, mapped
into [0, 1], unless a custom function or per-keyword sentiments are given.
"""

from __future__ import annotations

import heapq
import math
import multiprocessing
import numbers
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from ..core.normalization import NormalizeOption
from ..core.preparation import prepare_corpus
from ..core.validation import (
    as_number,
    check_corpus,
    check_flag,
    check_interval_options,
    check_positive_int,
    check_sentiment,
    check_texts,
    describe,
)
from ..stats.resampling import RandomState
from .averaging import Values, optional_mean_statistics, optional_mean_values, summarize

MAPPINGS = ("weighted", "compound")
SAS_NAMES = ("sas_from_keywords", "sas_from_text")
SentimentFunction = Callable[[str], float]


def vader_sentiment(mapping: str = "weighted") -> SentimentFunction:
    """VADER sentiment of a string in [0, 1].

    "weighted" (the seeds): `1.0 * pos + 0.5 * neu + 0.0 * neg`; "compound": `(compound + 1) / 2`.
    """
    if mapping not in MAPPINGS:
        raise ValueError(f"mapping must be one of {MAPPINGS}, got {mapping!r}")
    try:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
    except ImportError as error:
        raise ImportError(
            "the sentiment metric needs VADER: pip install vaderSentiment (or, in a checkout of opinion-metrics, "
            'pip install ".[sentiment]")'
        ) from error
    polarity = _linear_vader(SentimentIntensityAnalyzer)().polarity_scores
    if mapping == "weighted":
        return lambda text: (lambda s: 1.0 * s["pos"] + 0.5 * s["neu"])(polarity(text))
    return lambda text: (polarity(text)["compound"] + 1.0) / 2.0


def _linear_vader(analyzer: type) -> type:
    """VADER's analyzer with the same scores in time linear in the text's length.

    vaderSentiment's scorer is quadratic on one long text: for every sentiment word it
    lower-cases the whole word list (in `_negation_check` and `_special_idioms_check`, which
    only look three words around it), and `_but_check` finds each sentiment with
    `list.index`. Here the two checks get a window of the words around the sentiment word
    (they index at most three before and two after it), and `_but_check` is replayed with
    an index of positions by value; the original code computes everything else.
    """

    class LinearSentimentIntensityAnalyzer(analyzer):
        def _negation_check(self, valence: float, words: list[str], start_i: int, i: int) -> float:
            start = max(0, i - 3)
            return analyzer._negation_check(valence, words[start : i + 3], start_i, i - start)

        def _special_idioms_check(self, valence: float, words: list[str], i: int) -> float:
            start = max(0, i - 3)
            return analyzer._special_idioms_check(valence, words[start : i + 3], i - start)

        @staticmethod
        def _but_check(words: list[str], sentiments: list[float]) -> list[float]:
            """VADER's `_but_check`: for each position k in order, the first position si that
            holds the value now at k is halved (before the first "but") or multiplied by 1.5
            (after it). Positions holding each value are kept in min-heaps (stale entries
            skipped), so each lookup is logarithmic instead of a scan."""
            lowered = [str(word).lower() for word in words]
            if "but" not in lowered:
                return sentiments
            but = lowered.index("but")
            positions: dict[float, list[int]] = {}
            for position, value in enumerate(sentiments):
                positions.setdefault(value, []).append(position)  # already in increasing order: heaps
            for k in range(len(sentiments)):
                value = sentiments[k]
                heap = positions[value]
                while sentiments[heap[0]] != value:  # compared with ==, as list.index does
                    heapq.heappop(heap)
                first = heap[0]
                if first == but:
                    continue
                new = value * 0.5 if first < but else value * 1.5
                sentiments[first] = new
                heapq.heappush(positions.setdefault(new, []), first)
            return sentiments

    return LinearSentimentIntensityAnalyzer


class _CachedSentiment:
    """Each distinct string goes through the sentiment function once; outputs are checked."""

    def __init__(self, function: SentimentFunction, cache: dict[str, float] | None = None) -> None:
        self.function = function
        self.cache: dict[str, float] = {} if cache is None else cache

    def __call__(self, text: str) -> float:
        value = self.cache.get(text)
        if value is None:
            value = as_number(self.function(text))
            number = math.nan if isinstance(value, bool) or not isinstance(value, numbers.Real) else float(value)
            if not 0.0 <= number <= 1.0:  # numpy floats and Fractions are numbers; NaN is not in range
                raise ValueError(f"the sentiment function returned {describe(value)} for {text!r}; expected [0, 1]")
            value = self.cache[text] = number
        return value

    def mean(self, texts: Sequence[str]) -> float:
        return math.fsum(map(self, texts)) / len(texts)


# VADER's scores of the strings this process has seen, one cache per mapping, shared by every
# call: an engine worker or a streamed file scores each review once, not once per block.
# Cleared when it passes this many strings.
VADER_CACHE_LIMIT = 1_000_000
_VADER_CACHES: dict[str, dict[str, float]] = {}


def _vader_cache(mapping: str) -> dict[str, float]:
    cache = _VADER_CACHES.setdefault(mapping, {})
    if len(cache) > VADER_CACHE_LIMIT:
        cache.clear()
    return cache


# VADER on long reviews costs milliseconds each (pure Python): past this many characters
# of distinct text, score them in worker processes (forked, so nothing is re-imported).
PARALLEL_MIN_CHARACTERS = 500_000
_worker_sentiment: SentimentFunction | None = None


def _start_worker(mapping: str) -> None:
    global _worker_sentiment
    _worker_sentiment = vader_sentiment(mapping)


def _score_chunk(texts: list[str]) -> list[float]:
    assert _worker_sentiment is not None
    return [_worker_sentiment(text) for text in texts]


def vader_in_parallel(texts: list[str], mapping: str, workers: int) -> list[float]:
    """VADER sentiments of `texts` computed by `workers` forked processes (at most one per
    chunk of 200 texts and per available CPU)."""
    from ..core.cpus import available_cpus

    context = multiprocessing.get_context("fork")
    chunks = [texts[start : start + 200] for start in range(0, len(texts), 200)]
    processes = max(1, min(workers, len(chunks), available_cpus()))
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_start_worker, initargs=(mapping,)) as pool:
        return [value for chunk in pool.map(_score_chunk, chunks) for value in chunk]


def sentiment_reducer(options: Mapping[str, Any]) -> Values:
    """Column sums of `sentiment_statistics` -> both SAS means (NaN, hence absent, when no
    example has the value); no option changes the reduction."""
    return optional_mean_values(SAS_NAMES, math.nan)


def sentiment_statistics(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]] | None = None,
    *,
    texts: Sequence[str | None] | None = None,
    prediction_sentiments: Sequence[Sequence[float]] | None = None,
    mapping: str = "weighted",
    sentiment: SentimentFunction | None = None,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    workers: int | None = None,
) -> tuple[np.ndarray, Values, dict[str, list[float | None]]]:
    """Per-example statistics of `sentiment_appropriateness` (docs/definitions.md section 11):
    `(statistics, values, per_example)`, the statistics as `optional_mean_statistics`
    builds them (an example without a SAS is left out of that mean)."""
    if workers is not None:
        workers = check_positive_int(workers, "workers")
    use_vader = sentiment is None
    if sentiment is None:
        sentiment = vader_sentiment(mapping)
    else:
        check_sentiment(sentiment)
    predictions = check_corpus(predictions, "predictions")
    if references is None and texts is None:
        raise ValueError("give references, texts, or both: there is nothing to compare the predictions with")
    if references is None:
        references = [[] for _ in range(len(predictions))]
    corpus = prepare_corpus(
        predictions,
        references,
        scores=prediction_sentiments,
        normalize=normalize,
        stemmer=stemmer,
        keep_originals=True,
        scores_name="prediction_sentiments",
    )
    texts = None if texts is None else check_texts(texts, len(corpus), allow_none=True)
    score = _CachedSentiment(sentiment, _vader_cache(mapping) if use_vader else None)
    if use_vader:
        _prefill_in_parallel(score, corpus, texts, mapping, workers)
    from_keywords: list[float | None] = []
    from_text: list[float | None] = []
    for index in range(len(corpus)):
        predicted = corpus.predictions.originals[index]
        if not predicted:
            from_keywords.append(None)
            from_text.append(None)
            continue
        given = corpus.predictions.scores
        s_pred = math.fsum(given[index]) / len(given[index]) if given is not None else score.mean(predicted)
        gold = corpus.references.originals[index]
        from_keywords.append(1.0 - abs(s_pred - score.mean(gold)) if gold else None)
        text = None if texts is None else texts[index]
        from_text.append(1.0 - abs(s_pred - score(text)) if text is not None and text.strip() else None)
    per_example = {"sas_from_keywords": from_keywords, "sas_from_text": from_text}
    return optional_mean_statistics(per_example), sentiment_reducer({}), per_example


def sentiment_appropriateness(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]] | None = None,
    *,
    texts: Sequence[str | None] | None = None,
    prediction_sentiments: Sequence[Sequence[float]] | None = None,
    mapping: str = "weighted",
    sentiment: SentimentFunction | None = None,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    workers: int | None = None,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
    return_per_example: bool = False,
) -> dict[str, Any]:
    """Sentiment Appropriateness Score: `1 - |s_pred - s_ref|`, averaged over examples.

    Args:
        predictions: per example, the predicted keywords.
        references: per example, the gold keywords (optional when `texts` is given).
        texts: per example, the review text: adds `sas_from_text`. A text that is None,
            empty or white space only leaves its example out of `sas_from_text`.
        prediction_sentiments: per example, one sentiment in [0, 1] per predicted keyword
            (for models that output their own); replaces the sentiment of the predictions.
        mapping: VADER mapping, "weighted" (pos + 0.5 neu, default) or "compound".
        sentiment: a custom `str -> [0, 1]` function replacing VADER (e.g. non-English).
        normalize, stemmer: keyword preparation (empty and duplicate keywords dropped; the
            sentiment reads the first occurrence as written, stripped).
        workers: processes for VADER (default: the available CPUs when the distinct
            strings exceed 500,000 characters, as long reviews do, on systems with fork;
            else 1). A custom `sentiment` function always runs in this process.
        confidence_level: e.g. 0.95: add `<key>_ci_low` / `<key>_ci_high`, bootstrap
            percentile intervals over examples (default None; docs/definitions.md section 11).
        n_resamples: bootstrap resamples (default 1000).
        random_state: None (fresh), an int seed (default 0) or a `numpy.random.Generator`.
        bootstrap: "multinomial" (default) or "poisson" (position-keyed Poisson(1) weights,
            as a `MetricState` gives; docs/definitions.md section 12).
        return_per_example: also return `per_example` (None where an example is left out).

    Returns:
        `sas_from_keywords` (examples with predictions and references) and
        `sas_from_text` (examples with predictions and a text), in [0, 1]. A key that
        cannot be computed for any example is absent.

    Example:
        >>> result = sentiment_appropriateness([["awful", "boring"]], [["great", "moving"]],
        ...                                    sentiment=lambda s: 0.9 if s in ("great", "moving") else 0.2)
        >>> round(result["sas_from_keywords"], 4)
        0.3
    """
    return_per_example = check_flag(return_per_example, "return_per_example")
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    statistics, values, per_example = sentiment_statistics(
        predictions,
        references,
        texts=texts,
        prediction_sentiments=prediction_sentiments,
        mapping=mapping,
        sentiment=sentiment,
        normalize=normalize,
        stemmer=stemmer,
        workers=workers,
    )
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        result["per_example"] = per_example
    return result


def _prefill_in_parallel(
    score: _CachedSentiment, corpus: Any, texts: list[str | None] | None, mapping: str, workers: int | None
) -> None:
    """Score every distinct string the call needs in worker processes, when worth it."""
    lists = list({id(keywords): keywords for keywords in corpus.references.originals}.values())
    if corpus.predictions.scores is None:
        lists += corpus.predictions.originals
    needed = dict.fromkeys([text for text in texts or [] if text and text.strip()] + [k for ks in lists for k in ks])
    for known in [text for text in needed if text in score.cache]:  # scored by an earlier call
        del needed[known]
    if workers is None:
        from ..core.cpus import available_cpus

        large = sum(map(len, needed)) >= PARALLEL_MIN_CHARACTERS
        workers = min(available_cpus(), 8) if large else 1
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return
    strings = list(needed)
    score.cache.update(zip(strings, vader_in_parallel(strings, mapping, workers)))
