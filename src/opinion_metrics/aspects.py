"""Family 5: aspect presence F1 x rating R2 (SPEC section 7; Quy Nhon AI Hackathon 2022).

Per aspect j: F1 of presence (rating != 0) and R2 of the ratings on the examples where
prediction and reference are both present, with the fixed rating range as denominator:
`R2_j = 1 - RSS_j / (n_j * (max_rating - min_rating) ** 2)`. The score averages F1_j * R2_j.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .averaging import check_zero_division
from .preparation import describe

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


def check_aspects(aspects: Any) -> tuple[str, ...]:
    if isinstance(aspects, str) or not isinstance(aspects, Sequence) or not aspects:
        raise ValueError(f"aspects must be a non-empty list of names, got {describe(aspects)}")
    names = tuple(aspects)
    if not all(isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
        raise ValueError(f"aspects must be distinct non-empty strings, got {names!r}")
    return names


def check_rating_range(min_rating: Any, max_rating: Any) -> tuple[int, int]:
    for name, value in (("min_rating", min_rating), ("max_rating", max_rating)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {describe(value)}")
    if not 1 <= min_rating < max_rating:
        raise ValueError(f"need 1 <= min_rating < max_rating (0 means absent), got {min_rating} and {max_rating}")
    return int(min_rating), int(max_rating)


def _first_bad_value(rows: Any, side: str, n_aspects: int | None, aspects: Sequence[str] | None) -> str:
    """Describe the first entry that is not an integer-valued number (slow path, for messages)."""
    for index, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not isinstance(row, (Sequence, np.ndarray)):
            return f"{side}: example {index} must be a list of {n_aspects or ''} ratings, got {describe(row)}".replace(
                "  ", " "
            )
        if n_aspects is not None and len(row) != n_aspects:
            return f"{side}: example {index} has {len(row)} ratings, expected {n_aspects} (one per aspect)"
        for position, value in enumerate(row):
            name = aspects[position] if aspects and position < len(aspects) else f"aspect {position}"
            integral = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if integral and (not math.isfinite(value) or not float(value).is_integer() or abs(value) > 2**53):
                integral = False
            if not integral:
                return f"{side}: example {index}, aspect {name!r}: rating must be an integer, got {describe(value)}"
    return f"{side}: ratings must form an (examples x aspects) table of integers, got {describe(rows)}"


def ratings_array(
    rows: Any, side: str = "ratings", aspects: Sequence[str] | None = None, n_aspects: int | None = None
) -> np.ndarray:
    """Validate an (examples x aspects) table of integer-valued ratings; return it as an
    integer or float array (`check_ratings` checks the range, then it can be cast).

    Accepts nested lists or arrays; a float equal to an integer (4.0) is accepted. NaN,
    None, strings, boolean arrays, non-integers and rows of the wrong length raise
    `ValueError` naming the example and the aspect. The range is checked by `check_ratings`.
    """
    if n_aspects is None and aspects is not None:
        n_aspects = len(aspects)
    if rows is None or isinstance(rows, (str, bytes, dict)) or not hasattr(rows, "__len__"):
        raise ValueError(f"{side} must be a table with one row of ratings per example, got {describe(rows)}")
    try:
        array = np.asarray(rows)
    except (ValueError, TypeError):  # ragged
        raise ValueError(_first_bad_value(rows, side, n_aspects, aspects)) from None
    if array.ndim == 1 and array.size == 0:
        raise ValueError(f"{side}: no examples (need at least one)")
    if array.dtype.kind not in "iuf" or array.ndim != 2:
        raise ValueError(_first_bad_value(rows, side, n_aspects, aspects))
    if array.shape[0] == 0:
        raise ValueError(f"{side}: no examples (need at least one)")
    if n_aspects is not None and array.shape[1] != n_aspects:
        raise ValueError(
            f"{side}: example 0 has {array.shape[1]} ratings, expected {n_aspects} "
            f"(one per aspect: {list(aspects or [])})"
        )
    if array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (array != np.round(array))
        if bad.any():
            index, position = map(int, np.argwhere(bad)[0])
            name = aspects[position] if aspects else f"aspect {position}"
            raise ValueError(
                f"{side}: example {index}, aspect {name!r}: rating must be an integer, "
                f"got {float(array[index, position])!r}"
            )
    return array


def check_ratings(array: np.ndarray, side: str, aspects: Sequence[str], min_rating: int, max_rating: int) -> None:
    """Every rating must be 0 (absent) or within [min_rating, max_rating]."""
    bad = (array != 0) & ((array < min_rating) | (array > max_rating))
    if bad.any():
        index, position = map(int, np.argwhere(bad)[0])
        value = array[index, position]
        raise ValueError(
            f"{side}: example {index}, aspect {aspects[position]!r}: rating {value:g} is "
            f"outside {{0}} ∪ [{min_rating}, {max_rating}] (0 means the aspect is absent)"
        )


def aspect_sentiment_score(
    predictions: Any,
    references: Any,
    *,
    aspects: Sequence[str] = DEFAULT_ASPECTS,
    min_rating: int = 1,
    max_rating: int = 5,
    zero_division: float = 1.0,
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

    Returns:
        `score` in [0, 1] (1.0 for a perfect prediction) and, per aspect,
        `f1_<aspect>` in [0, 1], `r2_<aspect>` in [0, 1] and `score_<aspect>` = F1 x R2.
        An aspect with no example rated on both sides has R2 = 1.0.

    Example:
        >>> result = aspect_sentiment_score([[0, 4], [3, 0]], [[0, 5], [3, 2]], aspects=["food", "hotel"])
        >>> result["f1_hotel"], result["r2_hotel"], result["score"]
        (0.6666666666666666, 0.9375, 0.8125)
    """
    aspects = check_aspects(aspects)
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    zero_division = check_zero_division(zero_division)
    predicted = ratings_array(predictions, "predictions", aspects)
    gold = ratings_array(references, "references", aspects)
    if predicted.shape != gold.shape:
        raise ValueError(
            f"predictions has {predicted.shape[0]} examples but references has {gold.shape[0]}; "
            "they must have one row per example"
        )
    check_ratings(predicted, "predictions", aspects, min_rating, max_rating)
    check_ratings(gold, "references", aspects, min_rating, max_rating)
    predicted, gold = predicted.astype(np.int64), gold.astype(np.int64)

    predicted_present, gold_present = predicted != 0, gold != 0
    both = predicted_present & gold_present
    true_positives = both.sum(axis=0)
    errors = (predicted_present != gold_present).sum(axis=0)  # FP + FN
    denominator = 2 * true_positives + errors
    f1 = np.full(len(aspects), zero_division)
    np.divide(2 * true_positives, denominator, out=f1, where=denominator > 0)
    rated = both.sum(axis=0)
    squared_errors = np.where(both, (predicted - gold) ** 2, 0).sum(axis=0)
    r2 = np.ones(len(aspects))
    np.subtract(1.0, squared_errors / np.maximum(rated * (max_rating - min_rating) ** 2, 1), out=r2, where=rated > 0)
    per_aspect = f1 * r2
    result = {"score": float(per_aspect.mean())}
    for name, f1_j, r2_j, score_j in zip(aspects, f1, r2, per_aspect):
        result[f"f1_{name}"] = float(f1_j)
        result[f"r2_{name}"] = float(r2_j)
        result[f"score_{name}"] = float(score_j)
    return result
