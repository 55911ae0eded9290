"""Paired comparison of two systems on the same examples, for every family (docs/definitions.md section 11)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .averaging import Values
from .families import get_family
from .resampling import METHODS, RandomState, compare_systems_statistics, paired_comparison, poisson_seed
from .state import MetricState, statistics
from .validation import check_confidence_level, check_corpus, check_same_length

_DEFAULT_LEVEL, DEFAULT_RESAMPLES, _DEFAULT_SEED = 0.95, 1000, 0


class _NotGiven:
    """The default of `compare_systems`'s random_state (None already means fresh draws)."""

    def __repr__(self) -> str:
        return "<not given: 0, or the states' seed>"


NOT_GIVEN: Any = _NotGiven()


def compare_states(
    state_a: MetricState, state_b: MetricState, *, method: str = "permutation", confidence_level: float | None = None
) -> dict[str, dict[str, float]]:
    """The paired comparison of `compare_systems` from two Poisson states of the same family
    and options over the same keys (docs/definitions.md section 12): the bootstrap uses both states' sums
    under the shared weights; a permutation swaps by the shared signs, moving
    `swapped_b - swapped_a` from b to a. The interval of the difference is at the states'
    confidence level (`confidence_level`, if given, must equal it)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    state_a.check_mergeable(state_b)
    if not state_a.poisson:
        raise ValueError(
            'comparing states needs states made with bootstrap="poisson" and a confidence_level '
            "(their per-resample sums)"
        )
    if state_a.sums is None or state_b.sums is None:
        raise ValueError("comparing states needs states with examples: update them first")
    if state_a.fingerprint != state_b.fingerprint:
        raise ValueError(
            f"the states were computed over different keys ({state_a.fingerprint[0]} and {state_b.fingerprint[0]} "
            "examples, or other keys): a paired comparison needs the same examples, with the same keys"
        )
    level = state_a.level
    if confidence_level is not None and check_confidence_level(confidence_level) != level:
        raise ValueError(f"confidence_level={confidence_level!r} differs from the states' {level!r}")
    moves = [state_b.swapped - state_a.swapped] if method == "permutation" else None
    return paired_comparison(
        state_a.reducer,
        state_a.sums,
        state_b.sums,
        [(state_a.weighted, state_b.weighted)],
        moves,
        level=level,
        n_resamples=state_a.options["n_resamples"],
    )


def compare_systems(
    family: str | MetricState,
    predictions_a: Sequence[Any] | MetricState,
    predictions_b: Sequence[Any] | MetricState | None = None,
    references: Sequence[Any] | None = None,
    *,
    scores_a: Sequence[Sequence[float]] | None = None,
    scores_b: Sequence[Sequence[float]] | None = None,
    method: str = "permutation",
    confidence_level: float | None = None,
    n_resamples: int | None = None,
    random_state: RandomState = NOT_GIVEN,
    **options: Any,
) -> dict[str, dict[str, float]]:
    """Is system b better than system a? A paired test on the same examples.

    Each system's per-example statistics are computed once (preparation, matching and
    models run once per system); every resample is a weighted sum of them.

    The systems can also be two `MetricState`s made with `bootstrap="poisson"` and a
    `confidence_level` over the same keys: `compare_systems(state_a, state_b)` (or with the
    family name first); their confidence level, resamples and seed are used, and
    `confidence_level`, `n_resamples` or `random_state` given with states must equal them.

    Args:
        family: a metric family name ("keyword_prf", "weighted_keyword_prf", ...).
        predictions_a, predictions_b: the two systems' predictions, example i of each
            for the same document (or two states).
        references: the references shared by both (not for "keyword_diversity"; optional
            for "sentiment_appropriateness" when `texts` are given).
        scores_a, scores_b: the keyword scores of each system ("weighted_keyword_prf").
        method: "permutation" (approximate randomization, default) or "bootstrap".
        confidence_level: level of the paired-bootstrap interval of the difference
            (default 0.95; with states, theirs).
        n_resamples, random_state: resamples and seed (default 1000 and 0, None: fresh
            draws; with states, theirs).
        **options: the family's options (match, average, texts, presence, ...);
            `bootstrap="poisson"` draws position-keyed Poisson weights and swap signs
            (docs/definitions.md section 12), as comparing two states does.

    Returns:
        Per key: `a`, `b`, `difference` (b - a), `difference_ci_low`,
        `difference_ci_high` and the two-sided `p_value`.

    Example:
        >>> result = compare_systems("keyword_prf", [["war"], ["pizza"]], [["war"], ["jedi"]], [["war"], ["jedi"]])
        >>> result["f1"]["difference"], result["f1"]["p_value"]
        (0.5, 1.0)
    """
    if isinstance(family, MetricState):
        family, predictions_a, predictions_b = family.family, family, predictions_a
    if isinstance(predictions_a, MetricState) or isinstance(predictions_b, MetricState):
        if not (isinstance(predictions_a, MetricState) and isinstance(predictions_b, MetricState)):
            raise TypeError("compare two MetricStates, or two systems' predictions, not one of each")
        if predictions_a.family != family:
            raise ValueError(f"the states are {predictions_a.family} states, not {family}")
        given = {"references": references, "scores_a": scores_a, "scores_b": scores_b}
        extra = [name for name, value in given.items() if value is not None] + sorted(options)
        if extra:
            raise ValueError(f"states carry their inputs and options: leave out {', '.join(extra)}")
        given = {"n_resamples": n_resamples, "random_state": random_state}
        for name, value in given.items():
            if value is not None and value is not NOT_GIVEN and value != predictions_a.options[name]:
                raise ValueError(f"{name}={value!r} differs from the states' {predictions_a.options[name]!r}")
        if random_state is None:
            raise ValueError("random_state=None asks for fresh draws, but states carry their seed: leave it out")
        return compare_states(predictions_a, predictions_b, method=method, confidence_level=confidence_level)
    result, _ = compare_systems_with_pairs(
        family,
        predictions_a,
        predictions_b,
        references,
        scores_a=scores_a,
        scores_b=scores_b,
        method=method,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        random_state=random_state,
        **options,
    )
    return result


@dataclass(frozen=True)
class Pairs:
    """The examples behind a paired comparison: `given` to each system, `counted` by the metric
    (`presence` leaves out an example without a gold keyword of its kind) and, of those, how many
    the two systems score `differing`ly: their per-example statistics (the resampling's input)
    differ in a way that moves a value when that pair alone is swapped. A system that only
    reorders another's keywords scores every example alike for keyword_prf; two that differ only
    in how many predictions a review mentions differ for micro averages, not for macro ones.
    Only differing pairs can move the permutation test."""

    given: int
    counted: int
    differing: int

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
    return Pairs(int(matrix_a.shape[0]), int(counted.sum()), int(moved.sum()))


def pairs_of(
    family: str, options: Mapping[str, Any], columns_a: Mapping[str, Any], columns_b: Mapping[str, Any]
) -> Pairs:
    """`count_pairs` of two systems' inputs (`state.statistics`'s columns by name)."""
    matrices = [statistics(family, options, **columns)[0] for columns in (columns_a, columns_b)]
    return count_pairs(*matrices, get_family(family).reducer(options))


def compare_systems_with_pairs(
    family: str,
    predictions_a: Sequence[Any],
    predictions_b: Sequence[Any],
    references: Sequence[Any] | None = None,
    *,
    scores_a: Sequence[Sequence[float]] | None = None,
    scores_b: Sequence[Sequence[float]] | None = None,
    method: str = "permutation",
    confidence_level: float | None = None,
    n_resamples: int | None = None,
    random_state: RandomState = NOT_GIVEN,
    **options: Any,
) -> tuple[dict[str, dict[str, float]], Pairs]:
    """`compare_systems` on two systems' inputs, and the `Pairs` behind it: from the per-example
    statistics the comparison resamples (computed once; with `bootstrap="poisson"` a second time,
    since Poisson states keep only sums)."""
    confidence_level = _DEFAULT_LEVEL if confidence_level is None else confidence_level
    n_resamples = DEFAULT_RESAMPLES if n_resamples is None else n_resamples
    random_state = _DEFAULT_SEED if random_state is NOT_GIVEN else random_state
    if predictions_b is None:
        raise ValueError("give predictions_b: the second system's predictions")
    spec = get_family(family)
    spec.check_options({name: value for name, value in options.items() if name != "texts"})
    inputs = {item.name for item in spec.inputs}
    if "texts" in options and "texts" not in inputs:
        raise ValueError(f"{family} takes no texts")
    if (scores_a is not None or scores_b is not None) and family != "weighted_keyword_prf":
        raise ValueError(f"{family} takes no scores: scores_a and scores_b are for weighted_keyword_prf")
    if references is not None and "references" not in inputs:
        raise ValueError(f"{family} takes no references: it measures each system's predictions alone")
    if "return_per_example" in options:
        raise ValueError("compare_systems returns no per-example values: leave out return_per_example")
    if references is None and family not in ("keyword_diversity", "sentiment_appropriateness"):
        raise ValueError(f"{family} compares predictions with references: give references")
    sizes = {"predictions_a": predictions_a, "predictions_b": predictions_b, "references": references}
    check_same_length(**{name: check_corpus(value, name) for name, value in sizes.items() if value is not None})
    if family == "weighted_keyword_prf" and (scores_a is None or scores_b is None):
        raise ValueError("weighted_keyword_prf compares scored predictions: give scores_a and scores_b")
    options = dict(options)
    bootstrap = options.pop("bootstrap", "multinomial")
    shared = {"references": references, "texts": options.pop("texts", None)}
    shared = {name: value for name, value in shared.items() if value is not None}
    systems = (("predictions_a", predictions_a, scores_a), ("predictions_b", predictions_b, scores_b))
    columns = [{"predictions": p, **shared, **({} if s is None else {"scores": s})} for _, p, s in systems]
    if bootstrap == "poisson":
        seed = poisson_seed(random_state)  # one seed: both systems draw the same weights
        settings = {"confidence_level": confidence_level, "n_resamples": n_resamples, "random_state": seed}
        state_a, state_b = (
            MetricState(family, **options, **settings, bootstrap="poisson").update(**given) for given in columns
        )
        compared = compare_states(state_a, state_b, method=method, confidence_level=confidence_level)
        return compared, pairs_of(family, options, *columns)
    matrix_a, matrix_b = (statistics(family, options, **given)[0] for given in columns)
    if matrix_a.shape[0] != matrix_b.shape[0]:
        raise ValueError(
            f"predictions_a has {matrix_a.shape[0]} examples but predictions_b has {matrix_b.shape[0]}; "
            "a paired comparison needs the same examples, in the same order"
        )
    compared = compare_systems_statistics(
        matrix_a,
        matrix_b,
        spec.reducer(options),
        method=method,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        random_state=random_state,
    )
    return compared, count_pairs(matrix_a, matrix_b, spec.reducer(options))


# --- The significance report: one system or several against a baseline ------------------------

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


def smallest_p_value(method: str, n_resamples: int, differing: int) -> float:
    """The smallest p-value the test can give. Permutation: of the 2^m swaps of m differing
    examples, at least two (none swapped, all swapped) are as extreme as the observed difference,
    so p >= 2 / 2^m, and approximate randomization adds 1 / (1 + n_resamples); bootstrap: 0
    when every resample keeps the sign (shown as below 1 / n_resamples)."""
    if differing == 0:
        return 1.0
    if method == "bootstrap":
        return 0.0
    return max(2.0 ** (1 - differing), 1 / (1 + n_resamples))


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
    baseline and its `Pairs`, with Holm's correction over the systems per key."""
    adjusted: dict[tuple[str, str], float] = {}
    keys = list(dict.fromkeys(key for result in comparisons.values() for key in result))
    for key in keys:
        systems = [system for system, result in comparisons.items() if key in result]
        for system, p in zip(systems, holm([comparisons[system][key]["p_value"] for system in systems])):
            adjusted[system, key] = p
    return {
        system: {
            key: Difference(
                row["a"],
                row["b"],
                row["difference"],
                row["difference_ci_low"],
                row["difference_ci_high"],
                row["p_value"],
                adjusted[system, key],
                pairs[system].counted,
                pairs[system].differing,
                smallest_p_value(method, n_resamples, pairs[system].differing),
                pairs[system].left_out,
            )
            for key, row in result.items()
        }
        for system, result in comparisons.items()
    }


