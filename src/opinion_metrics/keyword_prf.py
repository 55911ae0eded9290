"""Family 1: approximate-match keyword precision / recall / F1 (SPEC section 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .averaging import TopK, check_average, check_flag, check_top_k, check_zero_division, prf
from .matching import check_match, corpus_neighbors, match_counts
from .preparation import NormalizeOption, apply_top_k, precision_denominators, prepare_corpus


def keyword_prf(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    match: str = "substring",
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    one_to_one: bool = True,
    average: str = "macro",
    top_k: TopK = None,
    zero_division: float = 0.0,
    return_per_example: bool = False,
) -> dict[str, Any]:
    """Keyword precision, recall and F1 under a match relation.

    Args:
        predictions: per example, the predicted keywords in rank order.
        references: per example, the gold keywords (most important first).
        match: "exact", "substring" (default: equal or either contains the other) or
            "token" (contiguous token sub-sequence).
        normalize: "default", "ascii", "none" or a callable `str -> str` (SPEC section 1).
        stemmer: None or "porter".
        one_to_one: count a maximum one-to-one matching (default) instead of every
            prediction (gold keyword) that matches some gold keyword (prediction).
        average: "macro" (mean of per-example values) or "micro" (pooled counts).
        top_k: None or "M" (all predictions), an int k (the first k; precision divides by
            k, as trec_eval's `P_k`) or "O" (the first |gold|; precision divides by |gold|:
            R-precision).
        zero_division: value of a ratio whose denominator is 0, in [0, 1].
        return_per_example: also return `per_example`, a dict of per-example lists.

    Returns:
        `precision`, `recall`, `f1`: floats in [0, 1].

    Example:
        >>> keyword_prf([["social satire", "pizza"]], [["satire", "class", "family"]])
        {'precision': 0.5, 'recall': 0.3333333333333333, 'f1': 0.4}
    """
    check_match(match)
    one_to_one = check_flag(one_to_one, "one_to_one")
    check_average(average)
    top_k = check_top_k(top_k)
    zero_division = check_zero_division(zero_division)
    return_per_example = check_flag(return_per_example, "return_per_example")
    corpus = apply_top_k(prepare_corpus(predictions, references, normalize=normalize, stemmer=stemmer), top_k)
    matched_predictions, matched_gold = match_counts(corpus_neighbors(corpus, match), one_to_one)
    return prf(
        np.asarray(matched_predictions),
        precision_denominators(corpus, top_k),
        np.asarray(matched_gold),
        corpus.references.sizes,
        average=average,
        zero_division=zero_division,
        return_per_example=return_per_example,
    )
