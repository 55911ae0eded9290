"""Family 7: sentiment tuples P/R/F1 (docs/definitions.md section 13): aspect-opinion pairs,
triplets and quads of aspect-based sentiment analysis, matched one to one (exactly or with
partial credit), for the whole tuple and for projections onto some of its elements."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.normalization import NormalizeOption
from ..core.tuple_matching import membership_hits, tuple_counts
from ..core.tuple_text import read_predictions
from ..core.tuples import (
    SPAN_ELEMENTS,
    Preparer,
    check_counting,
    check_elements,
    check_format,
    check_label_map,
    check_lengths,
    check_projections,
    check_together,
    check_tuple_match,
)
from ..core.validation import check_average, check_corpus, check_flag, check_interval_options, check_zero_division
from ..stats.resampling import RandomState
from .averaging import Values, per_example_columns, prf_statistics, prf_sums, prf_values, summarize

NAMES = ("precision", "recall", "f1")
WIDTH = len(NAMES) + 5  # the columns of `averaging.prf_statistics`


def block_names(elements: Any, projections: Any) -> list[str]:
    """The key prefix of each block of statistics: "" (the whole tuple), then "<elements>_" per
    projection ("aspect_", "aspect_opinion_")."""
    checked = check_elements(elements)
    return ["", *("_".join(projection) + "_" for projection in check_projections(projections, checked))]


def sentiment_tuple_reducer(options: Mapping[str, Any]) -> Values:
    """Column sums of `sentiment_tuple_statistics` -> every value under `options` (elements,
    projections, average, zero_division, format)."""
    prefixes = block_names(options["elements"], options["projections"])
    average, zero_division = check_average(options["average"]), check_zero_division(options["zero_division"])
    blocks = [prf_values(tuple(prefix + name for name in NAMES), average, zero_division) for prefix in prefixes]
    unparsed = check_format(options["format"]) is not None

    def values(sums: np.ndarray) -> dict[str, np.ndarray]:
        sums = np.asarray(sums, dtype=np.float64)
        found: dict[str, np.ndarray] = {}
        for index, block in enumerate(blocks):
            found.update(block(sums[..., WIDTH * index : WIDTH * (index + 1)]))
        if unparsed:
            found["unparsed"] = sums[..., WIDTH * len(blocks)]
        return found

    return values


def _counts(
    predictions: Sequence[Any], references: Sequence[Any], checked: dict[str, Any], normalize: NormalizeOption
) -> tuple[list[tuple[np.ndarray, ...]], np.ndarray | None]:
    """Per block (the whole tuple, then each projection): matched predictions, predictions,
    matched gold tuples and gold tuples per example; and with `format` each example's
    unreadable segments."""
    elements, projected = checked["elements"], checked["projected"]
    predictions, references = check_corpus(predictions, "predictions"), check_corpus(references, "references")
    n = check_lengths(predictions, references)
    unparsed = None
    if checked["format"] is not None:
        predictions, segments = read_predictions(predictions, checked["format"], elements)
        unparsed = np.fromiter(map(len, segments), dtype=np.int64, count=n)
    if checked["counting"] == "membership":
        hits = np.ascontiguousarray(membership_hits(predictions, references, elements, projected).T, dtype=np.float64)
        predicted, gold = hits[-2], hits[-1]  # each column contiguous
        if unparsed is not None:
            predicted = predicted + unparsed
        return [(hits[k], predicted, hits[k], gold) for k in range(len(projected))], unparsed
    preparer = Preparer(elements, normalize, checked["label_map"])
    pred, gold_side = preparer.sides(predictions, references, unparsed)
    spans = [name in SPAN_ELEMENTS for name in elements]
    counts = tuple_counts(pred, gold_side, projected, spans, preparer.forms, checked["match"])
    return [(c.matched, c.predicted, c.matched_gold, c.gold) for c in counts], unparsed


def sentiment_tuple_statistics(
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    elements: Any = "aste",
    match: str = "exact",
    average: str = "micro",
    counting: str = "one_to_one",
    projections: Any = None,
    label_map: Any = None,
    normalize: NormalizeOption = "default",
    format: str | None = None,  # noqa: A002 (the option's name)
    zero_division: float = 0.0,
) -> tuple[np.ndarray, Values, np.ndarray]:
    """Per-example statistics of `sentiment_tuple_prf` (docs/definitions.md section 11): `(statistics,
    values, included)`; `statistics` has, per block (the whole tuple, then each projection), the
    8 columns of `averaging.prf_statistics`, then with `format` the unreadable segments."""
    checked = _checked(elements, match, average, counting, projections, label_map, normalize, format, zero_division)
    blocks, unparsed = _counts(predictions, references, checked, normalize)
    n = len(blocks[0][0])
    statistics = np.empty((n, WIDTH * len(blocks) + (unparsed is not None)), dtype=np.float64, order="F")
    for index, block in enumerate(blocks):
        statistics[:, WIDTH * index : WIDTH * (index + 1)] = prf_statistics(
            *block, zero_division=checked["zero_division"]
        )
    if unparsed is not None:
        statistics[:, -1] = unparsed
    return statistics, sentiment_tuple_reducer(checked["options"]), np.ones(n, dtype=bool)


def _checked(
    elements: Any, match: Any, average: Any, counting: Any, projections: Any, label_map: Any, normalize: Any,
    format: Any, zero_division: Any,  # noqa: A002
) -> dict[str, Any]:  # fmt: skip
    """Every option checked, in the order of the signature, then those that constrain each other."""
    options = {"elements": elements, "match": match, "average": average, "counting": counting}
    options |= {"projections": projections, "label_map": label_map, "normalize": normalize, "format": format}
    options["zero_division"] = zero_division
    order = check_elements(elements)
    check_tuple_match(match)
    check_average(average)
    check_counting(counting)
    chosen = check_projections(projections, order)
    mapped = check_label_map(label_map)
    check_format(format)
    check_together(options)
    every = tuple(range(len(order)))
    projected = [every, *(tuple(order.index(name) for name in projection) for projection in chosen)]
    return {"elements": order, "projected": projected, "label_map": mapped, "match": match, "counting": counting,
            "format": format, "zero_division": check_zero_division(zero_division), "options": options}  # fmt: skip


def sentiment_tuple_prf(
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    elements: Any = "aste",
    match: str = "exact",
    average: str = "micro",
    counting: str = "one_to_one",
    projections: Any = None,
    label_map: Any = None,
    normalize: NormalizeOption = "default",
    format: str | None = None,  # noqa: A002 (the option's name)
    zero_division: float = 0.0,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
    return_per_example: bool = False,
) -> dict[str, Any]:
    """Precision, recall and F1 of sentiment tuples (pairs, triplets, quads), one to one.

    Args:
        predictions: per example, the predicted tuples (or, with `format`, the generated text).
        references: per example, the gold tuples.
        elements: the tuple's elements in order: "aope" (aspect, opinion), "aste" (aspect,
            opinion, sentiment; default), "tasd" (aspect, category, sentiment), "asqp" (aspect,
            category, sentiment, opinion), "acos" (aspect, category, opinion, sentiment), or names.
            A tuple is a sequence in that order or a mapping with those keys.
        match: "exact" (every element equal; default) or "overlap" (labels equal, spans sharing
            a token; partial credit by shared tokens).
        average: "micro" (pooled counts; default) or "macro" (mean of per-example values).
        counting: "one_to_one" (default: each gold tuple credited once, duplicates dropped) or
            "membership" (the field's `compute_f1_scores`: a prediction is a hit when it is in the
            gold list, each repeat counted; strings compared as given, stripped; recall can exceed 1).
        projections: the element lists also scored alone (default: each span element and, with
            both, aspect and opinion), as lists or "_"-joined names; [] for none.
        label_map: labels mapped after strip and casefold (default pos, neg, neu -> positive,
            negative, neutral); a mapping, or "label=label" pairs separated by commas.
        normalize: how text spans are prepared before splitting into tokens (definitions, section 1).
        format: None, "paraphrase" (ABSA-QUAD) or "tuples" (generative ABSA): predictions are
            generated text, read by `parse_tuples`; an unreadable segment is a predicted tuple that
            matches nothing, counted in `unparsed`.
        zero_division: value of a ratio whose denominator is 0, in [0, 1].
        confidence_level, n_resamples, random_state, bootstrap: bootstrap intervals, as every
            family (definitions, sections 11 and 12).
        return_per_example: also return `per_example`, a dict of per-example lists.

    Returns:
        `precision`, `recall`, `f1` in [0, 1] (membership recall and F1 can exceed 1); per
        projection `<elements>_precision`, `_recall`, `_f1` (`aspect_f1`, `aspect_opinion_f1`);
        with `format`, `unparsed` (unreadable segments).

    Example:
        >>> predicted = [[("Pizza", "overcooked", "negative"), ("staff", "friendly", "positive")]]
        >>> result = sentiment_tuple_prf(predicted, [[("pizza", "over cooked", "NEG"), ("staff", "friendly", "POS")]])
        >>> result["f1"], result["aspect_f1"], result["opinion_f1"]
        (0.5, 1.0, 0.5)
    """
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    return_per_example = check_flag(return_per_example, "return_per_example")
    options = {"elements": elements, "match": match, "average": average, "counting": counting}
    options |= {"projections": projections, "label_map": label_map, "normalize": normalize, "format": format}
    options["zero_division"] = zero_division
    if intervals["confidence_level"] is None and not return_per_example:  # the sums alone: no matrix
        checked = _checked(**options)
        blocks, unparsed = _counts(predictions, references, checked, normalize)
        sums = [prf_sums(*block, zero_division=checked["zero_division"], average=average) for block in blocks]
        if unparsed is not None:
            sums.append(np.array([unparsed.sum()], dtype=np.float64))
        values = sentiment_tuple_reducer(checked["options"])(np.concatenate(sums))
        return {key: float(value) for key, value in values.items() if np.isfinite(value)}
    statistics, values, _ = sentiment_tuple_statistics(predictions, references, **options)
    result: dict[str, Any] = summarize(statistics, values, **intervals)
    if return_per_example:
        columns = {}
        for block, prefix in enumerate(block_names(elements, projections)):
            columns.update({prefix + name: WIDTH * block + 1 + k for k, name in enumerate(NAMES)})
        if format is not None:
            columns["unparsed"] = statistics.shape[1] - 1
        result["per_example"] = per_example_columns(statistics, columns)
    return result
