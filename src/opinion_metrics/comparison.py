"""Paired comparison of two systems on the same examples, for every family (docs/definitions.md section 11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .families import get_family
from .resampling import RandomState, compare_systems_statistics
from .validation import check_corpus, check_same_length


def _statistics(family: str, predictions: Any, references: Any, scores: Any, options: dict[str, Any]) -> tuple:
    """(statistics, values) of one system, from the family's statistics function."""
    if family == "keyword_prf":
        from .keyword_prf import keyword_prf_statistics as statistics
    elif family == "weighted_keyword_prf":
        from .weighted_keyword_prf import weighted_statistics

        if scores is None:
            raise ValueError("weighted_keyword_prf compares scored predictions: give scores_a and scores_b")
        return weighted_statistics(predictions, scores, references, **options)[:2]
    elif family == "semantic_keyword_prf":
        from .semantic import semantic_statistics as statistics
    elif family == "sentiment_appropriateness":
        from .sentiment import sentiment_statistics as statistics
    elif family == "aspect_sentiment_score":
        from .aspects import aspect_statistics as statistics
    else:  # keyword_diversity: no references
        from .diversity import diversity_statistics

        return diversity_statistics(predictions, **options)[:2]
    return statistics(predictions, references, **options)[:2]


def compare_systems(
    family: str,
    predictions_a: Sequence[Any],
    predictions_b: Sequence[Any],
    references: Sequence[Any] | None = None,
    *,
    scores_a: Sequence[Sequence[float]] | None = None,
    scores_b: Sequence[Sequence[float]] | None = None,
    method: str = "permutation",
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
    **options: Any,
) -> dict[str, dict[str, float]]:
    """Is system b better than system a? A paired test on the same examples.

    Each system's per-example statistics are computed once (preparation, matching and
    models run once per system); every resample is a weighted sum of them.

    Args:
        family: a metric family name ("keyword_prf", "weighted_keyword_prf", ...).
        predictions_a, predictions_b: the two systems' predictions, example i of each
            for the same document.
        references: the references shared by both (not for "keyword_diversity"; optional
            for "sentiment_appropriateness" when `texts` are given).
        scores_a, scores_b: the keyword scores of each system ("weighted_keyword_prf").
        method: "permutation" (approximate randomization, default) or "bootstrap".
        confidence_level: level of the paired-bootstrap interval of the difference.
        n_resamples, random_state: resamples and seed (default 1000 and 0).
        **options: the family's options (match, average, texts, presence, ...).

    Returns:
        Per key: `a`, `b`, `difference` (b - a), `difference_ci_low`,
        `difference_ci_high` and the two-sided `p_value`.

    Example:
        >>> result = compare_systems("keyword_prf", [["war"], ["pizza"]], [["war"], ["jedi"]], [["war"], ["jedi"]])
        >>> result["f1"]["difference"], result["f1"]["p_value"]
        (0.5, 1.0)
    """
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
    a = _statistics(family, predictions_a, references, scores_a, options)
    b = _statistics(family, predictions_b, references, scores_b, options)
    if np.shape(a[0])[0] != np.shape(b[0])[0]:
        raise ValueError(
            f"predictions_a has {np.shape(a[0])[0]} examples but predictions_b has {np.shape(b[0])[0]}; "
            "a paired comparison needs the same examples, in the same order"
        )
    return compare_systems_statistics(
        a[0],
        b[0],
        a[1],
        method=method,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        random_state=random_state,
    )