def format_p(p: float, n_resamples: int) -> str:
    """A p-value as the report prints it: 3 decimals, 2 significant digits below 0.001, and a
    bootstrap p of 0 as "<" its resolution 1 / n_resamples."""
    if p == 0:
        return f"<{1 / n_resamples:.2g}"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.2g}"


def signed(value: float) -> str:
    """A difference with its sign and 4 decimals; one that rounds to zero is +0.0000, never -0.0000."""
    text = f"{value:+.4f}"
    return "+0.0000" if text == "-0.0000" else text


def method_note(method: str, level: float, n_resamples: int, marker: str = "†") -> str:
    """Which resampling gave the p-values and which the intervals (one note for the whole report)."""
    if method == "permutation":
        return (
            f"p-values: paired permutation test ({n_resamples:,} random swaps of the two systems' outputs "
            f"per example); intervals: paired bootstrap ({level:.0%}, {n_resamples:,} resamples of the same "
            "pairs). The test asks whether the difference could be chance, the interval how much it varies "
            f"when examples are redrawn: they can disagree near the threshold or with few pairs; {marker} "
            f"follows the p-value. {_SCORED_DIFFERENTLY}"
        )
    return (
        f"p-values and intervals: the same {n_resamples:,} paired bootstrap resamples of the pairs "
        f"({level:.0%} intervals). {_SCORED_DIFFERENTLY}"
    )


