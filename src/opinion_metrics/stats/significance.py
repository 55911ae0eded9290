"""Significance of a paired difference: the examples scored differently (`Pairs`), the
permutation or bootstrap p-value and interval of each value's difference (`significance`),
the smallest p-value the pairs allow, and Holm's correction over several systems.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .resampling import EXACT_LIMIT, Values, all_swaps, exact_permutation, permutation_p_values


@dataclass(frozen=True)
class Swaps:
    """What the exact permutation test of two systems needs: their column sums, the
    differences (b - a) of the examples whose statistics are unequal, the family's values."""

    sums_a: np.ndarray
    sums_b: np.ndarray
    differences: np.ndarray
    values: Values

    def p_values(self) -> dict[str, float]:
        """The exact two-sided permutation p-value of each key: every one of the 2^m swaps."""
        return permutation_p_values(
            self.values, self.sums_a, self.sums_b, all_swaps(self.differences), n_resamples=0, exact=True
        )


@dataclass(frozen=True)
class Pairs:
    """The examples behind a paired comparison: `given` to each system, `counted` by the metric
    (`presence` leaves out an example without a gold keyword of its kind) and, of those, how many
    the two systems score `differing`ly: their per-example statistics (the resampling's input)
    differ in a way that moves a value when that pair alone is swapped. A system that only
    reorders another's keywords scores every example alike for keyword_prf; two that differ only
    in how many predictions a review mentions differ for micro averages, not for macro ones.
    Only differing pairs can move the permutation test. `swappable`: the pairs whose statistics
    differ at all (the permutation test swaps those; None: not known), with their `swaps` where
    few enough to enumerate (at most `EXACT_LIMIT`)."""

    given: int
    counted: int
    differing: int
    swappable: int | None = field(default=None, compare=False)
    swaps: Swaps | None = field(default=None, compare=False, repr=False)

    @property
    def left_out(self) -> int:
        return self.given - self.counted


def count_pairs(matrix_a: np.ndarray, matrix_b: np.ndarray, values: Values) -> Pairs:
    """`Pairs` of two systems' per-example statistics (row i of each: the same example; an example
    left out of the values has a row of zeros in both), `values` mapping column sums to the values:
    a pair differs when swapping it alone changes some value (vectorized over the differing rows)."""
    counted = matrix_a.any(axis=1) | matrix_b.any(axis=1)
    rows = np.flatnonzero((matrix_a != matrix_b).any(axis=1) & counted)
    sums = matrix_a.sum(axis=0)
    point, swapped = values(sums), values(sums + (matrix_b[rows] - matrix_a[rows]))
    moved = np.zeros(len(rows), dtype=bool)
    for key, value in point.items():
        before, after = np.broadcast_to(np.asarray(value, dtype=np.float64), len(rows)), np.asarray(swapped[key])
        moved |= ~((after == before) | (np.isnan(after) & np.isnan(before)))
    swaps = None
    if len(rows) <= EXACT_LIMIT:
        swaps = Swaps(sums, matrix_b.sum(axis=0), matrix_b[rows] - matrix_a[rows], values)
    return Pairs(int(matrix_a.shape[0]), int(counted.sum()), int(moved.sum()), len(rows), swaps)


# Fewer pairs than this: the report warns that neither the test nor the interval is reliable.
MIN_PAIRS = 30


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m p-values
    is multiplied by m - i + 1 (i from 1), made non-decreasing in that order and capped at 1.
    A hypothesis is rejected at level alpha exactly when its adjusted p-value is below alpha.

    Example:
        >>> holm([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * float(p_values[index])))
        adjusted[index] = running
    return adjusted


