"""Top-k cut-offs (docs/definitions.md section 3): how many leading predictions each example
keeps, and the precision denominators they give (k, or |gold| for R-precision).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .preparation import PreparedCorpus, PreparedSide


def cutoff_lengths(corpus: PreparedCorpus, top_k: int | str | None) -> list[int | None]:
    """How many leading predictions each example keeps: all (None), `top_k` (int), or as
    many as it has gold keywords ("O"). `top_k` must have passed `validation.check_top_k`."""
    if top_k == "O":
        return [len(gold) for gold in corpus.references.ids]
    return [top_k] * len(corpus)  # type: ignore[list-item]


def prediction_cutoffs(corpus: PreparedCorpus, top_k: int | str | None) -> np.ndarray | None:
    """`cutoff_lengths` as an array (None: every prediction kept)."""
    return cutoffs_of_sizes(top_k, len(corpus), lambda: corpus.references.sizes)


def cutoffs_of_sizes(top_k: int | str | None, n: int, gold_sizes: Callable[[], np.ndarray]) -> np.ndarray | None:
    """`prediction_cutoffs` of n examples whose kept gold keywords `gold_sizes()` counts
    (called only for "O")."""
    if top_k is None:
        return None
    if top_k == "O":
        return gold_sizes()
    return np.full(n, min(int(top_k), np.iinfo(np.int64).max), dtype=np.int64)


def precision_denominators(corpus: PreparedCorpus, top_k: int | str | None) -> np.ndarray:
    """Per example, the precision denominator of the count-based families (docs/definitions.md section 3):
    the number of predictions (`None`), k (an int: a missing prediction counts as wrong,
    trec_eval's `P_k`) or |G| ("O": R-precision)."""
    return denominators_of_sizes(top_k, len(corpus), lambda: corpus.predictions.sizes, lambda: corpus.references.sizes)


def denominators_of_sizes(
    top_k: int | str | None, n: int, prediction_sizes: Callable[[], np.ndarray], gold_sizes: Callable[[], np.ndarray]
) -> np.ndarray:
    """`precision_denominators` of n examples whose kept predictions and gold keywords
    `prediction_sizes()` and `gold_sizes()` count (each called only where needed)."""
    if top_k is None:
        return prediction_sizes()
    if top_k == "O":
        return gold_sizes()
    return np.full(n, float(top_k))  # float: k may exceed int64


def apply_top_k(corpus: PreparedCorpus, top_k: int | str | None) -> PreparedCorpus:
    """The corpus with each example's predictions cut as `cutoff_lengths` says."""
    if top_k is None:
        return corpus
    lengths = cutoff_lengths(corpus, top_k)

    def cut(lists: list[tuple[Any, ...]] | None) -> list[tuple[Any, ...]] | None:
        return None if lists is None else [items[:n] for items, n in zip(lists, lengths)]

    predictions = corpus.predictions
    cut_predictions = PreparedSide(cut(predictions.ids), cut(predictions.scores), cut(predictions.originals))
    return PreparedCorpus(corpus.strings, cut_predictions, corpus.references)
