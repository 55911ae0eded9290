"""One declaration per metric family: its inputs, options, output keys and plot.

Every surface reads or is checked against these declarations: the evaluate modules'
`_compute` signatures, docstrings and cards, the CLI's flags, the Spaces' controls and the
publish list (`tests/families/test_families.py`). Defaults are never restated here: they come from
the library functions' signatures.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ..core.tuples import check_together as check_tuple_options
from ..core.validation import (
    RELEVANCES,
    check_aspects,
    check_flag,
    check_model,
    check_rating_range,
    check_relevance,
    check_sentiment,
    check_threshold,
    check_top_k,
    check_zero_division,
)
from .options import (
    AVERAGE,
    BATCH_SIZE,
    DEVICE,
    INTERVALS,
    MATCH,
    NORMALIZE,
    PRECISION,
    PRESENCE,
    RETURN_PER_EXAMPLE,
    STEMMER,
    TOP_K,
    ZERO_DIVISION,
    Option,
    _check_integer,
    _choice,
    _flag,
    _optional_positive_int,
    _positive_int,
)
from .tuple_options import TUPLE_OPTIONS


@dataclass(frozen=True)
class Input:
    """One input column: `kind` is "keywords", "scores", "texts", "ratings" or "tuples"."""

    name: str
    kind: str
    meaning: str
    required: bool = True


@dataclass(frozen=True)
class Output:
    """One output key (`{k}`, `{aspect}` and `{elements}` stand for the option's value / each aspect / the
    elements of a projection joined by "_")."""

    key: str
    range: str
    meaning: str
    higher_is_better: bool = True


def _load(path: str) -> Callable[..., Any]:
    module, name = path.split(":")
    return getattr(importlib.import_module(f".{module}", __package__), name)


@dataclass(frozen=True)
class Family:
    """A metric family: the library function at `function` ("module:name", a module of this package)
    and its declaration.

    `statistics_path` names its per-example statistics function (docs/definitions.md section 11: the inputs
    and the options that are not interval options -> `(statistics, values, ...)`), and
    `reducer_path` the data-free builder `options -> values` of the function from column sums
    of those statistics to the returned values (docs/definitions.md section 12).
    """

    name: str
    title: str
    summary: str
    function_path: str
    inputs: tuple[Input, ...]
    options: tuple[Option, ...]
    outputs: tuple[Output, ...]
    plot: str
    module_type: str = "metric"
    check_together: Callable[[dict[str, Any]], Any] | None = None  # options that constrain each other
    statistics_path: str = ""
    reducer_path: str = ""

    @property
    def function(self) -> Callable[..., Any]:
        return _load(self.function_path)

    @property
    def statistics_function(self) -> Callable[..., Any]:
        return _load(self.statistics_path)

    def reducer(self, options: Mapping[str, Any]) -> Reducer:
        """The picklable function column sums -> values under `options` (missing: defaults)."""
        return Reducer(self.name, {**self.defaults, **options})

    @cached_property
    def defaults(self) -> dict[str, Any]:
        """Each option's default, read from the library function's signature."""
        parameters = inspect.signature(self.function).parameters
        return {option.name: parameters[option.name].default for option in self.options}

    def option(self, name: str) -> Option:
        return next(option for option in self.options if option.name == name)

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise `ValueError` for an unknown option name (suggesting the closest one) or a
        bad value, before any work is done (evaluate consumes its cache in `compute`)."""
        names = [option.name for option in self.options]
        for name, value in options.items():
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"{self.name} has no option {name!r}{hint} Its options: {', '.join(names)}")
            check = self.option(name).check
            if check is not None:
                check(value)
        if self.check_together is not None:
            self.check_together({**self.defaults, **options})


class Reducer:
    """Column sums (..., m) -> {key: values (...)} of a family under fixed options, built from
    the family's declaration and the options alone (no data): importable and picklable."""

    def __init__(self, family: str, options: Mapping[str, Any]) -> None:
        self.family = family
        self.options = dict(options)
        self._values: Callable[[Any], Mapping[str, Any]] | None = None

    def __call__(self, sums: Any) -> Mapping[str, Any]:
        if self._values is None:
            self._values = _load(get_family(self.family).reducer_path)(self.options)
        return self._values(sums)

    def __reduce__(self) -> tuple[Any, ...]:
        return Reducer, (self.family, self.options)

    def __repr__(self) -> str:
        return f"Reducer({self.family!r}, {self.options!r})"


