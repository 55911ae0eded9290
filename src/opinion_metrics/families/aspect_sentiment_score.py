"""Family 5: aspect presence F1 x rating R2 (docs/definitions.md section 7; Quy Nhon AI Hackathon 2022).

Per aspect j: F1 of presence (rating != 0) and R2 of the ratings on the examples where
prediction and reference are both present, with the fixed rating range as denominator:
`R2_j = 1 - RSS_j / (n_j * (max_rating - min_rating) ** 2)`. The score averages F1_j * R2_j.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..core.validation import (
    check_aspects,
    check_interval_options,
    check_rating_range,
    check_zero_division,
    describe,
    outside_range,
    rating_problem,
)
from ..stats.resampling import RandomState, add_intervals, bootstrap_intervals

DEFAULT_ASPECTS = (
    "entertainment",
    "accommodation",
    "restaurant",
    "food_and_beverage",
    "transportation",
    "shopping",
)
# The competition's (and tourism_reviews_vi's) column names, in the same order.
VIETNAMESE_COLUMNS = ("giai_tri", "luu_tru", "nha_hang", "an_uong", "di_chuyen", "mua_sam")
# Rows of a ratings table processed at a time (while they are in the CPU cache).
CACHE_ROWS = 2**14


def _first_bad_value(rows: Any, side: str, aspects: Sequence[str], min_rating: int, max_rating: int) -> str | None:
    """Describe the first entry that is not a valid rating (slow path, for messages), or None."""
    for index, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not isinstance(row, (Sequence, np.ndarray)):
            return f"{side}: example {index} must be a list of {len(aspects)} ratings, got {describe(row)}"
        if len(row) != len(aspects):
            return f"{side}: example {index} has {len(row)} ratings, expected {len(aspects)} (one per aspect)"
        for name, value in zip(aspects, row):
            problem = rating_problem(value, min_rating, max_rating)
            if problem:
                return f"{side}: example {index}, aspect {name!r}: {problem}"
    return None


def _contains_bool(rows: Sequence[Any]) -> bool:
    """Whether a list of rows holds a bool (numpy turns `[[True, 0]]` into integers)."""
    kinds = set(map(type, itertools.chain.from_iterable(rows)))
    return bool in kinds or np.bool_ in kinds


def _raise_at(
    array: np.ndarray,
    bad: np.ndarray,
    side: str,
    aspects: Sequence[str],
    problem: Callable[[Any], str],
    offset: int = 0,
) -> None:
    """Raise for the first True entry of `bad`, naming its example and aspect."""
    index, position = map(int, np.argwhere(bad)[0])
    message = problem(array[index, position].item())
    raise ValueError(f"{side}: example {offset + index}, aspect {aspects[position]!r}: {message}")


def _raise_out_of_range(
    table: np.ndarray, side: str, aspects: Sequence[str], min_rating: int, max_rating: int, offset: int = 0
) -> None:
    """Raise for the first (integer-valued) rating outside {0} ∪ [min_rating, max_rating], if any."""
    bad = (table != 0) & ((table < min_rating) | (table > max_rating))
    if bad.any():
        _raise_at(table, bad, side, aspects, lambda value: outside_range(int(value), min_rating, max_rating), offset)


def ratings_table(rows: Any, side: str, aspects: Sequence[str], min_rating: int, max_rating: int) -> np.ndarray:
    """Check the shape and types of an (examples x aspects) table of ratings; return it as
    an integer array (the range is checked block by block by `_outcome_blocks`).

    Accepts nested lists or arrays; a float equal to an integer (4.0) is accepted. Booleans,
    NaN, None, strings, non-integers and rows of the wrong length raise `ValueError` naming
    the example and the aspect.
    """
    if rows is None or isinstance(rows, (str, bytes, dict)) or not hasattr(rows, "__len__"):
        raise ValueError(f"{side} must be a table with one row of ratings per example, got {describe(rows)}")
    if hasattr(rows, "type") and callable(getattr(rows, "to_pylist", None)):  # an Arrow list column, by position
        rows = rows.to_pylist()
    elif getattr(rows, "ndim", 1) == 1 and callable(getattr(rows, "to_list", None)):  # a pandas or polars Series
        rows = rows.to_list()

    def problem() -> str:
        listed = (
            rows.tolist() if not isinstance(rows, (list, tuple)) and callable(getattr(rows, "tolist", None)) else rows
        )
        message = _first_bad_value(listed, side, aspects, min_rating, max_rating)
        return message or f"{side}: ratings must form an (examples x aspects) table of integers, got {describe(rows)}"

    try:
        array = np.asarray(rows)
    except (ValueError, TypeError, OverflowError):  # ragged
        raise ValueError(problem()) from None
    if array.ndim == 0:
        raise ValueError(f"{side} must be a table with one row of ratings per example, got {describe(rows)}")
    if array.shape[0] == 0 or array.size == 0 and array.ndim == 1:
        raise ValueError(f"{side}: no examples (need at least one)")
    if array.ndim != 2 or array.dtype.kind not in "iufO":
        raise ValueError(problem())
    if array.shape[1] != len(aspects):
        raise ValueError(
            f"{side}: example 0 has {array.shape[1]} ratings, expected {len(aspects)} (one per aspect: {list(aspects)})"
        )
    if array.dtype.kind == "O" or (isinstance(rows, (list, tuple)) and _contains_bool(rows)):
        message = _first_bad_value(rows if array.dtype.kind != "O" else array, side, aspects, min_rating, max_rating)
        if message:
            raise ValueError(message)
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (array != np.round(array))
        if bad.any():
            _raise_at(array, bad, side, aspects, lambda value: f"rating must be an integer, got {value!r}")
        _raise_out_of_range(array, side, aspects, min_rating, max_rating)
        return array.astype(np.int64)
    return array


def _checked_tables(
    predictions: Any, references: Any, aspects: Sequence[str], min_rating: int, max_rating: int
) -> tuple[np.ndarray, np.ndarray]:
    predicted = ratings_table(predictions, "predictions", aspects, min_rating, max_rating)
    gold = ratings_table(references, "references", aspects, min_rating, max_rating)
    if predicted.shape != gold.shape:
        raise ValueError(
            f"predictions has {predicted.shape[0]} examples but references has {gold.shape[0]}; "
            "they must have one row per example"
        )
    return predicted, gold


def _work_type(max_rating: int) -> type:
    """int8 when squared rating errors fit in it (max_rating <= 12), else float64."""
    return np.int8 if max_rating <= 12 else np.float64


def _outcome_blocks(
    predicted: np.ndarray, gold: np.ndarray, aspects: Sequence[str], min_rating: int, max_rating: int
) -> Iterator[tuple[int, np.ndarray]]:
    """Per block of rows small enough to stay in the CPU cache: `(first row, outcomes)`,
    outcomes of shape (4 x rows x aspects) holding the TP, FP and FN indicators of presence
    and the squared rating error where both sides are non-zero (in `_work_type`; the buffer
    is reused by the next block). Ratings are range-checked on the way: one read of each input.
    """
    rows, count = min(CACHE_ROWS, predicted.shape[0]), predicted.shape[1]
    pair = np.empty((2, rows, count), dtype=_work_type(max_rating))
    outcomes = np.empty((4, rows, count), dtype=pair.dtype)
    bits = max_rating.bit_length()
    check_max = (1 << bits) - 1 > max_rating
    for start in range(0, predicted.shape[0], CACHE_ROWS):
        blocks = (predicted[start : start + CACHE_ROWS], gold[start : start + CACHE_ROWS])
        size = len(blocks[0])
        small, out = pair[:, :size], outcomes[:, :size]
        for side, block, target in zip(("predictions", "references"), blocks, small):
            # Every value is in [0, 2**bits) iff their bitwise OR is.
            if int(np.bitwise_or.reduce(block, axis=None)) >> bits:
                _raise_out_of_range(block, side, aspects, min_rating, max_rating, start)
            np.copyto(target, block, casting="unsafe")
        if (check_max and small.max() > max_rating) or (min_rating > 1 and ((small > 0) & (small < min_rating)).any()):
            for side, block in zip(("predictions", "references"), blocks):
                _raise_out_of_range(block, side, aspects, min_rating, max_rating, start)
        np.not_equal(small, 0, out=out[1:3])
        np.logical_and(out[1], out[2], out=out[0])
        np.subtract(out[1:3], out[0], out=out[1:3])
        np.subtract(small[0], small[1], out=out[3])
        np.multiply(out[3], out[3], out=out[3])
        np.multiply(out[3], out[0], out=out[3])
        yield start, out


def _column_sums(tables: np.ndarray, max_value: int) -> np.ndarray:
    """Sums over rows of non-negative (k x rows x columns) tables whose entries are at most
    `max_value`: (k x columns), int64 for int8 tables.

    Numpy reduces a narrow table a few elements at a time and widens small ints to int64
    first; here blocks of rows are added as whole rows in the narrowest lane that cannot
    overflow (uint8, then uint16, then uint32), and only the few lane totals in int64.
    """
    if tables.dtype != np.int8:
        return tables.sum(axis=1)
    count, _, columns = tables.shape
    total = np.zeros((count, columns), dtype=np.int64)
    tables = tables.view(np.uint8)
    for lane in (np.uint8, np.uint16, np.uint32):
        depth = int(np.iinfo(lane).max) // max_value
        rows = tables.shape[1]
        if depth < 2 or rows < 2 * depth:
            break
        head = rows - rows % depth
        total += tables[:, head:].sum(axis=1, dtype=np.int64)
        tables = tables[:, :head].reshape(count, depth, -1).sum(axis=1, dtype=lane).reshape(count, -1, columns)
        max_value *= depth
    return total + tables.sum(axis=1, dtype=np.int64)


def _values_function(
    aspects: Sequence[str], min_rating: int, max_rating: int, zero_division: float
) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """`sums (..., 4A)` of per-aspect TP, FP, FN and squared errors -> every returned value."""
    count, scale = len(aspects), float((max_rating - min_rating) ** 2)

    def values(sums: np.ndarray) -> dict[str, np.ndarray]:
        sums = np.asarray(sums, dtype=np.float64)
        tp, fp, fn, squared = (sums[..., i * count : (i + 1) * count] for i in range(4))
        denominator = 2 * tp + fp + fn
        f1 = np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), zero_division)
        # n_j (rated on both sides) is TP_j; R2_j = 1 when it is 0.
        r2 = np.where(tp > 0, 1.0 - squared / (np.maximum(tp, 1) * scale), 1.0)
        per_aspect = f1 * r2
        result = {"score": per_aspect.mean(axis=-1)}
        for j, name in enumerate(aspects):
            result[f"f1_{name}"], result[f"r2_{name}"] = f1[..., j], r2[..., j]
            result[f"score_{name}"] = per_aspect[..., j]
        return result

    return values


def aspect_reducer(options: Mapping[str, Any]) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """Column sums of `aspect_statistics` -> every value of `aspect_sentiment_score` under
    `options` (aspects, min_rating, max_rating, zero_division)."""
    min_rating, max_rating = check_rating_range(options["min_rating"], options["max_rating"])
    return _values_function(
        check_aspects(options["aspects"]), min_rating, max_rating, check_zero_division(options["zero_division"])
    )


def aspect_statistics(
    predictions: Any,
    references: Any,
    *,
    aspects: Sequence[str] = DEFAULT_ASPECTS,
    min_rating: int = 1,
    max_rating: int = 5,
    zero_division: float = 1.0,
) -> tuple[np.ndarray, Callable[[np.ndarray], dict[str, np.ndarray]]]:
    """Per-review statistics of `aspect_sentiment_score` and the function from their sums
    to its values (the input of `opinion_metrics.resampling`; docs/definitions.md section 11).

    Returns:
        `(statistics, values)`: `statistics` is an (examples x 4A) float matrix whose columns
        are, per aspect in order, the TP, FP and FN indicators of presence and the squared
        rating error where both sides are non-zero (blocks of A columns each); `values` maps
        column sums of shape (..., 4A) to every key `aspect_sentiment_score` returns.

    Example:
        >>> statistics, values = aspect_statistics([[0, 4], [3, 0]], [[0, 5], [3, 2]], aspects=["food", "hotel"])
        >>> statistics[:, [1, 3, 5, 7]].tolist()  # hotel: TP, FP, FN, squared error
        [[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
        >>> float(values(statistics.sum(axis=0))["score"])
        0.8125
    """
    aspects = check_aspects(aspects)
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    zero_division = check_zero_division(zero_division)
    predicted, gold = _checked_tables(predictions, references, aspects, min_rating, max_rating)
    statistics = _statistics(predicted, gold, aspects, min_rating, max_rating)
    return statistics, _values_function(aspects, min_rating, max_rating, zero_division)


def _statistics(
    predicted: np.ndarray, gold: np.ndarray, aspects: Sequence[str], min_rating: int, max_rating: int
) -> np.ndarray:
    statistics = np.empty((predicted.shape[0], 4 * len(aspects)))
    for start, outcomes in _outcome_blocks(predicted, gold, aspects, min_rating, max_rating):
        rows = outcomes.shape[1]
        statistics[start : start + rows] = outcomes.transpose(1, 0, 2).reshape(rows, -1)
    return statistics


def _sums(
    predicted: np.ndarray, gold: np.ndarray, aspects: Sequence[str], min_rating: int, max_rating: int
) -> np.ndarray:
    """The column sums of `_statistics`, without building it."""
    largest = max(1, (max_rating - min_rating) ** 2)
    blocks = _outcome_blocks(predicted, gold, aspects, min_rating, max_rating)
    return sum(_column_sums(outcomes, largest) for _, outcomes in blocks).reshape(-1)


def aspect_sentiment_score(
    predictions: Any,
    references: Any,
    *,
    aspects: Sequence[str] = DEFAULT_ASPECTS,
    min_rating: int = 1,
    max_rating: int = 5,
    zero_division: float = 1.0,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
) -> dict[str, float]:
    """Aspect presence F1 x rating R2, averaged over aspects (the competition's score).

    Args:
        predictions: (examples x aspects) integer ratings: 0 = aspect absent, else a rating
            in [min_rating, max_rating]. Nested lists or a numpy array.
        references: the gold ratings, same shape.
        aspects: aspect names, in column order (default: the six tourism aspects).
        min_rating, max_rating: the rating range (default 1..5).
        zero_division: F1 of an aspect absent from both sides (default 1.0, the official
            scorer's convention).
        confidence_level: e.g. 0.95 for bootstrap percentile intervals over reviews
            (default None: none; docs/definitions.md section 11).
        n_resamples: bootstrap resamples (default 1000).
        random_state: None (fresh), an int seed (default 0) or a `numpy.random.Generator`.
        bootstrap: "multinomial" (default) or "poisson" (position-keyed Poisson(1) weights,
            as a `MetricState` gives; docs/definitions.md section 12).

    Returns:
        `score` in [0, 1] (1.0 for a perfect prediction) and, per aspect,
        `f1_<aspect>` in [0, 1], `r2_<aspect>` in [0, 1] and `score_<aspect>` = F1 x R2.
        An aspect with no example rated on both sides has R2 = 1.0. With a
        `confidence_level`, each key is followed by `<key>_ci_low` and `<key>_ci_high`.

    Example:
        >>> result = aspect_sentiment_score([[0, 4], [3, 0]], [[0, 5], [3, 2]], aspects=["food", "hotel"])
        >>> result["f1_hotel"], result["r2_hotel"], result["score"]
        (0.6666666666666666, 0.9375, 0.8125)
    """
    aspects = check_aspects(aspects)
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    zero_division = check_zero_division(zero_division)
    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)
    predicted, gold = _checked_tables(predictions, references, aspects, min_rating, max_rating)
    values = _values_function(aspects, min_rating, max_rating, zero_division)
    sums = _sums(predicted, gold, aspects, min_rating, max_rating)
    result = {key: float(value) for key, value in values(sums).items()}
    if intervals["confidence_level"] is None:
        return result
    statistics = _statistics(predicted, gold, aspects, min_rating, max_rating)
    return add_intervals(result, bootstrap_intervals(statistics, values, **intervals))
