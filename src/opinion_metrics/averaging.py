"""Option checks shared by the families, and P/R/F1 from counts with macro / micro averaging."""

from __future__ import annotations

import math
import numbers
from typing import Any, Union

import numpy as np

AVERAGES = ("macro", "micro")
TopK = Union[int, str, None]


def check_average(average: str) -> str:
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    return average


def check_zero_division(zero_division: Any) -> float:
    if isinstance(zero_division, bool) or not isinstance(zero_division, numbers.Real):
        raise ValueError(f"zero_division must be a number in [0, 1], got {zero_division!r}")
    value = float(zero_division)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"zero_division must be a number in [0, 1], got {zero_division!r}")
    return value


def check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_top_k(top_k: TopK) -> TopK:
    """`None` or "M" (all predictions), "O" (as many as gold keywords), or a positive int."""
    if top_k is None or top_k == "M":
        return None
    if top_k == "O":
        return "O"
    if isinstance(top_k, str):
        raise ValueError(f"top_k must be None, 'M', 'O' or a positive integer, got {top_k!r}")
    return check_positive_int(top_k, "top_k")


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


def prf(
    matched_predictions: np.ndarray,
    n_predictions: np.ndarray,
    matched_gold: np.ndarray,
    n_gold: np.ndarray,
    *,
    average: str,
    zero_division: float,
    names: tuple[str, str, str] = ("precision", "recall", "f1"),
    return_per_example: bool = False,
) -> dict[str, Any]:
    """P = matched predictions / predictions, R = matched gold / gold, F1, macro or micro.

    `macro` averages the per-example values; `micro` pools the counts first.
    """
    precision = safe_ratio(matched_predictions, n_predictions, zero_division)
    recall = safe_ratio(matched_gold, n_gold, zero_division)
    f1 = harmonic_mean(precision, recall)
    if average == "macro":
        totals = (precision.mean(), recall.mean(), f1.mean())
    else:
        pooled_p = safe_ratio(np.sum(matched_predictions), np.sum(n_predictions), zero_division)
        pooled_r = safe_ratio(np.sum(matched_gold), np.sum(n_gold), zero_division)
        totals = (pooled_p, pooled_r, harmonic_mean(pooled_p, pooled_r))
    result: dict[str, Any] = {name: float(value) for name, value in zip(names, totals)}
    if return_per_example:
        result["per_example"] = {name: values.tolist() for name, values in zip(names, (precision, recall, f1))}
    return result


def mean_or(values: list[float], default: float) -> float:
    """Mean of `values`, or `default` when there are none."""
    return math.fsum(values) / len(values) if values else default