TEXTS = Input("texts", "texts", "the document (review) of each example: needed by presence", False)


PREDICTIONS = Input("predictions", "keywords", "predicted keywords per example, in rank order")


REFERENCES = Input("references", "keywords", "gold keywords per example, most important first")


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            "keyword_prf",
            "Keyword precision / recall / F1",
            "Approximate-match keyword precision, recall and F1 with a maximum one-to-one matching.",
            "keyword_prf:keyword_prf",
            (PREDICTIONS, REFERENCES, TEXTS),
            (
                PRESENCE,
                MATCH,
                NORMALIZE,
                STEMMER,
                Option("one_to_one", "flag", "count a maximum one-to-one matching", _flag("one_to_one")),
                AVERAGE,
                TOP_K,
                ZERO_DIVISION,
                *INTERVALS,
                RETURN_PER_EXAMPLE,
            ),
            (
                Output("precision", "[0, 1]", "share of predicted keywords that match a gold keyword"),
                Output("recall", "[0, 1]", "share of gold keywords matched by a prediction"),
                Output("f1", "[0, 1]", "harmonic mean of precision and recall"),
            ),
            "histogram of per-example F1",
            statistics_path="keyword_prf:keyword_prf_statistics",
            reducer_path="keyword_prf:keyword_prf_reducer",
        ),
        Family(
            "weighted_keyword_prf",
            "Weighted keyword P/R/F1, nDCG@k, MAP@k",
            "Confidence-weighted precision, recall and F1, and rankings graded by gold keyword importance.",
            "weighted_keyword_prf:weighted_keyword_prf",
            (
                PREDICTIONS,
                Input("scores", "scores", "one confidence in [0, 1] per predicted keyword"),
                REFERENCES,
                TEXTS,
            ),
            (
                PRESENCE,
                MATCH,
                NORMALIZE,
                STEMMER,
                Option(
                    "one_to_one", "flag", "matched score from a maximum-weight one-to-one matching", _flag("one_to_one")
                ),
                AVERAGE,
                Option(
                    "top_k",
                    "top_k",
                    "cut-off of the weighted P/R/F1: the first k predictions, 'O' (the first |gold|) or 'M' (all)",
                    check_top_k,
                ),
                Option("k", "int", "rank cut-off of nDCG@k and MAP@k", _positive_int("k")),
                Option(
                    "relevance",
                    "choice",
                    "gold position j weighs 1/log2(j+2) (graded) or 1 (binary)",
                    check_relevance,
                    RELEVANCES,
                ),
                Option(
                    "clip_scores", "flag", "clip finite scores into [0, 1] instead of refusing", _flag("clip_scores")
                ),
                ZERO_DIVISION,
                *INTERVALS,
                RETURN_PER_EXAMPLE,
            ),
            (
                Output("weighted_precision", "[0, 1]", "matched confidence / total confidence"),
                Output(
                    "weighted_recall",
                    "[0, 1] one-to-one; can exceed 1 otherwise",
                    "matched confidence / number of gold keywords",
                ),
                Output("weighted_f1", "[0, 1]", "harmonic mean of weighted precision and recall"),
                Output("ndcg@{k}", "[0, 1]", "ranking quality of the first k, graded by gold position"),
                Output("map@{k}", "[0, 1]", "mean average precision of the first k (divided by |gold|)"),
            ),
            "mean nDCG@k against k, the chosen k marked",
            statistics_path="weighted_keyword_prf:weighted_statistics",
            reducer_path="weighted_keyword_prf:weighted_reducer",
        ),
        Family(
            "semantic_keyword_prf",
            "Semantic keyword P/R/F1",
            "Embedding similarity (sentence-transformers) instead of string matching.",
            "semantic_keyword_prf:semantic_keyword_prf",
            (PREDICTIONS, REFERENCES, TEXTS),
            (
                PRESENCE,
                Option("model", "text", "sentence-transformers model name or path (or a model object)", check_model),
                Option(
                    "threshold",
                    "number",
                    "a keyword matches when its best cosine similarity reaches this",
                    check_threshold,
                ),
                Option("one_to_one", "flag", "count a maximum matching on the thresholded graph", _flag("one_to_one")),
                AVERAGE,
                TOP_K,
                NORMALIZE,
                STEMMER,
                ZERO_DIVISION,
                DEVICE,
                BATCH_SIZE,
                replace(
                    PRECISION, meaning=PRECISION.meaning[:-1] + "; pairs near the threshold are decided in float32)"
                ),
                Option(
                    "block_elements",
                    "int",
                    "most similarities held in memory at once",
                    _positive_int("block_elements"),
                    resource=True,
                ),
                Option(
                    "show_progress",
                    "flag",
                    "a progress bar while encoding (default: for 10,000+ new keywords)",
                    lambda value: None if value is None else check_flag(value, "show_progress"),
                    resource=True,
                ),
                *INTERVALS,
                RETURN_PER_EXAMPLE,
            ),
            (
                Output("semantic_precision", "[0, 1]", "share of predictions whose best cosine reaches the threshold"),
                Output("semantic_recall", "[0, 1]", "share of gold keywords whose best cosine reaches the threshold"),
                Output("semantic_f1", "[0, 1]", "harmonic mean of semantic precision and recall"),
                Output("soft_precision", "[0, 1]", "mean best similarity of the predictions (no threshold)"),
                Output("soft_recall", "[0, 1]", "mean best similarity of the gold keywords (no threshold)"),
                Output("soft_f1", "[0, 1]", "harmonic mean of soft precision and recall"),
            ),
            "histogram of per-example soft F1",
            statistics_path="semantic_keyword_prf:semantic_statistics",
            reducer_path="semantic_keyword_prf:semantic_reducer",
        ),
        Family(
            "sentiment_appropriateness",
            "Sentiment Appropriateness Score",
            "Does the sentiment (VADER) of the predicted keywords fit the gold keywords and the review?",
            "sentiment_appropriateness:sentiment_appropriateness",
            (
                PREDICTIONS,
                Input("references", "keywords", "gold keywords per example (optional when texts are given)", False),
                Input("texts", "texts", "the review of each example (optional)", False),
                Input(
                    "prediction_sentiments",
                    "scores",
                    "optional: one sentiment in [0, 1] per predicted keyword, from the model itself",
                    False,
                ),
            ),
            (
                Option(
                    "mapping",
                    "choice",
                    "VADER into [0, 1]: pos + 0.5 neu (weighted) or (compound + 1) / 2",
                    _choice("mapping", ("weighted", "compound")),
                    ("weighted", "compound"),
                ),
                Option("sentiment", "object", "a custom str -> [0, 1] function replacing VADER", check_sentiment),
                NORMALIZE,
                STEMMER,
                Option(
                    "workers",
                    "int",
                    "processes for VADER on long texts",
                    _optional_positive_int("workers"),
                    resource=True,
                ),
                *INTERVALS,
                RETURN_PER_EXAMPLE,
            ),
            (
                Output("sas_from_keywords", "[0, 1]", "1 - |sentiment of predictions - sentiment of gold keywords|"),
                Output("sas_from_text", "[0, 1]", "1 - |sentiment of predictions - sentiment of the review|"),
            ),
            "histogram of per-example SAS",
            statistics_path="sentiment_appropriateness:sentiment_statistics",
            reducer_path="sentiment_appropriateness:sentiment_reducer",
        ),
        Family(
            "aspect_sentiment_score",
            "Aspect sentiment score",
            "Per-aspect presence F1 x rating R2, averaged over aspects (Quy Nhon AI Hackathon 2022).",
            "aspect_sentiment_score:aspect_sentiment_score",
            (
                Input("predictions", "ratings", "per example one integer per aspect: 0 absent, else a rating"),
                Input("references", "ratings", "the gold ratings, same shape"),
            ),
            (
                Option("aspects", "text", "aspect names in column order", check_aspects),
                Option("min_rating", "int", "lowest rating (0 means absent)", _check_integer("min_rating")),
                Option("max_rating", "int", "highest rating", _check_integer("max_rating")),
                Option("zero_division", "number", "F1 of an aspect absent on both sides", check_zero_division),
                *INTERVALS,
            ),
            (
                Output("score", "[0, 1]", "mean over aspects of presence F1 x rating R2"),
                Output("f1_{aspect}", "[0, 1]", "presence F1 of the aspect"),
                Output("r2_{aspect}", "[0, 1]", "1 - squared rating error / squared rating range, where both rate it"),
                Output("score_{aspect}", "[0, 1]", "F1 x R2 of the aspect"),
            ),
            "per-aspect F1 and R2 bars",
            statistics_path="aspect_sentiment_score:aspect_statistics",
            reducer_path="aspect_sentiment_score:aspect_reducer",
            check_together=lambda options: check_rating_range(options["min_rating"], options["max_rating"]),
        ),
        Family(
            "keyword_diversity",
            "Keyword diversity",
            "How diverse each example's predicted keywords are: no references needed.",
            "keyword_diversity:keyword_diversity",
            (PREDICTIONS,),
            (
                NORMALIZE,
                STEMMER,
                Option("model", "text", "sentence-transformers model for self_similarity (default: none)", check_model),
                DEVICE,
                BATCH_SIZE,
                PRECISION,
                Option("zero_division", "number", "the value when no example has a keyword", check_zero_division),
                *INTERVALS,
                RETURN_PER_EXAMPLE,
            ),
            (
                Output("unique_keyword_ratio", "[0, 1]", "distinct keywords / keywords: 1 means no repeats"),
                Output("unique_token_ratio", "[0, 1]", "distinct tokens / tokens over an example's keywords"),
                Output(
                    "self_similarity",
                    "[-1, 1]",
                    "mean cosine between an example's keywords (lower: more diverse)",
                    higher_is_better=False,
                ),
            ),
            "histogram of per-example unique keyword ratio",
            statistics_path="keyword_diversity:diversity_statistics",
            reducer_path="keyword_diversity:diversity_reducer",
            module_type="measurement",
        ),
        Family(
            "sentiment_tuple_prf",
            "Sentiment tuple precision / recall / F1",
            "Aspect-opinion pairs, triplets and quads (ABSA) matched one to one, exactly or with partial credit, "
            "with per-element scores.",
            "sentiment_tuple_prf:sentiment_tuple_prf",
            (
                Input("predictions", "tuples", "predicted tuples per example (with format: the generated text)"),
                Input("references", "tuples", "gold tuples per example"),
            ),
            TUPLE_OPTIONS,
            (
                Output("precision", "[0, 1]", "matched predicted tuples (credits) / predicted tuples"),
                Output("recall", "[0, 1]; membership: can exceed 1", "matched gold tuples (credits) / gold tuples"),
                Output("f1", "[0, 1]; membership: can exceed 1", "harmonic mean of precision and recall"),
                Output("{elements}_precision", "[0, 1]", "precision of the tuples projected on those elements"),
                Output("{elements}_recall", "[0, 1]", "recall of the tuples projected on those elements"),
                Output("{elements}_f1", "[0, 1]", "F1 of the tuples projected on those elements (aspect_f1, ...)"),
                Output(
                    "unparsed",
                    ">= 0",
                    "segments of generated text that could not be read (each a predicted tuple)",
                    higher_is_better=False,
                ),
            ),
            "histogram of per-example F1",
            statistics_path="sentiment_tuple_prf:sentiment_tuple_statistics",
            reducer_path="sentiment_tuple_prf:sentiment_tuple_reducer",
            check_together=check_tuple_options,
        ),
    )
}


def get_family(name: str) -> Family:
    """The declaration of family `name`; a clear error naming the families otherwise."""
    if name not in FAMILIES:
        raise ValueError(f"unknown metric family {name!r}; the families are {', '.join(FAMILIES)}")
    return FAMILIES[name]


def check_options(family: str, options: Mapping[str, Any]) -> None:
    """Check option names and values of `family` (see `Family.check_options`)."""
    get_family(family).check_options(options)


def output_for(family: str, key: str) -> Output | None:
    """The declared output that `key` is ("ndcg@5" is "ndcg@{k}", "f1_food" is "f1_{aspect}"),
    or None (an interval bound, an unknown key)."""
    for output in get_family(family).outputs:
        pattern = re.escape(output.key).replace(r"\{k\}", r"\d+").replace(r"\{aspect\}", ".+")
        pattern = pattern.replace(r"\{elements\}", "[a-z]+(?:_[a-z]+)*")
        if re.fullmatch(pattern, key):
            return output
    return None


def output_meanings(family: str) -> dict[str, str]:
    """Output key pattern -> one-line meaning, for tables that explain their values."""
    return {output.key: output.meaning for output in get_family(family).outputs}
