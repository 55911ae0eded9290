"""The metric families as the Spaces show them: controls, prefilled examples, the meaning
of each output, and the call into the library."""

from __future__ import annotations

import inspect
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

# Light imports: torch, sentence-transformers and VADER load on first use.
from .. import semantic
from ..aspects import DEFAULT_ASPECTS, aspect_sentiment_score
from ..diversity import keyword_diversity
from ..keyword_prf import keyword_prf
from ..semantic import DEFAULT_MODEL, clear_embedding_cache, semantic_keyword_prf
from ..sentiment import sentiment_appropriateness
from ..weighted_keyword_prf import weighted_keyword_prf
from .parsing import whole_number

# The Space owner's allow-list: model names or paths separated by commas.
MODELS_VARIABLE = "OPINION_METRICS_MODELS"
MAX_LOADED_MODELS = 2
NO_OVERLAP = "n/a (no overlap)"


@dataclass
class Option:
    """One metric option as a UI control; `name` is also its label and API parameter. Its
    default comes from the library function's signature (`with_defaults`), except a model's."""

    name: str
    kind: str  # "choice", "flag", "number", "slider", "text", "model" (a choice of allowed_models())
    choices: Sequence[Any] = ()
    info: str = ""
    bounds: tuple[float, float, float] = (0.0, 1.0, 0.05)
    default: Any = None


# How the controls show a library default of None.
_NONE_SHOWN = {"stemmer": "none", "top_k": "M"}


def with_defaults(function: Callable[..., Any], *options: Option) -> list[Option]:
    """The options with their defaults read from `function`'s signature, never restated."""
    parameters = inspect.signature(function).parameters
    filled = []
    for option in options:
        if option.kind != "model":
            default = parameters[option.name].default
            option = replace(option, default=_NONE_SHOWN.get(option.name) if default is None else default)
        filled.append(option)
    return filled


@dataclass
class Family:
    name: str
    title: str
    description: str
    inputs: Sequence[str]  # "predictions", ("references", and "texts" or "aspects")
    options: list[Option]
    compute: Callable[..., dict[str, Any]]
    example: Sequence[str]  # the text boxes' prefilled values, in the order of `inputs`
    meanings: dict[str, str]  # output key (before any "@k" or "_<aspect>") -> one line


def allowed_models() -> list[str]:
    """The models this Space serves: $OPINION_METRICS_MODELS, else only the default one."""
    names = [name.strip() for name in os.environ.get(MODELS_VARIABLE, "").split(",") if name.strip()]
    return names or [DEFAULT_MODEL]


class ModelPool:
    """At most `size` loaded models; the least recently used one is released."""

    def __init__(self, size: int = MAX_LOADED_MODELS) -> None:
        self.size = size
        self.models: OrderedDict[str, Any] = OrderedDict()
        # Called with a model's name before it loads (the UI shows a notice).
        self.on_load: Callable[[str], None] | None = None

    def get(self, name: str) -> Any:
        if name not in allowed_models():
            raise ValueError("model: not allowed on this Space")
        if name in self.models:
            self.models.move_to_end(name)
            return self.models[name]
        if self.on_load is not None:
            self.on_load(name)
        device = semantic.default_device()
        try:
            model = semantic.load_model(name, device)
        except (ValueError, OSError):
            raise ValueError(f"model: {name} could not be loaded on this Space") from None
        finally:
            # The pool, not the library's process-wide cache, decides what stays loaded.
            semantic._LOADED_MODELS.pop((name, device), None)
        self.models[name] = model
        while len(self.models) > self.size:
            self.models.popitem(last=False)
        return model


MODELS = ModelPool()


_MATCH = Option("match", "choice", ("substring", "token", "exact"), "how keywords match")
_NORMALIZE = Option("normalize", "choice", ("default", "ascii", "none"), "keyword normalization")
_STEMMER = Option("stemmer", "choice", ("none", "porter"), "stem each token")
_AVERAGE = Option("average", "choice", ("macro", "micro"), "mean of examples, or pooled counts")
_TOP_K = Option("top_k", "text", info="M (all), O (as many as gold keywords) or an integer")
_ZERO = Option("zero_division", "number", info="value of a ratio with a zero denominator")
_PRF = {
    "precision": "share of predicted keywords that match a gold keyword",
    "recall": "share of gold keywords matched by a prediction",
    "f1": "harmonic mean of precision and recall",
}


def top_k(value: Any) -> int | str | None:
    text = str(value).strip()
    if text.upper() in ("", "M"):
        return None
    if text.upper() == "O":
        return "O"
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"top_k must be M, O or a positive integer, got {text!r}") from None


def keyword_options(options: dict[str, Any]) -> dict[str, Any]:
    """The controls' values as the library's arguments."""
    options = dict(options)
    if "stemmer" in options:
        options["stemmer"] = None if options["stemmer"] == "none" else options["stemmer"]
    if "top_k" in options:
        options["top_k"] = top_k(options["top_k"])
    return options


