"""Paired comparison of two systems on the same examples, for every family (docs/definitions.md
section 11): `compare_systems` from the library's inputs, `compare_states` from two states;
both compute each system's per-example statistics once and hand them to `stats.significance`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.validation import check_confidence_level, check_corpus, check_same_length
from ..families.registry import get_family
from ..state.metric_state import MetricState, statistics
from ..stats.resampling import METHODS, RandomState, compare_systems_statistics, paired_comparison, poisson_seed
from ..stats.significance import Pairs, count_pairs

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
