"""Corpus-level ("global per movie") evaluation: pool examples by group (docs/definitions.md section 3)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

from .normalization import NormalizeOption
from .preparation import prepare_corpus
from .validation import check_corpus, check_same_length, describe


class PooledCorpus(NamedTuple):
    """One example per group, in order of first appearance of the group."""

    groups: list[Hashable]
    predictions: list[list[str]]
    references: list[list[str]]
    scores: list[list[float]] | None


def missing_label(value: Any) -> bool:
    """A label that says "none": None, a NaN (pandas' empty cell, alike from a list, a numpy array,
    a pandas or polars Series: NaN equals no other NaN, so each would make a group of its own),
    pandas' NA or NaT."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and math.isnan(value)


def pool_by_group(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    groups: Sequence[Hashable],
    *,
    scores: Sequence[Sequence[float]] | None = None,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    clip_scores: bool = False,
) -> PooledCorpus:
    """Merge the examples of each group into one example.

    Every example needs a group: a missing label (None, NaN) is refused, naming the example.
    Per group, the predictions of all its examples in first-occurrence order (with
    `scores`, each keyword keeps its maximum score) and the union of its references in
    first-occurrence order. Keywords are identified by their normalized form; the first
    occurrence's original string is kept. Evaluate the result as one example per group.

    Example:
        >>> pooled = pool_by_group([["war", "Jedi"], ["jedi", "droid"]], [["jedi"], ["jedi", "empire"]],
        ...                        ["SW4", "SW4"])
        >>> pooled.predictions, pooled.references
        ([['war', 'Jedi', 'droid']], [['jedi', 'empire']])
    """
    groups = check_corpus(groups, "groups")
    check_same_length(predictions=check_corpus(predictions, "predictions"), groups=groups)
    corpus = prepare_corpus(
        predictions,
        references,
        scores=scores,
        normalize=normalize,
        stemmer=stemmer,
        clip_scores=clip_scores,
        keep_originals=True,
    )
    pooled_predictions: dict[Hashable, dict[int, list[Any]]] = {}
    pooled_references: dict[Hashable, dict[int, str]] = {}
    side = corpus.predictions
    example_scores = side.scores if side.scores is not None else [None] * len(corpus)
    for index, group in enumerate(groups):
        if missing_label(group):
            shown = "None" if group is None else str(group).replace("nan", "NaN")
            raise ValueError(
                f"groups: example {index} has no group ({shown}): give every example a group; a missing label "
                "(None, NaN) is refused, never pooled with the others"
            )
        try:
            merged = pooled_predictions.setdefault(group, {})
        except TypeError:
            raise ValueError(f"groups: example {index} must be hashable, got {describe(group)}") from None
        for keyword_id, original, score in zip(
            side.ids[index], side.originals[index], example_scores[index] or [None] * len(side.ids[index])
        ):
            entry = merged.setdefault(keyword_id, [original, score])
            if score is not None and score > entry[1]:
                entry[1] = score
        gold = pooled_references.setdefault(group, {})
        for keyword_id, original in zip(corpus.references.ids[index], corpus.references.originals[index]):
            gold.setdefault(keyword_id, original)
    keys = list(pooled_predictions)
    return PooledCorpus(
        keys,
        [[original for original, _ in pooled_predictions[key].values()] for key in keys],
        [list(pooled_references[key].values()) for key in keys],
        None if scores is None else [[score for _, score in pooled_predictions[key].values()] for key in keys],
    )
