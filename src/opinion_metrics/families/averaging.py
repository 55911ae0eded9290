"""P/R/F1 from counts with macro / micro averaging, means over the examples that have a value,
and the one step every family ends with: its values (and intervals) from per-example statistics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..stats.resampling import Values, add_intervals, bootstrap_intervals


def safe_ratio(numerator: np.ndarray, denominator: np.ndarray, zero_division: float) -> np.ndarray:
    """Element-wise `numerator / denominator`, `zero_division` where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.full(np.broadcast(numerator, denominator).shape, zero_division, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def harmonic_mean(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """F1 = 2PR / (P + R), and 0 where P + R = 0."""
    return safe_ratio(2 * precision * recall, precision + recall, 0.0)


# Columns of the per-example statistics behind P/R/F1 (docs/definitions.md section 11): macro values are
# column sums of the per-example values over the number of examples; micro values are
# ratios of the pooled counts. An example left out (presence) has a row of zeros.
PRF_COLUMNS = ("examples", "precision", "recall", "f1", "matched", "predicted", "matched_gold", "gold")


def prf_statistics(
    matched_predictions: np.ndarray,
    n_predictions: np.ndarray,
    matched_gold: np.ndarray,
    n_gold: np.ndarray,
    *,
    zero_division: float,
    included: np.ndarray | None = None,
) -> np.ndarray:
    """(examples x 8) statistics of P = matched predictions / predictions and R = matched
    gold / gold, in the order of `PRF_COLUMNS`; rows of excluded examples are zero."""
    precision = safe_ratio(matched_predictions, n_predictions, zero_division)
    recall = safe_ratio(matched_gold, n_gold, zero_division)
    columns = (1.0, precision, recall, harmonic_mean(precision, recall))
    columns += (matched_predictions, n_predictions, matched_gold, n_gold)
    # Column-major, so that column sums are numpy's pairwise sums, as `mean` takes them.
    statistics = np.empty((len(precision), len(columns)), dtype=np.float64, order="F")
    for index, column in enumerate(columns):
        statistics[:, index] = column
    if included is not None:
        statistics[~np.asarray(included, dtype=bool)] = 0.0
    return statistics


def prf_sums(
    matched_predictions: np.ndarray,
    n_predictions: np.ndarray,
    matched_gold: np.ndarray,
    n_gold: np.ndarray,
    *,
    zero_division: float,
    average: str = "macro",
) -> np.ndarray:
    """The column sums of `prf_statistics` over every example, without building the matrix
    (each column summed as the matrix's own column would be); under `average="micro"` the
    per-example P, R and F1 columns, which micro values never read, are NaN."""
    counts = [np.asarray(column, dtype=np.float64).sum() for column in (matched_predictions, n_predictions)]
    counts += [np.asarray(column, dtype=np.float64).sum() for column in (matched_gold, n_gold)]
    if average == "micro":
        return np.array([len(n_predictions), np.nan, np.nan, np.nan, *counts])
    precision = safe_ratio(matched_predictions, n_predictions, zero_division)
    recall = safe_ratio(matched_gold, n_gold, zero_division)
    ratios = [column.sum() for column in (precision, recall, harmonic_mean(precision, recall))]
    return np.array([len(precision), *ratios, *counts])


def prf_values(names: tuple[str, str, str], average: str, zero_division: float) -> Values:
    """The function from column sums of `prf_statistics` (shape (..., 8)) to P, R and F1:
    macro (mean of per-example values) or micro (pooled counts)."""

    def values(sums: np.ndarray) -> dict[str, np.ndarray]:
        sums = np.asarray(sums, dtype=np.float64)
        if average == "macro":
            examples = sums[..., 0]
            precision, recall, f1 = (safe_ratio(sums[..., i], examples, zero_division) for i in (1, 2, 3))
        else:
            precision = safe_ratio(sums[..., 4], sums[..., 5], zero_division)
            recall = safe_ratio(sums[..., 6], sums[..., 7], zero_division)
            f1 = np.where(sums[..., 0] > 0, harmonic_mean(precision, recall), zero_division)
        return dict(zip(names, (precision, recall, f1)))

    return values


def per_example_columns(
    statistics: np.ndarray, columns: dict[str, int], included: np.ndarray | None = None
) -> dict[str, list[float | None]]:
    """Per-example lists of the given statistics columns (None where an example is left out)."""
    per_example = {name: statistics[:, column].tolist() for name, column in columns.items()}
    if included is not None:
        left_out = np.flatnonzero(~np.asarray(included, dtype=bool)).tolist()
        for values in per_example.values():
            for index in left_out:
                values[index] = None
    return per_example


def optional_mean_statistics(columns: Mapping[str, Sequence[float | None]]) -> np.ndarray:
    """(examples x 2 per key) statistics of means over the examples that have a value: for
    each key in order, whether the example has one, and the value (0 when it has none)."""
    blocks = [
        np.array([[value is not None, value or 0.0] for value in values], dtype=np.float64).reshape(-1, 2)
        for values in columns.values()
    ]
    return np.asfortranarray(np.hstack(blocks))


def optional_mean_values(names: Sequence[str], default: float) -> Values:
    """Column sums of `optional_mean_statistics` -> each key's mean, `default` where no
    example has a value (NaN: the key is absent from the result)."""

    def values(sums: np.ndarray) -> dict[str, np.ndarray]:
        return {name: safe_ratio(sums[..., 2 * i + 1], sums[..., 2 * i], default) for i, name in enumerate(names)}

    return values


def summarize(
    statistics: np.ndarray,
    values: Values,
    *,
    confidence_level: float | None = None,
    n_resamples: int = 1000,
    random_state: Any = 0,
    bootstrap: str = "multinomial",
) -> dict[str, float]:
    """Each defined (not NaN) value from the column sums of `statistics`, as plain floats, with
    `<key>_ci_low` / `<key>_ci_high` bootstrap intervals when `confidence_level` is given."""

    point = values(statistics.sum(axis=0))
    result = {key: float(value) for key, value in point.items() if np.isfinite(value)}  # NaN: undefined, absent
    if confidence_level is None:
        return result
    intervals = bootstrap_intervals(
        statistics,
        values,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        random_state=random_state,
        bootstrap=bootstrap,
    )
    return add_intervals(result, intervals)


def mean_or(values: list[float], default: float) -> float:
    """Mean of `values`, or `default` when there are none."""
    return math.fsum(values) / len(values) if values else default
