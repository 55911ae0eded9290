"""Family 2: score-weighted P/R/F1, graded nDCG@k and MAP@k (docs/definitions.md section 4)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.cutoffs import prediction_cutoffs
from ..core.matching import cut_edges, examples_neighbors, maximum_matching, needs_matching, shared_vertices
from ..core.normalization import NormalizeOption
from ..core.preparation import prepare_corpus
from ..core.presence import select_presence
from ..core.relations import Edges, corpus_edges
from ..core.validation import (
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
from ..stats.resampling import RandomState
from .averaging import Values, mean_or, per_example_columns, prf_statistics, prf_values, safe_ratio, summarize

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
    edges: Edges, scores: np.ndarray, offsets: np.ndarray, cutoffs: np.ndarray | None, one_to_one: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per example: (matched score, total score) over the predictions below the cut-off.

    `scores` holds every prediction's score, example i's at `offsets[i]:offsets[i + 1]`.
    Without `one_to_one`, or where no gold keyword is in two edges, every matched
    prediction counts; where no prediction is in two edges, each matched gold keyword
    counts the best score among its predictions (what the greedy by decreasing score keeps);
    otherwise the greedy runs on the example (a maximum-weight matching, `maximum_matching`).
    """
    n = len(offsets) - 1
    examples = np.repeat(np.arange(n), np.diff(offsets))
    if cutoffs is None:
        totals = np.bincount(examples, weights=scores, minlength=n)
    else:
        kept = np.arange(len(scores)) - offsets[examples] < cutoffs[examples]
        totals = np.bincount(examples[kept], weights=scores[kept], minlength=n)
    edges = cut_edges(edges, cutoffs)
    edge_count, matched_predictions, matched_gold = shared_vertices(edges, n)
    first_edge = np.ones(len(edges.examples), dtype=bool)
    first_edge[1:] = (edges.examples[1:] != edges.examples[:-1]) | (edges.predictions[1:] != edges.predictions[:-1])
    edge_scores = scores[offsets[edges.examples] + edges.predictions]
    matched = np.bincount(edges.examples[first_edge], weights=edge_scores[first_edge], minlength=n)
    if not one_to_one:
        return matched, totals
    single = (edge_count == matched_predictions) & (edge_count != matched_gold)  # gold keywords shared
    if single.any():
        chosen = single[edges.examples]
        examples_, gold_, scores_ = edges.examples[chosen], edges.gold[chosen], edge_scores[chosen]
        order = np.lexsort((-scores_, gold_, examples_))
        examples_, gold_, scores_ = examples_[order], gold_[order], scores_[order]
        best = np.ones(len(examples_), dtype=bool)
        best[1:] = (examples_[1:] != examples_[:-1]) | (gold_[1:] != gold_[:-1])
        matched[single] = np.bincount(examples_[best], weights=scores_[best], minlength=n)[single]
    general = np.flatnonzero(needs_matching(edge_count, matched_predictions, matched_gold))
    sizes = (edges.predictions[np.searchsorted(edges.examples, general, side="right") - 1] + 1).tolist()
    for example, size, neighbors in zip(general.tolist(), sizes, examples_neighbors(edges, general, sizes)):
        example_scores = scores[offsets[example] : offsets[example] + size].tolist()
        order = sorted(range(size), key=lambda i: -example_scores[i])
        covered = maximum_matching(neighbors, order)
        matched[example] = math.fsum(score for score, hit in zip(example_scores, covered) if hit)
    return matched, totals


def _ranking_from_edges(
    edges: Edges, sizes: np.ndarray, n_gold: np.ndarray, k: int, relevance: str
) -> tuple[np.ndarray, np.ndarray]:
    """`ranking_scores` as arrays (0 for examples without gold keywords), from the edges.

    Where no gold keyword is in two edges among the first k predictions (the usual case),
    each matched prediction claims its earliest gold keyword; the other examples are walked
    by `ranking_scores`.
    """
    n = len(n_gold)
    edges = cut_edges(edges, np.full(n, min(k, 2**62), dtype=np.int64))
    edge_count, matched_predictions, matched_gold = shared_vertices(edges, n)
    depth = max(int(n_gold.max(initial=0)), int(edges.predictions.max(initial=-1)) + 1)
    discount = np.asarray(_discounts(depth))
    gain = discount if relevance == "graded" else np.ones(depth)
    ideal = np.cumsum(gain[: min(k, depth)] * discount[: min(k, depth)])
    first_edge = np.ones(len(edges.examples), dtype=bool)
    first_edge[1:] = (edges.examples[1:] != edges.examples[:-1]) | (edges.predictions[1:] != edges.predictions[:-1])
    examples, ranks, claimed = edges.examples[first_edge], edges.predictions[first_edge], edges.gold[first_edge]
    dcg = np.bincount(examples, weights=gain[claimed] * discount[ranks], minlength=n)
    hits_before = np.arange(len(examples)) - np.searchsorted(examples, examples)
    precision_sum = np.bincount(examples, weights=(hits_before + 1) / (ranks + 1), minlength=n)
    general = np.flatnonzero((edge_count != matched_gold) & (n_gold > 0))
    if len(general):
        neighbors = examples_neighbors(edges, general, np.minimum(k, sizes[general]).tolist())
        ndcg, average_precision = ranking_scores(neighbors, n_gold[general].tolist(), k, relevance)
    has_gold = n_gold > 0
    ndcg_all = np.zeros(n)
    ndcg_all[has_gold] = dcg[has_gold] / ideal[np.minimum(k, n_gold[has_gold]) - 1]
    ap_all = np.zeros(n)
    ap_all[has_gold] = precision_sum[has_gold] / n_gold[has_gold]
    if len(general):
        ndcg_all[general] = ndcg
        ap_all[general] = average_precision
    return ndcg_all, ap_all


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
    edges = corpus_edges(corpus, match)
    n_gold = corpus.references.sizes
    scores_flat, offsets = corpus.predictions.flat_scores
    matched, totals = _weighted_matches(edges, scores_flat, offsets, prediction_cutoffs(corpus, top_k), one_to_one)
    weighted = prf_statistics(
        np.asarray(matched),
        np.asarray(totals),
        np.asarray(matched),
        n_gold,
        zero_division=zero_division,
        included=included,
    )
    ndcg, average_precision = _ranking_from_edges(edges, corpus.predictions.sizes, n_gold, k, relevance)
    has_gold = n_gold > 0
    ranking = np.column_stack([has_gold, ndcg, average_precision]).astype(np.float64)
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
) -> tuple[list[float], list[float]]:
    """nDCG@k and AP@k of the examples with gold keywords."""
    check_match(match)
    k = check_positive_int(k, "k")
    check_relevance(relevance)
    corpus = prepare_corpus(predictions, references, normalize=normalize, stemmer=stemmer)
    corpus, _ = select_presence(corpus, texts, presence, normalize, stemmer)
    n_gold = corpus.references.sizes
    ndcg, average_precision = _ranking_from_edges(
        corpus_edges(corpus, match), corpus.predictions.sizes, n_gold, k, relevance
    )
    has_gold = n_gold > 0
    return ndcg[has_gold].tolist(), average_precision[has_gold].tolist()


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
    return mean_or(ndcg, zero_division)


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
    return mean_or(average_precision, zero_division)