def _compute_keyword_prf(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    return keyword_prf(data["predictions"], data["references"], return_per_example=True, **keyword_options(options))


def _compute_weighted(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    if data.get("scores") is None:
        raise ValueError('weighted metrics need a score per keyword: "keyword (0.8); other (0.3)"')
    options = keyword_options(options)
    options["k"] = whole_number(options["k"], "k")
    return weighted_keyword_prf(
        data["predictions"], data["scores"], data["references"], return_per_example=True, **options
    )


def _compute_semantic(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    options = keyword_options(options)
    options["model"] = MODELS.get(options["model"])
    try:
        return semantic_keyword_prf(data["predictions"], data["references"], return_per_example=True, **options)
    finally:
        clear_embedding_cache()  # a public Space sees endless new keywords: keep no embeddings


def _compute_sentiment(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    return sentiment_appropriateness(
        data["predictions"],
        data["references"],
        texts=data.get("texts"),
        prediction_sentiments=data.get("prediction_sentiments"),
        return_per_example=True,
        **keyword_options(options),
    )


def _compute_diversity(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    options = keyword_options(options)
    options["model"] = MODELS.get(options["model"])
    try:
        return keyword_diversity(data["predictions"], return_per_example=True, **options)
    finally:
        clear_embedding_cache()


def _compute_aspects(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    options = dict(options)
    for name in ("min_rating", "max_rating"):
        options[name] = whole_number(options[name], name)
    return aspect_sentiment_score(data["predictions"], data["references"], aspects=data["aspects"], **options)


FAMILIES: dict[str, Family] = {
    "keyword_prf": Family(
        "keyword_prf",
        "Keyword precision / recall / F1",
        "Approximate-match keyword P/R/F1 with one-to-one matching: in the example, *social satire* "
        "matches *satire* and *dark comedy* matches *comedy*, but *pizza* matches nothing.",
        ("predictions", "references"),
        with_defaults(
            keyword_prf,
            _MATCH,
            Option("one_to_one", "flag", info="maximum one-to-one matching"),
            _AVERAGE,
            _TOP_K,
            _NORMALIZE,
            _STEMMER,
            _ZERO,
        ),
        _compute_keyword_prf,
        (
            "social satire; dark comedy; pizza\nspace opera; jedi knight",
            "satire; class struggle; comedy\nspace opera; jedi; empire",
        ),
        _PRF,
    ),
    "weighted_keyword_prf": Family(
        "weighted_keyword_prf",
        "Weighted keyword P/R/F1, nDCG@k, MAP@k",
        "Confidence-weighted P/R/F1 and rankings graded by gold keyword importance (gold keywords "
        "most important first). The example's two lines rank the same keywords differently: the "
        "second puts the gold keywords first with the highest scores, so its nDCG@5 and MAP@5 are 1.",
        ("predictions", "references"),
        with_defaults(
            weighted_keyword_prf,
            _MATCH,
            Option("one_to_one", "flag", info="maximum-weight one-to-one matching"),
            _AVERAGE,
            _TOP_K,
            Option("k", "slider", bounds=(1, 20, 1), info="rank cut-off of nDCG and MAP"),
            Option("relevance", "choice", ("graded", "binary"), "gold importance by position, or all equal"),
            Option("clip_scores", "flag", info="clip scores into [0, 1]"),
            _NORMALIZE,
            _STEMMER,
            _ZERO,
        ),
        _compute_weighted,
        (
            "scam (0.9); family (0.8); poverty (0.7); cinematography (0.6); fraud (0.5)\n"
            "fraud (0.9); poverty (0.8); scam (0.7); family (0.6); cinematography (0.5)",
            "fraud; poverty; scam\nfraud; poverty; scam",
        ),
        {
            "weighted_precision": "sum of the matched predictions' scores / sum of all scores",
            "weighted_recall": "sum of the matched predictions' scores / number of gold keywords",
            "weighted_f1": "harmonic mean of weighted precision and recall",
            "ndcg": "how early the ranking (by score) puts the important gold keywords, 1 = ideal order",
            "map": "sum of precision at each hit rank up to k, / number of gold keywords",
        },
    ),
    "semantic_keyword_prf": Family(
        "semantic_keyword_prf",
        "Semantic keyword P/R/F1",
        "Keywords match when their embeddings are similar (all-MiniLM-L6-v2, offline): in the example, "
        "*scary movie* matches *horror film* and *funny* matches *hilarious*, which no string match finds.",
        ("predictions", "references"),
        with_defaults(
            semantic_keyword_prf,
            Option("threshold", "slider", bounds=(0.0, 1.0, 0.01), info="minimum cosine similarity"),
            Option("one_to_one", "flag", info="maximum one-to-one matching above the threshold"),
            _AVERAGE,
            _TOP_K,
            _NORMALIZE,
            _STEMMER,
            _ZERO,
            Option("model", "model", info="the models this Space serves", default=DEFAULT_MODEL),
        ),
        _compute_semantic,
        (
            "scary movie; funny; pizza\nwar film; zombie apocalypse",
            "horror film; hilarious; family drama\nwar movie; zombies; survival",
        ),
        {
            "semantic_precision": "share of predictions with a gold keyword at least `threshold` similar",
            "semantic_recall": "share of gold keywords with a prediction at least `threshold` similar",
            "semantic_f1": "harmonic mean of semantic precision and recall",
            "soft_precision": "mean best similarity of each prediction to the gold keywords",
            "soft_recall": "mean best similarity of each gold keyword to the predictions",
            "soft_f1": "harmonic mean of soft precision and recall",
        },
    ),
    "sentiment_appropriateness": Family(
        "sentiment_appropriateness",
        "Sentiment Appropriateness Score",
        "Does the sentiment (VADER) of the predicted keywords fit the gold keywords and the review? "
        "In the example, lines 1 and 2 fit their review (high per-example values); line 3 gives "
        "cheerful keywords to a harsh review (near 0).",
        ("predictions", "references", "texts"),
        with_defaults(
            sentiment_appropriateness,
            Option("mapping", "choice", ("weighted", "compound"), "VADER mapping into [0, 1]"),
            _NORMALIZE,
            _STEMMER,
        ),
        _compute_sentiment,
        (
            "great acting; moving story\nboring plot\nwonderful cast; happy ending",
            "masterpiece; beautiful\ndull; waste of time\nboring; terrible",
            "A moving, beautiful film.\nDull and far too long.\nBoring and terrible.",
        ),
        {
            "sas_from_keywords": "1 - |sentiment of the predictions - sentiment of the gold keywords|",
            "sas_from_text": "1 - |sentiment of the predictions - sentiment of the review|",
        },
    ),
    "keyword_diversity": Family(
        "keyword_diversity",
        "Keyword diversity",
        "How varied one system's keywords are, without gold keywords: in the example, the first line "
        "says *star wars* twice (*Star Wars* and *star wars!* normalize alike) and *space* twice among "
        "its words; the second line repeats nothing.",
        ("predictions",),
        with_defaults(
            keyword_diversity,
            _NORMALIZE,
            _STEMMER,
            _ZERO,
            Option("model", "model", info="the models this Space serves", default=DEFAULT_MODEL),
        ),
        _compute_diversity,
        ("Star Wars; star wars!; space opera; space\nscam; fraud; swindle; con artist",),
        {
            "unique_keyword_ratio": "distinct keywords / keywords (1 = no repeats)",
            "unique_token_ratio": "distinct words / words over all keywords",
            "self_similarity": "mean cosine similarity of pairs of distinct keywords (lower = more diverse)",
        },
    ),
    "aspect_sentiment_score": Family(
        "aspect_sentiment_score",
        "Aspect sentiment score",
        "Per-aspect presence F1 x rating R2. One line per review: one rating per aspect, 0 = absent. "
        "Upload columns: one per aspect (gold) and `pred_` + aspect (predicted); the tourism data's "
        "Vietnamese names (giai_tri, luu_tru, ...) are read as the default aspects.",
        ("predictions", "references", "aspects"),
        with_defaults(
            aspect_sentiment_score,
            Option("min_rating", "number", info="lowest rating (0 means absent)"),
            Option("max_rating", "number", info="highest rating"),
            Option("zero_division", "number", info="F1 of an aspect absent on both sides"),
        ),
        _compute_aspects,
        (
            "0, 4, 0, 5, 0, 0\n3, 0, 0, 4, 2, 0\n0, 0, 5, 5, 0, 0",
            "0, 5, 0, 5, 0, 0\n3, 0, 0, 0, 2, 0\n0, 0, 4, 5, 0, 0",
            ", ".join(DEFAULT_ASPECTS),
        ),
        {
            "score": "mean over aspects of f1 x r2",
            "f1": "F1 of the aspect's presence (rating != 0)",
            "r2": "1 - squared rating error / range², on reviews both sides rate",
            "both": "reviews where both sides rate the aspect",
        },
    ),
}
# The families comparing keyword lists with gold keywords, side by side in the combined Space.
COMBINED = tuple(
    name for name, family in FAMILIES.items() if "references" in family.inputs and "aspects" not in family.inputs
)


def meaning(family: Family, key: str) -> str:
    """The one-line meaning of output `key` ("ndcg@5" -> "ndcg", "f1_food" -> "f1")."""
    base = key.split("@")[0]
    if base not in family.meanings and "_" in base and "aspects" in family.inputs:
        base = base.split("_")[0]
    return family.meanings.get(base, "")


def evaluate_family(name: str, data: dict[str, Any], options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list]]:
    """(summary, per-example columns) for one family; per aspect for the aspect score, whose
    R2 is NO_OVERLAP where no review is rated on both sides."""
    result = FAMILIES[name].compute(data, options)
    per_example = result.pop("per_example", {})
    if name == "aspect_sentiment_score":
        aspects = data["aspects"]
        both = [
            sum(1 for p, r in zip(data["predictions"], data["references"]) if p[j] and r[j])
            for j in range(len(aspects))
        ]
        per_example = {
            "aspect": list(aspects),
            "f1": [result[f"f1_{a}"] for a in aspects],
            "r2": [result[f"r2_{a}"] if n else NO_OVERLAP for a, n in zip(aspects, both)],
            "score": [result[f"score_{a}"] for a in aspects],
            "both": both,
        }
        result = {"score": result["score"]}
    return result, per_example
