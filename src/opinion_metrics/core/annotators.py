"""Multiple annotators (docs/definitions.md section 8, seed 002): merged gold lists and pairwise Dice."""

from __future__ import annotations

from collections.abc import Sequence

from .normalization import NormalizeOption, make_normalizer
from .preparation import PreparedSide, Vocabulary, prepare_side
from .validation import check_corpus, check_keyword_list, check_same_length, check_zero_division

MERGE_MODES = ("union", "intersection")


def _prepare_annotators(
    annotations: Sequence[Sequence[Sequence[str]]], normalize: NormalizeOption, stemmer: str | None
) -> list[PreparedSide]:
    """One prepared side per annotator, all against one vocabulary."""
    annotations = check_corpus(annotations, "annotations")
    check_same_length(annotations=annotations)
    per_example = [check_keyword_list(lists, "annotations", index) for index, lists in enumerate(annotations)]
    n_annotators = len(per_example[0])
    for index, lists in enumerate(per_example):
        if len(lists) != n_annotators or n_annotators == 0:
            raise ValueError(
                f"annotations: example {index} has {len(lists)} annotators, expected "
                f"{n_annotators or 'at least 1'} (one keyword list per annotator in every example)"
            )
    vocabulary = Vocabulary(make_normalizer(normalize, stemmer))
    return [
        prepare_side(
            [lists[a] for lists in per_example], vocabulary, f"annotations (annotator {a})", keep_originals=True
        )
        for a in range(n_annotators)
    ]


def merge_references(
    annotations: Sequence[Sequence[Sequence[str]]],
    mode: str = "union",
    *,
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
) -> list[list[str]]:
    """One reference list per example from several annotators' lists.

    `annotations[i][a]` is annotator a's keyword list for example i. "union": every
    keyword, in first-occurrence order over the annotators; "intersection": the keywords
    (after normalization) that every annotator gave, in the first annotator's order.

    Example:
        >>> merge_references([[["Great battery", "screen"], ["great battery!", "price"]]])
        [['Great battery', 'screen', 'price']]
        >>> merge_references([[["Great battery", "screen"], ["great battery!", "price"]]], "intersection")
        [['Great battery']]
    """
    if mode not in MERGE_MODES:
        raise ValueError(f"mode must be one of {MERGE_MODES}, got {mode!r}")
    sides = _prepare_annotators(annotations, normalize, stemmer)
    merged = []
    for index in range(len(sides[0].ids)):
        if mode == "union":
            keywords: dict[int, str] = {}
            for side in sides:
                for keyword_id, original in zip(side.ids[index], side.originals[index]):
                    keywords.setdefault(keyword_id, original)
            merged.append(list(keywords.values()))
        else:
            common = set.intersection(*(set(side.ids[index]) for side in sides))
            first = sides[0]
            merged.append([o for i, o in zip(first.ids[index], first.originals[index]) if i in common])
    return merged


def agreement(
    annotations: Sequence[Sequence[Sequence[str]]],
    *,
    average: str = "micro",
    normalize: NormalizeOption = "default",
    stemmer: str | None = None,
    zero_division: float = 0.0,
) -> list[list[float]]:
    """Pairwise Dice coefficients `2|A ∩ B| / (|A| + |B|)` between annotators' keyword sets.

    Returns a symmetric matrix (list of rows) with 1.0 on the diagonal. "micro" pools
    the counts over examples; "macro" averages the per-example coefficients.

    Example:
        >>> agreement([[["battery", "screen"], ["battery", "price", "size"]]])
        [[1.0, 0.4], [0.4, 1.0]]
    """
    if average not in ("micro", "macro"):
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    zero_division = check_zero_division(zero_division)
    sides = _prepare_annotators(annotations, normalize, stemmer)
    sets = [[set(ids) for ids in side.ids] for side in sides]
    size = len(sides)
    matrix = [[1.0] * size for _ in range(size)]
    for a in range(size):
        for b in range(a + 1, size):
            overlaps = [2 * len(x & y) for x, y in zip(sets[a], sets[b])]
            totals = [len(x) + len(y) for x, y in zip(sets[a], sets[b])]
            if average == "micro":
                value = sum(overlaps) / sum(totals) if sum(totals) else zero_division
            else:
                values = [o / t if t else zero_division for o, t in zip(overlaps, totals)]
                value = sum(values) / len(values)
            matrix[a][b] = matrix[b][a] = value
    return matrix
