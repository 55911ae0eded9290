"""The aspect rating helper: classification logits or regression outputs to ratings, scored
by `aspect_sentiment_score`."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.validation import check_aspects, check_rating_range, check_zero_division
from ..families.aspect_sentiment_score import DEFAULT_ASPECTS
from .batched import FamilyScore, StateMetrics
from .inputs import Evaluated, _numeric, as_numpy

ASPECT_OUTPUTS = ("logits", "regression")


def ratings_from_logits(logits: Any, classes: int | None = None) -> np.ndarray:
    """Ratings from classification logits of shape (examples, aspects, classes): the argmax
    class per aspect, class 0 meaning absent and class r the rating r. With `classes`,
    logits of shape (examples, aspects * classes) are read as `logits.reshape(n, -1, classes)`
    (aspect-major: columns 0..classes-1 are the first aspect's)."""
    array = np.asarray(as_numpy(logits))
    if classes is not None and array.ndim == 2:
        if array.shape[1] % classes:
            raise ValueError(
                f"logits have {array.shape[1]} columns, not a multiple of classes={classes}: "
                "expected (examples, aspects * classes)"
            )
        array = array.reshape(array.shape[0], -1, classes)
    array = _numeric(array, "logits", "(examples, aspects, classes)", 3)
    if classes is not None and array.shape[2] != classes:
        raise ValueError(f"logits have {array.shape[2]} classes per aspect but classes={classes}")
    return array.argmax(axis=-1)


def ratings_from_regression(outputs: Any, *, min_rating: int = 1, max_rating: int = 5) -> np.ndarray:
    """Ratings from regression outputs of shape (examples, aspects): rounded to the nearest
    integer, clipped to [0, max_rating]; a value that rounds into (0, min_rating) becomes
    min_rating (present, lowest rating)."""
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    outputs = _numeric(outputs, "regression outputs", "(examples, aspects)", 2)
    ratings = np.clip(np.rint(outputs), 0, max_rating).astype(np.int64)
    ratings[(ratings > 0) & (ratings < min_rating)] = min_rating
    return ratings


def _check_classes(classes: Any, outputs: str) -> int | None:
    if classes is None:
        return None
    if outputs != "logits":
        raise ValueError('classes reshapes classification logits: give it with outputs="logits" only')
    if isinstance(classes, bool) or not isinstance(classes, numbers.Integral) or classes < 2:
        raise ValueError(f"classes must be an integer >= 2 (0 = absent, 1.. = ratings), got {classes!r}")
    return int(classes)


def _flat_logits_hint(shape: tuple[int, ...], n_aspects: int, max_rating: int) -> str:
    """What to do with 2-d logits: the classes per aspect they would give, and how to say so."""
    expected = "(examples, aspects, classes), or (examples, aspects * classes) with classes= given"
    if shape[1] % n_aspects:
        return (
            f"logits have shape {shape}, while outputs='logits' reads {expected}; {shape[1]} columns are not a "
            f"multiple of the {n_aspects} aspects: a head for them gives {n_aspects} * {max_rating + 1} = "
            f"{n_aspects * (max_rating + 1)} logits (0 = absent, 1-{max_rating})"
        )
    return (
        f"logits have shape {shape}, while outputs='logits' reads {expected}: pass "
        f"classes={shape[1] // n_aspects} to aspect_compute_metrics to read them as logits.reshape(n, "
        f"{n_aspects}, {shape[1] // n_aspects}) (aspect-major, as AutoModelForSequenceClassification("
        f"num_labels={shape[1]}) gives with the loss in docs/trainer.md), or reshape them in the model or in "
        "preprocess_logits_for_metrics"
    )


def aspect_compute_metrics(
    *,
    outputs: str = "logits",
    aspects: Sequence[str] = DEFAULT_ASPECTS,
    min_rating: int = 1,
    max_rating: int = 5,
    zero_division: float = 1.0,
    classes: int | None = None,
    **options: Any,
) -> StateMetrics:
    """A Trainer `compute_metrics` for aspect rating models.

    Args:
        outputs: "logits" (shape (n, aspects, classes), argmax; class 0 = absent) or
            "regression" (shape (n, aspects), rounded and clipped).
        aspects, min_rating, max_rating, zero_division: as in `aspect_sentiment_score`.
        classes: with outputs="logits", logits of shape (n, aspects * classes), as a stock
            `AutoModelForSequenceClassification(num_labels=aspects * classes)` gives, are read
            as `logits.reshape(n, aspects, classes)` (aspect-major).
        **options: the interval options of `aspect_sentiment_score` (confidence_level,
            n_resamples, random_state, bootstrap), checked now.

    Returns:
        A function of Trainer's `EvalPrediction` (and `compute_result`, for
        `batch_eval_metrics=True`: see `StateMetrics`) returning the flat dict Trainer logs:
        `score`, `f1_<aspect>`, `r2_<aspect>`, `score_<aspect>` (and their intervals).

    Example:
        >>> compute_metrics = aspect_compute_metrics(outputs="regression", aspects=["food", "hotel"])
        >>> compute_metrics((np.array([[0.2, 3.6], [4.9, 0.4]]), np.array([[0, 4], [5, 0]])))["score"]
        1.0
    """
    if outputs not in ASPECT_OUTPUTS:
        raise ValueError(f"outputs must be one of {ASPECT_OUTPUTS}, got {outputs!r}")
    aspects = check_aspects(aspects)
    min_rating, max_rating = check_rating_range(min_rating, max_rating)
    zero_division = check_zero_division(zero_division)
    classes = _check_classes(classes, outputs)
    family_options = dict(aspects=aspects, min_rating=min_rating, max_rating=max_rating, zero_division=zero_division)

    def convert(evaluated: Evaluated) -> dict[str, Any]:
        predictions = evaluated.predictions
        if outputs == "regression":
            ratings = ratings_from_regression(predictions, min_rating=min_rating, max_rating=max_rating)
        else:
            shape = np.shape(predictions)
            if classes is None and len(shape) == 2:
                raise ValueError(_flat_logits_hint(shape, len(aspects), max_rating))
            ratings = ratings_from_logits(predictions, classes)
        return {"predictions": ratings, "references": evaluated.labels}

    return StateMetrics(convert, [FamilyScore("aspect_sentiment_score", {**family_options, **options})])