_SCORED_DIFFERENTLY = (
    "A pair is scored differently when the two systems' per-example statistics differ where a value "
    "depends on them (for keyword_prf, the same keywords in another order score alike): only such pairs can "
    "move the test."
)


def report_notes(
    differences: Mapping[str, Mapping[str, Difference]],
    *,
    baseline: str,
    method: str,
    level: float,
    n_resamples: int,
    marker: str = "†",
    note: str = "‡",
    groups: Mapping[str, str] | None = None,
    within: str = "",
    left_out: str = "left out",
) -> list[str]:
    """The report's notes in plain words, for one family: the significance marker and Holm's
    correction (applied within each group of `groups`, {system: group}, e.g. each movie:
    `within`), the pairs that count (those `left_out` named, e.g. "no present gold keyword")
    and how many differ, the smallest p-value each comparison can reach, a warning below
    MIN_PAIRS pairs, and the rows marked `note` where the interval and the marker disagree.
    `method_note` says which resampling gave what, once for the report."""
    alpha = round(1 - level, 10)
    if not any(differences.values()):
        return []
    notes = []
    per_group: dict[str, int] = {}
    for system in differences:
        group = (groups or {}).get(system, "")
        per_group[group] = per_group.get(group, 0) + 1
    compared = max(per_group.values())
    if compared > 1:
        count = f"the {compared} systems" if len(set(per_group.values())) == 1 else "the systems"
        where = f" within each {within}" if len(per_group) > 1 and within else ""
        corrected = f", after Holm's correction for {count} compared with {baseline}{where} (per metric)"
    else:
        corrected = ""
    notes.append(f"{marker} significant at the {alpha:g} level{corrected}")
    for system, rows in differences.items():
        row = next(iter(rows.values()))
        if row.differing == 0:
            floor = "the two score every pair alike: p is 1"
        elif row.smallest_p_value > 0:
            floor = f"p cannot go below {format_p(row.smallest_p_value, n_resamples)}"
        else:
            floor = f"p below {1 / n_resamples:.2g} shows as <{1 / n_resamples:.2g}"
        examples = row.pairs + row.left_out
        counted = f" ({row.left_out:,} of {examples:,} examples {left_out})" if row.left_out else ""
        pairs = f"{row.pairs:,} pair" + "s" * (row.pairs != 1)
        notes.append(f"{system} vs {baseline}: {pairs}{counted}, {row.differing:,} scored differently; {floor}")
        if row.pairs < MIN_PAIRS:
            notes.append(
                f"warning: {system} vs {baseline} has only {pairs}, too few for a reliable comparison "
                f"({MIN_PAIRS} or more advised): the bootstrap interval is too narrow with so few pairs"
            )
        elif 0 < row.differing < MIN_PAIRS:
            notes.append(
                f"warning: only {row.differing} of the {row.pairs:,} pairs of {system} vs {baseline} are scored "
                f"differently ({MIN_PAIRS} or more advised): the test has little to go on"
            )
    reasons: dict[str, list[str]] = {}
    for system, rows in differences.items():
        for key, row in rows.items():
            reason = row.disagreement(alpha)
            if reason is not None:
                reasons.setdefault(reason, []).append(f"{key} ({system})")
    for reason, rows in reasons.items():
        shown = ", ".join(rows[:6]) + (f" and {len(rows) - 6} more" if len(rows) > 6 else "")
        if reason == "holm":
            why = (
                f"the interval excludes 0, but the Holm-adjusted p-value is not below {alpha:g}: the interval is not "
                f"adjusted for the several systems compared, and {marker} follows the adjusted p-value"
            )
        elif method == "permutation":
            why = (
                f"the interval (paired bootstrap) and the p-value (permutation test) disagree near the threshold; "
                f"{marker} follows the p-value"
            )
        else:
            why = f"the interval and the p-value disagree at the boundary (ties); {marker} follows the p-value"
        notes.append(f"{note} {shown}: {why}")
    return notes
