"""Family 1: approximate-match keyword precision / recall / F1 (docs/definitions.md section 3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.matching import count_matches
from ..core.normalization import NormalizeOption
from ..core.pairs import keyword_pairs
from ..core.validation import (
    TopK,
    check_average,
    check_count_options,
    check_flag,
    check_interval_options,
    check_zero_division,
)
from ..stats.resampling import RandomState
from .averaging import Values, per_example_columns, prf_statistics, prf_values, summarize

NAMES = ("precision", "recall", "f1")


def keyword_prf_reducer(options: Mapping[str, Any]) -> Values:
    """Column sums of `keyword_prf_statistics` -> P, R, F1 under `options` (average, zero_division)."""
    return prf_values(NAMES, check_average(options["average"]), check_zero_division(options["zero_division"]))


def keyword_prf_statistics(
    predictions: Sequence[Sequence[str]],
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
    zero_division: float = 0.0,
) -> tuple[np.ndarray, Values, np.ndarray]:
    """Per-example statistics of `keyword_prf` (docs/definitions.md section 11): `(statistics, values,
    included)`, where `values` maps column sums of `statistics` to every returned key and
    `included` tells which examples count (all, unless `presence` leaves some out)."""
    match, one_to_one, average, top_k, zero_division = check_count_options(
        match, one_to_one, average, top_k, zero_division
    )
    pairs = keyword_pairs(
        predictions,
        references,
        texts=texts,
        presence=presence,
        match=match,
        normalize=normalize,
        stemmer=stemmer,
        top_k=top_k,
    )
    matched_predictions, matched_gold = count_matches(pairs, one_to_one)
    statistics = prf_statistics(
        matched_predictions,
        pairs.denominators,
        matched_gold,
        pairs.gold_sizes,
        zero_division=zero_division,
        included=pairs.included,
    )
    return statistics, prf_values(NAMES, average, zero_division), pairs.included


def keyword_prf(
    predictions: Sequence[Sequence[str]],
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
    zero_division: float = 0.0,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
    return_per_example: bool = False,
) -> dict[str, Any]:
    """Keyword precision, recall and F1 under a match relation.

    Args:
        predictions: per example, the predicted keywords in rank order.
        references: per example, the gold keywords (most important first).
        texts: per example, the document (review); needed by `presence`.
        presence: "all" (default), "present" or "absent": keep only the keywords that
            occur (do not occur) in the example's text as a contiguous run of its tokens;
            examples without such a reference are left out (docs/definitions.md section 9).
        match: "exact", "substring" (default: equal or either contains the other) or
            "token" (contiguous token sub-sequence).
        normalize: "default", "ascii", "none" or a callable `str -> str` (docs/definitions.md section 1).
        stemmer: None or "porter".
        one_to_one: count a maximum one-to-one matching (default) instead of every
            prediction (gold keyword) that matches some gold keyword (prediction).
        average: "macro" (mean of per-example values) or "micro" (pooled counts).
        top_k: None or "M" (all predictions), an int k (the first k; precision divides by
            k, as trec_eval's `P_k`) or "O" (the first |gold|; precision divides by |gold|:
            R-precision).
        zero_division: value of a ratio whose denominator is 0, in [0, 1].
        confidence_level: e.g. 0.95: add `<key>_ci_low` / `<key>_ci_high`, bootstrap
            percentile intervals over examples (default None: none; docs/definitions.md section 11).
        n_resamples: bootstrap resamples (default 1000).
        random_state: None (fresh), an int seed (default 0) or a `numpy.random.Generator`.
        bootstrap: "multinomial" (default: examples drawn with replacement) or "poisson"
            (each example weighs Poisson(1) draws keyed by its position: the intervals of a
            `MetricState` fed in order, or of states made apart with keys or global positions;
            docs/definitions.md section 12).
        return_per_example: also return `per_example`, a dict of per-example lists (None
            for an example that `presence` leaves out).

    Returns:
        `precision`, `recall`, `f1`: floats in [0, 1].

    Example:
        >>> keyword_prf([["social satire", "pizza"]], [["satire", "class", "family"]])
        {'precision': 0.5, 'recall': 0.3333333333333333, 'f1': 0.4}
    """
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    return_per_example = check_flag(return_per_example, "return_per_example")
    statistics, values, included = keyword_prf_statistics(
        predictions,
        references,
        texts=texts,
        presence=presence,
        match=match,
        normalize=normalize,
        stemmer=stemmer,
        one_to_one=one_to_one,
        average=average,
        top_k=top_k,
        zero_division=zero_division,
    )
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        result["per_example"] = per_example_columns(statistics, dict(zip(NAMES, (1, 2, 3))), included)
    return result
