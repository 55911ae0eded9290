"""Confidence intervals and paired significance tests from per-example statistics (docs/definitions.md section 11).

Every corpus value of every family is a function of the column sums of a per-example
statistics matrix `S` (examples x statistics): macro precision is `sum(precision) / sum(1)`,
micro precision `sum(matched) / sum(predicted)`, and so on. A family supplies `S` and a
vectorized `values(sums) -> {key: array}` that maps sums of shape `(..., m)` to each key's
values of shape `(...)` (zero denominators give `zero_division`, never NaN).

A bootstrap resample is a count vector `w` over examples (how often each was drawn), so its
sums are `w @ S`; a permutation resample swaps the two systems on a random subset `x` of the
examples, so its sums are `S_a.sum(0) + x @ (S_b - S_a)`. Resamples are drawn and summed in
blocks of at most `BLOCK_ELEMENTS` (resample x example) cells: memory stays bounded and no
Python loop runs over examples. Examples with equal rows are interchangeable: when there are
few distinct rows (P/R/F1 of a few keywords, family 5's outcomes), a bootstrap resample draws
how many examples of each group it takes (multinomial) and a permutation how many of each it
swaps (binomial): the same distribution of sums at the cost of the groups, not the examples.

The Poisson bootstrap (`bootstrap="poisson"`, docs/definitions.md section 12) weighs each example by
counter-based Poisson(1) draws keyed by the example (`opinion_metrics.poisson`), so its
resampled sums add across batches; `resampled_intervals` and `paired_comparison` turn
resampled sums of either bootstrap into intervals and p-values by the same rules.

Wiring a family (see `aspects.aspect_sentiment_score`)::

    intervals = check_interval_options(confidence_level, n_resamples, random_state, bootstrap)  # up front
    ...
    if intervals["confidence_level"] is not None:
        result = add_intervals(result, bootstrap_intervals(statistics, values, **intervals))
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..core.validation import check_bootstrap, check_confidence_level, check_n_resamples, check_random_state
from .poisson import resample_sums

Values = Callable[[np.ndarray], Mapping[str, Any]]
RandomState = int | np.random.Generator | None
METHODS = ("permutation", "bootstrap")
# Cells of the (resamples x examples) count or swap matrix held at once (32 MiB as float64).
BLOCK_ELEMENTS = 2**22
# Resample groups of equal rows together when there are at least this many examples per group.
GROUPING_RATIO = 8
GROUPING_SEED = 20221
BootstrapBlock = tuple[np.ndarray, np.ndarray | None]


def check_statistics(statistics: Any, name: str = "statistics") -> np.ndarray:
    """An (examples x statistics) finite float matrix with at least one example."""
    matrix = np.asarray(statistics, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be an (examples x statistics) matrix, got shape {matrix.shape}")
    if matrix.shape[0] == 0:
        raise ValueError(f"{name}: no examples (need at least one)")
    if not np.isfinite(matrix).all():
        index = int(np.argwhere(~np.isfinite(matrix))[0][0])
        raise ValueError(f"{name}: example {index} has a non-finite statistic")
    return matrix


def _block_size(width: int, n_resamples: int) -> int:
    return max(1, min(n_resamples, BLOCK_ELEMENTS // max(width, 1)))


def _groups(matrix: np.ndarray, max_groups: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(first example, size) of each group of equal rows, when there are at most `max_groups`.

    Equal rows are found by a random projection and then checked exactly, chunk by chunk.
    """
    if max_groups < 1:
        return None
    weights = np.random.default_rng(GROUPING_SEED).uniform(0.5, 1.5, matrix.shape[1])
    _, first, inverse, sizes = np.unique(matrix @ weights, return_index=True, return_inverse=True, return_counts=True)
    if len(first) > max_groups:
        return None
    rows = matrix[first]
    chunk = max(1, BLOCK_ELEMENTS // matrix.shape[1])
    for start in range(0, matrix.shape[0], chunk):
        if not np.array_equal(matrix[start : start + chunk], rows[inverse[start : start + chunk]]):
            return None
    return first, sizes


def _bootstrap_draws(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator) -> Iterator[BootstrapBlock]:
    """Per block of resamples, (counts, examples): `counts[r, i]` is how often resample r
    draws example `examples[i]` (None: every example, in order), so its sums are
    `counts @ matrix[examples]`.

    With few distinct rows, the examples of each group of equal rows are drawn together
    (a multinomial over groups, credited to each group's first example): the same
    distribution of sums at a fraction of the cost.
    """
    n_examples = matrix.shape[0]
    grouped = _groups(matrix, n_examples // GROUPING_RATIO)
    if grouped is not None:
        first, sizes = grouped
        probabilities = sizes / n_examples
        block = _block_size(len(first), n_resamples)
        for start in range(0, n_resamples, block):
            rows = min(block, n_resamples - start)
            yield rng.multinomial(n_examples, probabilities, size=rows).astype(np.float64), first
        return
    index_type = np.int32 if n_examples < 2**31 else np.int64
    block = _block_size(n_examples, n_resamples)
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        indices = rng.integers(0, n_examples, size=(rows, n_examples), dtype=index_type)
        counts = np.empty((rows, n_examples))
        for row, drawn in enumerate(indices):
            counts[row] = np.bincount(drawn, minlength=n_examples)
        yield counts, None


def bootstrap_counts(statistics: Any, n_resamples: int = 1000, random_state: RandomState = 0) -> Iterator[np.ndarray]:
    """The engine's bootstrap resamples as (block x examples) count matrices: entry [r, i]
    is how often resample r draws example i (each row sums to the number of examples).

    `bootstrap_intervals` draws exactly these from the same `random_state`, so a plain loop
    over them reproduces its resamples. Examples with equal statistics are interchangeable:
    when they are few distinct ones, each group's joint count is credited to its first example.
    """
    rng = check_random_state(random_state)
    matrix = check_statistics(statistics)
    for counts, examples in _bootstrap_draws(matrix, check_n_resamples(n_resamples), rng):
        if examples is None:
            yield counts.astype(np.int64)
        else:
            full = np.zeros((counts.shape[0], matrix.shape[0]), dtype=np.int64)
            full[:, examples] = counts
            yield full


def _bootstrap_sums(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Per block, the (block x statistics) column sums of each bootstrap resample."""
    rows = matrix
    for counts, examples in _bootstrap_draws(matrix, n_resamples, rng):
        if examples is not None and rows is matrix:
            rows = matrix[examples]
        yield counts @ rows


def _permutation_moves(differences: np.ndarray, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Per block, `x @ differences` for random 0/1 swap vectors `x` (probability 1/2 each)."""
    n_examples = differences.shape[0]
    grouped = _groups(differences, n_examples // GROUPING_RATIO)
    if grouped is not None:  # the number swapped in a group of k equal rows is Binomial(k, 1/2)
        first, sizes = grouped
        rows = differences[first]
        block = _block_size(len(first), n_resamples)
        for start in range(0, n_resamples, block):
            swapped = rng.binomial(sizes, 0.5, size=(min(block, n_resamples - start), len(first)))
            yield swapped.astype(np.float64) @ rows
        return
    block = _block_size(n_examples, n_resamples)
    for start in range(0, n_resamples, block):
        bits = rng.integers(0, 256, size=(min(block, n_resamples - start), -(-n_examples // 8)), dtype=np.uint8)
        yield np.unpackbits(bits, axis=1, count=n_examples).astype(np.float64) @ differences


# A permutation test enumerates every swap when there are at most this many examples to swap
# (and 2^m <= n_resamples): 2^20 swaps cost about as much as a million random ones.
EXACT_LIMIT = 20


def exact_permutation(swappable: int, n_resamples: int) -> bool:
    """Whether a permutation test over `swappable` examples (those the two systems score with
    unequal statistics) enumerates its 2^m swaps: when 2^m <= n_resamples (and m <= `EXACT_LIMIT`)."""
    return swappable <= EXACT_LIMIT and 2**swappable <= n_resamples


def all_swaps(differences: np.ndarray) -> Iterator[np.ndarray]:
    """Per block, `x @ differences` for every 0/1 swap vector `x` (2^m of them, m rows; the
    identity first): the exact permutation test's moves."""
    m = differences.shape[0]
    block = _block_size(max(m, 1), 2**m)
    for start in range(0, 2**m, block):
        codes = np.arange(start, min(2**m, start + block), dtype=np.int64)
        yield ((codes[:, None] >> np.arange(m)) & 1).astype(np.float64) @ differences


def _evaluate(values: Values, sums: np.ndarray) -> dict[str, np.ndarray]:
    leading = sums.shape[:-1]
    return {key: np.broadcast_to(np.asarray(value, dtype=np.float64), leading) for key, value in values(sums).items()}


def _defined(point: Mapping[str, np.ndarray]) -> list[str]:
    return [key for key, value in point.items() if np.isfinite(value)]


def _percentile_interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of the resamples where the value is defined (a resample that
    draws no example that counts, such as one without any review text for sas_from_text,
    has no value and is left out)."""
    defined = samples[np.isfinite(samples)]
    if not defined.size:
        return math.nan, math.nan
    low, high = np.quantile(defined, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def resampled_intervals(
    sums: np.ndarray, resampled: Iterable[np.ndarray], values: Values, level: float
) -> dict[str, tuple[float, float]]:
    """Percentile interval of every value defined on the column `sums`, from blocks of
    resampled column sums (multinomial or Poisson: the rule is the same)."""
    keys = _defined(_evaluate(values, sums))
    samples: dict[str, list[np.ndarray]] = {key: [] for key in keys}
    for block in resampled:
        evaluated = _evaluate(values, block)
        for key in keys:
            samples[key].append(evaluated[key])
    intervals = {key: _percentile_interval(np.concatenate(samples[key]), level) for key in keys}
    return {key: interval for key, interval in intervals.items() if math.isfinite(interval[0])}


def poisson_seed(random_state: RandomState) -> int:
    """The integer seed of the Poisson bootstrap: the int given, else drawn (fresh or from a Generator)."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state >= 0:
        return int(random_state)
    return int(check_random_state(random_state).integers(2**63))


def bootstrap_intervals(
    statistics: Any,
    values: Values,
    *,
    confidence_level: float,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    bootstrap: str = "multinomial",
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every defined value, resampling examples.

    Args:
        statistics: (examples x statistics) matrix whose column sums determine the values.
        values: vectorized `sums (..., m) -> {key: values (...)}`.
        confidence_level: e.g. 0.95; the interval is `[q((1 - level) / 2), q((1 + level) / 2)]`
            of the resampled values (numpy's default linear quantile).
        n_resamples: number of bootstrap resamples (default 1000).
        random_state: None (fresh), an int seed (default 0) or a `numpy.random.Generator`.
        bootstrap: "multinomial" (draw n examples with replacement) or "poisson" (example
            i weighs Poisson(1) draws keyed by its position i, as `MetricState` does; docs/definitions.md section 12).

    Returns:
        `{key: (low, high)}` for every key whose corpus value is finite.

    Example:
        >>> hits = np.array([[1.0], [0.0], [1.0], [1.0]])
        >>> bootstrap_intervals(hits, lambda s: {"mean": s[..., 0] / 4}, confidence_level=0.9)["mean"]
        (0.25, 1.0)
    """
    level = check_confidence_level(confidence_level)
    n_resamples = check_n_resamples(n_resamples)
    check_bootstrap(bootstrap)
    matrix = check_statistics(statistics)
    if bootstrap == "poisson":
        keys = np.arange(matrix.shape[0], dtype=np.uint64)
        weighted, _ = resample_sums(matrix, keys, poisson_seed(random_state), n_resamples, signs=False)
        return resampled_intervals(matrix.sum(axis=0), [weighted], values, level)
    rng = check_random_state(random_state)
    return resampled_intervals(matrix.sum(axis=0), _bootstrap_sums(matrix, n_resamples, rng), values, level)


def add_intervals(result: Mapping[str, Any], intervals: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """A copy of `result` with `<key>_ci_low` and `<key>_ci_high` right after each key that
    has an interval (flat floats, so that `Trainer` logs them)."""
    combined: dict[str, Any] = {}
    for key, value in result.items():
        combined[key] = value
        if key in intervals:
            combined[f"{key}_ci_low"], combined[f"{key}_ci_high"] = map(float, intervals[key])
    return combined


def compare_systems_statistics(
    statistics_a: Any,
    statistics_b: Any,
    values: Values,
    *,
    method: str = "permutation",
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
) -> dict[str, dict[str, float]]:
    """Paired comparison of two systems on the same examples (row i of each matrix).

    Args:
        statistics_a, statistics_b: (examples x statistics) matrices of systems a and b.
        values: as in `bootstrap_intervals`.
        method: "permutation" (approximate randomization: each resample swaps the two
            systems' statistics with probability 1/2 per example; p = (1 + #{|d*| >= |d|})
            / (1 + n_resamples); with m examples of unequal statistics and 2^m <= n_resamples,
            the exact test: every one of the 2^m swaps, p = #{|d*| >= |d|} / 2^m) or
            "bootstrap" (paired resampling of examples; p = min(1, 2 min(#{d* <= 0},
            #{d* >= 0}) / n_resamples)).
        confidence_level: level of the paired-bootstrap interval of the difference.
        n_resamples, random_state: as in `bootstrap_intervals`.

    Returns:
        Per key defined for both systems: `a`, `b`, `difference` (b - a),
        `difference_ci_low`, `difference_ci_high` and a two-sided `p_value`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    level = check_confidence_level(confidence_level)
    n_resamples = check_n_resamples(n_resamples)
    rng = check_random_state(random_state)
    matrix_a = check_statistics(statistics_a, "system a")
    matrix_b = check_statistics(statistics_b, "system b")
    if matrix_a.shape[0] != matrix_b.shape[0]:
        raise ValueError(
            f"system a has {matrix_a.shape[0]} examples but system b has {matrix_b.shape[0]}; "
            "a paired comparison needs the same examples, in the same order"
        )
    if matrix_a.shape[1] != matrix_b.shape[1]:
        raise ValueError(
            f"system a has {matrix_a.shape[1]} statistics per example but system b has {matrix_b.shape[1]}"
        )
    width = matrix_a.shape[1]
    both = _bootstrap_sums(np.hstack([matrix_a, matrix_b]), n_resamples, rng)
    paired = ((sums[:, :width], sums[:, width:]) for sums in both)
    differing = matrix_b - matrix_a
    differing = differing[differing.any(axis=1)]  # swapping equal rows changes nothing
    exact = method == "permutation" and exact_permutation(len(differing), n_resamples)
    if method == "permutation":
        moves = all_swaps(differing) if exact else _permutation_moves(differing, n_resamples, rng)
    else:
        moves = None
    return paired_comparison(
        values,
        matrix_a.sum(axis=0),
        matrix_b.sum(axis=0),
        paired,
        moves,
        level=level,
        n_resamples=n_resamples,
        exact=exact,
    )


def paired_comparison(
    values: Values,
    sums_a: np.ndarray,
    sums_b: np.ndarray,
    paired: Iterable[tuple[np.ndarray, np.ndarray]],
    moves: Iterable[np.ndarray] | None,
    *,
    level: float,
    n_resamples: int,
    exact: bool = False,
) -> dict[str, dict[str, float]]:
    """The comparison of `compare_systems_statistics` from column sums: `paired` yields blocks
    of (system a, system b) sums of the same bootstrap resamples; `moves` (permutation
    method; None: bootstrap p-values) yields blocks of the sums moved from b to a by a swap,
    every swap when `exact`."""
    point_a, point_b = _evaluate(values, sums_a), _evaluate(values, sums_b)
    keys = [key for key in _defined(point_a) if key in _defined(point_b)]

    resampled: dict[str, list[np.ndarray]] = {key: [] for key in keys}
    for block_a, block_b in paired:
        resampled_a, resampled_b = _evaluate(values, block_a), _evaluate(values, block_b)
        for key in keys:
            resampled[key].append(resampled_b[key] - resampled_a[key])
    differences = {key: np.concatenate(resampled[key]) for key in keys}

    if moves is not None:
        p_values = permutation_p_values(values, sums_a, sums_b, moves, n_resamples=n_resamples, exact=exact)
    else:
        p_values = {}
        tolerance = _tolerance(point_a, point_b, keys)
        for key in keys:
            defined = differences[key][np.isfinite(differences[key])]
            below = np.count_nonzero(defined <= tolerance[key])
            above = np.count_nonzero(defined >= -tolerance[key])
            p_values[key] = min(1.0, 2 * min(below, above) / defined.size) if defined.size else 1.0

    observed = {key: float(point_b[key] - point_a[key]) for key in keys}
    comparison = {}
    for key in keys:
        low, high = _percentile_interval(differences[key], level)
        comparison[key] = {
            "a": float(point_a[key]),
            "b": float(point_b[key]),
            "difference": observed[key],
            "difference_ci_low": low,
            "difference_ci_high": high,
            "p_value": float(p_values[key]),
        }
    return comparison


def _tolerance(point_a: Mapping[str, np.ndarray], point_b: Mapping[str, np.ndarray], keys: list[str]) -> dict:
    """Per key: differences within this distance of each other are ties (float sums in another order)."""
    return {key: 1e-10 * max(1.0, abs(float(point_a[key])), abs(float(point_b[key]))) for key in keys}


def permutation_p_values(
    values: Values,
    sums_a: np.ndarray,
    sums_b: np.ndarray,
    moves: Iterable[np.ndarray],
    *,
    n_resamples: int,
    exact: bool = False,
) -> dict[str, float]:
    """Per key defined for both systems, the two-sided permutation p-value of b - a from blocks
    of `moves` (the sums a swap moves from b to a): `(1 + #{|d*| >= |d|}) / (1 + n_resamples)`
    over random swaps, or `#{|d*| >= |d|} / 2^m` over all of them (`exact`, `all_swaps`)."""
    point_a, point_b = _evaluate(values, sums_a), _evaluate(values, sums_b)
    keys = [key for key in _defined(point_a) if key in _defined(point_b)]
    observed = {key: abs(float(point_b[key] - point_a[key])) for key in keys}
    tolerance = _tolerance(point_a, point_b, keys)
    extreme, swaps = dict.fromkeys(keys, 0), 0
    for moved in moves:
        swaps += moved.shape[0]
        permuted_a, permuted_b = _evaluate(values, sums_a + moved), _evaluate(values, sums_b - moved)
        for key in keys:
            delta = np.abs(permuted_b[key] - permuted_a[key])
            # An undefined swapped difference counts as extreme (conservative: p never shrinks).
            extreme[key] += int(np.count_nonzero(~(delta < observed[key] - tolerance[key])))
    if exact:
        return {key: extreme[key] / swaps for key in keys}
    return {key: (1 + extreme[key]) / (1 + n_resamples) for key in keys}
