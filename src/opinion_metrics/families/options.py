"""The options the families declare, each with its check, help and choices: match,
normalization, averaging, top-k, the interval options and the rest. The registry combines
them per family.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.normalization import NORMALIZE_MODES, STEMMERS, make_normalizer
from ..core.validation import (
    AVERAGES,
    BOOTSTRAPS,
    MATCH_RELATIONS,
    PRESENCES,
    check_average,
    check_bootstrap,
    check_confidence_level,
    check_device,
    check_flag,
    check_match,
    check_n_resamples,
    check_normalize_callable,
    check_positive_int,
    check_presence,
    check_random_state,
    check_top_k,
    check_zero_division,
)
from ..embeddings.forward import PRECISIONS, check_precision


@dataclass(frozen=True)
class Option:
    """One metric option.

    `kind` tells the surfaces how to offer it: "choice" (one of `choices`), "flag",
    "int" (a positive integer), "number", "top_k" (None / "M", "O" or an int), "text",
    or "object" (library and compute only: a callable or a model object). A `resource`
    option tunes how a run uses the machine (device, batch sizes, processes), never a value.
    """

    name: str
    kind: str
    meaning: str
    check: Callable[[Any], Any] | None = None
    choices: tuple[Any, ...] = ()
    resource: bool = False


def _choice(name: str, choices: tuple[Any, ...]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"{name} must be one of {choices}, got {value!r}")
        return value

    return check


def _check_normalize(value: Any) -> Any:
    make_normalizer(value)
    if callable(value):
        check_normalize_callable(value)
    return value


def _check_stemmer(value: Any) -> Any:
    if value is not None and value not in STEMMERS:
        raise ValueError(f"stemmer must be None or one of {STEMMERS}, got {value!r}")
    return value


def _check_integer(name: str) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return int(value)

    return check


def _flag(name: str) -> Callable[[Any], bool]:
    return lambda value: check_flag(value, name)


def _positive_int(name: str) -> Callable[[Any], int]:
    return lambda value: check_positive_int(value, name)


def _optional_positive_int(name: str) -> Callable[[Any], int | None]:
    return lambda value: None if value is None else check_positive_int(value, name)


MATCH = Option(
    "match",
    "choice",
    "how keywords match: equal, either contains the other (characters), or a contiguous run of tokens",
    check_match,
    MATCH_RELATIONS,
)


NORMALIZE = Option(
    "normalize",
    "choice",
    "keyword normalization: NFKC + casefold, dashes, underscores and / as spaces, other punctuation removed; "
    "the notebooks' ASCII rule; or none",
    _check_normalize,
    NORMALIZE_MODES,
)


STEMMER = Option("stemmer", "choice", "stem each token (Porter) after normalization", _check_stemmer, (None, *STEMMERS))


AVERAGE = Option(
    "average", "choice", "macro: mean of per-example values; micro: pooled counts", check_average, AVERAGES
)


TOP_K = Option(
    "top_k",
    "top_k",
    "keep the first k predictions (precision divides by k), 'O' (the first |gold|: R-precision) or 'M' (all)",
    check_top_k,
)


ZERO_DIVISION = Option(
    "zero_division", "number", "value of a ratio whose denominator is 0, in [0, 1]", check_zero_division
)


RETURN_PER_EXAMPLE = Option(
    "return_per_example", "flag", "also return per_example: a list of values per key", _flag("return_per_example")
)


# The model options of the embedding families (semantic_keyword_prf, keyword_diversity).
DEVICE = Option(
    "device", "text", "where the model runs: cuda, cpu, mps (default: CUDA when available)", check_device, resource=True
)


BATCH_SIZE = Option("batch_size", "int", "keywords encoded per batch", _positive_int("batch_size"), resource=True)


PRECISION = Option(
    "precision",
    "choice",
    "what the model computes in: float32, or float16 / bfloat16 (faster on GPUs; cosines change by up to ~7e-3)",
    check_precision,
    PRECISIONS,
)


PRESENCE = Option(
    "presence",
    "choice",
    "score all keywords, or only those that occur (present) / do not occur (absent) in the text",
    check_presence,
    PRESENCES,
)


INTERVALS = (
    Option(
        "confidence_level",
        "number",
        "add <key>_ci_low / <key>_ci_high: bootstrap percentile intervals at this level (e.g. 0.95)",
        lambda value: None if value is None else check_confidence_level(value),
    ),
    Option("n_resamples", "int", "bootstrap resamples of the intervals", check_n_resamples),
    Option(
        "random_state",
        "int",
        "seed of the resamples (None: fresh randomness)",
        check_random_state,
    ),
    Option(
        "bootstrap",
        "choice",
        "multinomial: draw examples with replacement; poisson: Poisson(1) weights per example, "
        "keyed by position (as a MetricState fed in order; states made apart are split-independent "
        "with keys= ids or start= global positions)",
        check_bootstrap,
        BOOTSTRAPS,
    ),
)


INTERVAL_OPTIONS = frozenset(option.name for option in INTERVALS)
