"""Family 2: score-weighted P/R/F1, graded nDCG@k and MAP@k (docs/definitions.md section 4)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .averaging import Values, mean_or, per_example_columns, prf_statistics, prf_values, safe_ratio, summarize
from .matching import corpus_neighbors, maximum_matching
from .preparation import NormalizeOption, cutoff_lengths, prepare_corpus
from .presence import select_presence
from .resampling import RandomState
from .validation import (
    TopK,
    check_average,
    check_flag,
    check_interval_options,
    check_match,
    check_positive_int,
    check_relevance,
    check_top_k,
    check_zero_division,
)

WEIGHTED_NAMES = ("weighted_precision", "weighted_recall", "weighted_f1")


def weighted_reducer(options: Mapping[str, Any]) -> Values:
    """Column sums of `weighted_statistics` -> every value of `weighted_keyword_prf` under
    `options` (average, k, zero_division)."""
    zero_division = check_zero_division(options["zero_division"])
    k = check_positive_int(options["k"], "k")
    weighted_values = prf_values(WEIGHTED_NAMES, check_average(options["average"]), zero_division)
    ranking_names = (f"ndcg@{k}", f"map@{k}")

    def values(sums: np.ndarray) -> dict[str, np.ndarray]:
        result = dict(weighted_values(sums[..., :8]))
        for name, column in zip(ranking_names, (9, 10)):
            result[name] = safe_ratio(sums[..., column], sums[..., 8], zero_division)
        return result

    return values


def _discounts(n: int) -> list[float]:
    """`1 / log2(i + 2)` for i < n: the rank discount, and the graded relevance of gold position i."""
    return [1.0 / math.log2(i + 2) for i in range(n)]


def ranking_scores(
    neighbors: Sequence[Sequence[Sequence[int]]],
    n_gold: Sequence[int],
    k: int,
    relevance: str,
) -> tuple[list[float | None], list[float | None]]:
    """Per example nDCG@k and AP@k (None for examples without gold keywords).

    Walking the first k predictions by rank, each claims the earliest-position gold
    keyword it matches that no earlier prediction claimed (docs/definitions.md section 4). AP@k divides
    by |G| (trec_eval's `map_cut_k`). The work depends on the data, not on k.
    """
    depth = min(k, max(max(map(len, neighbors), default=0), max(n_gold, default=0)))
    discount = _discounts(max(depth, max(n_gold, default=0)))
    gain_of = discount if relevance == "graded" else [1.0] * len(discount)
    ideal = np.cumsum([gain_of[j] * discount[j] for j in range(min(k, max(n_gold, default=0)))]).tolist()
    ndcg: list[float | None] = []
    average_precision: list[float | None] = []
    for example, size in zip(neighbors, n_gold):
        if size == 0:
            ndcg.append(None)
            average_precision.append(None)
            continue
        claimed: set[int] = set()
        dcg = 0.0
        hits = 0
        precision_sum = 0.0
        for rank, gold in enumerate(example[:k]):
            for position in gold:
                if position not in claimed:
                    claimed.add(position)
                    dcg += gain_of[position] * discount[rank]
                    hits += 1
                    precision_sum += hits / (rank + 1)
                    break
        ndcg.append(dcg / ideal[min(k, size) - 1])
        average_precision.append(precision_sum / size)
    return ndcg, average_precision


def _weighted_matches(
    neighbors: Sequence[Sequence[Sequence[int]]],
    scores: Sequence[Sequence[float]],
    lengths: Sequence[int | None],
    one_to_one: bool,
) -> tuple[list[float], list[float]]:
    """Per example: (matched score, total score) over the first `lengths[i]` predictions."""
    matched_scores: list[float] = []
    totals: list[float] = []
    for example, example_scores, n in zip(neighbors, scores, lengths):
        example, example_scores = example[:n], example_scores[:n]
        totals.append(math.fsum(example_scores))
        hit = [i for i, gold in enumerate(example) if gold]
        if one_to_one and len(hit) > 1:
            order = sorted(range(len(example)), key=lambda i: -example_scores[i])
            covered = maximum_matching(example, order)
            hit = [i for i in hit if covered[i]]
        matched_scores.append(math.fsum(example_scores[i] for i in hit))
    return matched_scores, totals


def weighted_statistics(
    predictions: Sequence[Sequence[str]],
    scores: Sequence[Sequence[float]],
    references: Sequence[Sequence[str]],
    *,
    texts: Sequence[str] | None = None,
    presence: str = "all",
    match: str = "substring",
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    one_to_one: bool = True,
    average: str = "macro",
    top_k: TopK = None,
    k: int = 5,
    relevance: str = "graded",
    clip_scores: bool = False,
    zero_division: float = 0.0,
) -> tuple[np.ndarray, Values, np.ndarray]:
    """Per-example statistics of `weighted_keyword_prf` (docs/definitions.md section 11): `(statistics,
    values, has_gold)`: the `prf_statistics` columns of the weighted P/R/F1, then whether
    the example has gold keywords (and counts), its nDCG@k and its AP@k (0 otherwise)."""
    check_match(match)
    one_to_one = check_flag(one_to_one, "one_to_one")
    check_average(average)
    top_k = check_top_k(top_k)
    k = check_positive_int(k, "k")
    check_relevance(relevance)
    clip_scores = check_flag(clip_scores, "clip_scores")
    zero_division = check_zero_division(zero_division)
    if scores is None:
        raise ValueError("scores must be given: one list of scores per example")
    corpus = prepare_corpus(
        predictions, references, scores=scores, normalize=normalize, stemmer=stemmer, clip_scores=clip_scores
    )
    corpus, included = select_presence(corpus, texts, presence, normalize, stemmer)
    neighbors = corpus_neighbors(corpus, match)
    n_gold = corpus.references.sizes
    matched, totals = _weighted_matches(neighbors, corpus.predictions.scores, cutoff_lengths(corpus, top_k), one_to_one)
    weighted = prf_statistics(
        np.asarray(matched),
        np.asarray(totals),
        np.asarray(matched),
        n_gold,
        zero_division=zero_division,
        included=included,
    )
    ndcg, average_precision = ranking_scores(neighbors, n_gold.tolist(), k, relevance)
    has_gold = n_gold > 0
    ranking = np.column_stack([has_gold, [v or 0.0 for v in ndcg], [v or 0.0 for v in average_precision]]).astype(
        np.float64
    )
    statistics = np.asfortranarray(np.hstack([weighted, ranking]))
    values = weighted_reducer({"average": average, "k": k, "zero_division": zero_division})
    return statistics, values, has_gold


def weighted_keyword_prf(
    predictions: Sequence[Sequence[str]],
    scores: Sequence[Sequence[float]],
    references: Sequence[Sequence[str]],
    *,
    texts: Sequence[str] | None = None,
    presence: str = "all",
    match: str = "substring",
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    one_to_one: bool = True,
    average: str = "macro",
    top_k: TopK = None,
    k: int = 5,
    relevance: str = "graded",
    clip_scores: bool = False,
    zero_division: float = 0.0,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
    return_per_example: bool = False,
) -> dict[str, Any]:
    """Score-weighted precision / recall / F1, nDCG@k and MAP@k.

    Args:
        predictions: per example, the predicted keywords in rank order.
        scores: per example, one confidence in [0, 1] per predicted keyword.
        references: per example, the gold keywords (most important first).
        texts, presence: present / absent keywords only, as in `keyword_prf`.
        match, normalize, stemmer, average, zero_division: as in `keyword_prf`.
        one_to_one: matched score from a maximum-weight one-to-one matching (default),
            or the scores of all predictions that match some gold keyword.
        top_k: cut-off for the weighted P/R/F1 (None or "M", an int, or "O"); the
            weighted precision divides by the score sum of the kept predictions.
        k: the rank cut-off of nDCG and MAP (default 5).
        relevance: "graded" (gold position j weighs 1 / log2(j + 2)) or "binary".
        clip_scores: clip finite scores into [0, 1] instead of raising.
        confidence_level, n_resamples, random_state, bootstrap: bootstrap intervals, as in `keyword_prf`.
        return_per_example: also return `per_example` (nDCG / MAP are None for
            examples without gold keywords).

    Returns:
        `weighted_precision`, `weighted_f1`, `ndcg@{k}`, `map@{k}`: floats in [0, 1];
        `weighted_recall` in [0, 1] with one-to-one matching (without it, several
        predictions can be credited for one gold keyword, and it can exceed 1).
        nDCG and MAP average over examples with gold keywords; AP@k divides by |G|.

    Example:
        >>> result = weighted_keyword_prf(
        ...     [["scam", "family", "poverty", "cinematography", "fraud"]],
        ...     [[0.9, 0.8, 0.7, 0.6, 0.5]],
        ...     [["fraud", "poverty", "scam"]],
        ... )
        >>> round(result["ndcg@5"], 4)
        0.7295
    """
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    return_per_example = check_flag(return_per_example, "return_per_example")
    statistics, values, has_gold = weighted_statistics(
        predictions,
        scores,
        references,
        texts=texts,
        presence=presence,
        match=match,
        normalize=normalize,
        stemmer=stemmer,
        one_to_one=one_to_one,
        average=average,
        top_k=top_k,
        k=k,
        relevance=relevance,
        clip_scores=clip_scores,
        zero_division=zero_division,
    )
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        k = check_positive_int(k, "k")
        included = statistics[:, 0] > 0  # presence leaves an example out with a row of zeros
        per_example = per_example_columns(statistics, dict(zip(WEIGHTED_NAMES, (1, 2, 3))), included)
        per_example.update(per_example_columns(statistics, {f"ndcg@{k}": 9, f"map@{k}": 10}, has_gold))
        result["per_example"] = per_example
    return result


def _ranking(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    k: int,
    relevance: str,
    match: str,
    normalize: NormalizeOption,
    stemmer: str | None,
    texts: Sequence[str] | None,
    presence: str,
) -> tuple[list[float | None], list[float | None]]:
    check_match(match)
    k = check_positive_int(k, "k")
    check_relevance(relevance)
    corpus = prepare_corpus(predictions, references, normalize=normalize, stemmer=stemmer)
    corpus, _ = select_presence(corpus, texts, presence, normalize, stemmer)
    return ranking_scores(corpus_neighbors(corpus, match), corpus.references.sizes.tolist(), k, relevance)


def ndcg_at_k(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    k: int = 5,
    relevance: str = "graded",
    match: str = "substring",
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    texts: Sequence[str] | None = None,
    presence: str = "all",
    zero_division: float = 0.0,
) -> float:
    """Mean nDCG@k over examples with gold keywords (`zero_division` if there are none);
    `texts` and `presence` as in `keyword_prf`.

    Example:
        >>> round(ndcg_at_k([["scam", "family", "poverty", "cinematography", "fraud"]],
        ...                 [["fraud", "poverty", "scam"]]), 4)
        0.7295
    """
    zero_division = check_zero_division(zero_division)
    ndcg, _ = _ranking(predictions, references, k, relevance, match, normalize, stemmer, texts, presence)
    return mean_or([v for v in ndcg if v is not None], zero_division)


def map_at_k(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    k: int = 5,
    match: str = "substring",
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    texts: Sequence[str] | None = None,
    presence: str = "all",
    zero_division: float = 0.0,
) -> float:
    """Mean AP@k (binary relevance, docs/definitions.md section 4; trec_eval's `map_cut_k`) over examples
    with gold keywords: the precisions at the hit ranks within the first k, summed, / |G|;
    `texts` and `presence` as in `keyword_prf`.

    Example:
        >>> map_at_k([["scam", "family", "poverty"]], [["fraud", "poverty", "scam"]], k=2)
        0.3333333333333333
    """
    zero_division = check_zero_division(zero_division)
    _, average_precision = _ranking(predictions, references, k, "binary", match, normalize, stemmer, texts, presence)
    return mean_or([v for v in average_precision if v is not None], zero_division)