def smallest_p_value(method: str, n_resamples: int, differing: int, exact: bool = False) -> float:
    """The smallest p-value the test can give. Permutation: of the 2^m swaps of m differing
    examples, at least two (none swapped, all swapped) are as extreme as the observed difference,
    so p >= 2 / 2^m (`exact`: every swap enumerated), and approximate randomization adds
    1 / (1 + n_resamples) (a Monte Carlo floor: its p-value is never shown below this one);
    bootstrap: 0 when every resample keeps the sign (shown as below 1 / n_resamples)."""
    if differing == 0:
        return 1.0
    if method == "bootstrap":
        return 0.0
    floor = 2.0 ** (1 - differing)
    return floor if exact else max(floor, 1 / (1 + n_resamples))


def exact_test(method: str, n_resamples: int, pairs: Pairs) -> bool:
    """Whether the report's permutation p-values are exact: every swap of the pairs whose
    statistics differ enumerated (`resampling.exact_permutation`: 2^m <= n_resamples)."""
    return (
        method == "permutation"
        and pairs.swaps is not None
        and pairs.swappable is not None
        and exact_permutation(pairs.swappable, n_resamples)
    )


@dataclass(frozen=True)
class Difference:
    """One metric of one system against the baseline, as the significance report shows it.
    `holm_p_value` is adjusted over the systems compared with the same baseline on this metric
    (equal to `p_value` with one system); `pairs` counts the examples that count (`left_out`:
    those `presence` leaves out), `differing` those the two systems score differently."""

    baseline_value: float
    value: float
    difference: float
    low: float
    high: float
    p_value: float
    holm_p_value: float
    pairs: int
    differing: int
    smallest_p_value: float
    left_out: int = 0
    exact: bool = False  # the permutation p-value from every swap (else from random ones)

    def significant(self, alpha: float) -> bool:
        return self.holm_p_value < alpha

    def disagreement(self, alpha: float) -> str | None:
        """Why the interval tells another story than the significance marker, or None: "holm" when the
        interval excludes 0 and the p-value is below `alpha` but the Holm-adjusted one is not (the
        interval is not adjusted); "test" when the interval and the p-value themselves disagree."""
        excludes_zero = self.low > 0 or self.high < 0
        if excludes_zero == self.significant(alpha):
            return None
        return "holm" if excludes_zero and self.p_value < alpha else "test"


def significance(
    comparisons: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    method: str,
    n_resamples: int,
    pairs: Mapping[str, Pairs],
) -> dict[str, dict[str, Difference]]:
    """{system: {key: Difference}} from each system's `compare_systems` result against the same
    baseline and its `Pairs`, with Holm's correction over the systems per key. A permutation
    p-value is the exact test's where the pairs allow it (`exact_test`: also for states, whose
    own swaps are random), else never below its Monte Carlo floor (`smallest_p_value`)."""
    p_values: dict[tuple[str, str], float] = {}
    exact = {system: exact_test(method, n_resamples, pairs[system]) for system in comparisons}
    floors = {
        system: smallest_p_value(method, n_resamples, pairs[system].differing, exact[system]) for system in comparisons
    }
    for system, result in comparisons.items():
        exact_p = pairs[system].swaps.p_values() if exact[system] else {}  # type: ignore[union-attr]
        for key, row in result.items():
            p_values[system, key] = max(exact_p.get(key, row["p_value"]), floors[system])
    adjusted: dict[tuple[str, str], float] = {}
    keys = list(dict.fromkeys(key for result in comparisons.values() for key in result))
    for key in keys:
        systems = [system for system, result in comparisons.items() if key in result]
        for system, p in zip(systems, holm([p_values[system, key] for system in systems])):
            adjusted[system, key] = p
    return {
        system: {
            key: Difference(
                row["a"],
                row["b"],
                row["difference"],
                row["difference_ci_low"],
                row["difference_ci_high"],
                p_values[system, key],
                adjusted[system, key],
                pairs[system].counted,
                pairs[system].differing,
                floors[system],
                pairs[system].left_out,
                exact[system],
            )
            for key, row in result.items()
        }
        for system, result in comparisons.items()
    }
