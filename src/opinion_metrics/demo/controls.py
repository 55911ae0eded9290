"""The metric families as the Spaces show them: controls, prefilled examples, the meaning
of each output, and the call into the library."""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.tuples import PRESETS
from ..core.validation import parse_top_k
from ..embeddings import encoder as semantic
from ..embeddings.encoder import DEFAULT_MODEL, clear_embedding_cache

# Light imports: torch, sentence-transformers and VADER load on first use.
from ..families import registry as declared
from ..families.aspect_sentiment_score import DEFAULT_ASPECTS, aspect_sentiment_score
from ..families.keyword_diversity import keyword_diversity
from ..families.keyword_prf import keyword_prf
from ..families.semantic_keyword_prf import semantic_keyword_prf
from ..families.sentiment_appropriateness import sentiment_appropriateness
from ..families.sentiment_tuple_prf import sentiment_tuple_prf
from ..families.weighted_keyword_prf import weighted_keyword_prf
from ..io.table import shortened
from .parsing import takes_tuples, whole_number

# The Space owner's allow-list: model names or paths separated by commas.
MODELS_VARIABLE = "OPINION_METRICS_MODELS"
LEFT_OUT = "left out"  # a per-example value a presence view leaves out: "left out (no present gold keyword)"
MAX_LOADED_MODELS = 2
NO_OVERLAP = "n/a (no overlap)"


@dataclass
class Option:
    """One metric option as a UI control; `name` is also its API parameter (and its label
    unless `label` is given). Built from the library's declaration (`controls`)."""

    name: str
    kind: str  # "choice", "flag", "number", "slider", "text", "model" (a choice of allowed_models())
    choices: Sequence[Any] = ()
    info: str = ""
    bounds: tuple[float, float, float] = (0.0, 1.0, 0.05)
    default: Any = None
    label: str = ""


# Options a visitor does not set: objects, one run's resources, and the resampling's size and
# seed (the library defaults: reproducible intervals).
NOT_IN_THE_SPACES = frozenset(
    {
        "sentiment",
        "return_per_example",
        "block_elements",
        "show_progress",
        "batch_size",
        "device",
        "workers",
        "n_resamples",
        "random_state",
        "bootstrap",
        "aspects",
    }
)
# The level of the intervals the checkbox turns on (their resamples and seed: the library's defaults).
INTERVAL_LEVEL = 0.95
# UI-only details: how a library default of None is shown, and the sliders' bounds.
_NONE_SHOWN = {"stemmer": "none", "top_k": "M", "projections": "default", "label_map": "default"}
_SLIDERS = {"k": (1, 20, 1), "threshold": (0.0, 1.0, 0.01)}
_TOP_K_INFO = "; type M (all), O (as many as gold keywords) or an integer"
_ELEMENTS_INFO = (
    " (here a preset: aope is aspect, opinion; aste aspect, opinion, sentiment; tasd aspect, category, sentiment; "
    "asqp aspect, category, sentiment, opinion; acos aspect, category, opinion, sentiment)"
)


# The controls' labels in words; a label that is not the option's name gives the name (the API
# parameter, the CLI flag's) in its info text.
_LABELS = {
    "normalize": "normalization",
    "one_to_one": "one-to-one matching",
    "top_k": "top K predictions",
    "zero_division": "value of 0 / 0",
    "k": "rank cut-off k",
    "clip_scores": "clip scores into [0, 1]",
    "threshold": "cosine threshold",
    "mapping": "sentiment mapping",
    "min_rating": "lowest rating",
    "max_rating": "highest rating",
    "precision": "model's number format",
}


def _shown(name: str, value: Any) -> Any:
    return _NONE_SHOWN.get(name, "none") if value is None else value


def controls(name: str) -> list[Option]:
    """Family `name`'s controls, in the declared order: the declared options but those in
    NOT_IN_THE_SPACES, with their kind, choices, meaning (as the control's info) and the
    library's default."""
    family = declared.FAMILIES[name]
    options = []
    for option in family.options:
        if option.name in NOT_IN_THE_SPACES:
            continue
        default = family.defaults[option.name]
        control = Option(option.name, option.kind, info=option.meaning, default=_shown(option.name, default))
        if option.name == "confidence_level":
            label = f"confidence intervals ({INTERVAL_LEVEL:.0%})"
            resampling = (
                f"{family.defaults['n_resamples']} resamples of the examples, seed {family.defaults['random_state']}"
            )
            info = f"a bootstrap percentile interval [low, high] of each value ({resampling})"
            control = replace(control, kind="flag", default=default is not None, label=label, info=info)
        elif option.name == "model":
            control = replace(control, kind="model", default=DEFAULT_MODEL, info="the models this Space serves")
        elif option.name == "elements":  # the presets (the library also takes element names)
            control = replace(control, kind="choice", choices=tuple(PRESETS), info=option.meaning + _ELEMENTS_INFO)
        elif option.kind == "choice":
            control.choices = tuple(_shown(option.name, choice) for choice in option.choices)
        elif option.name in _SLIDERS:
            control = replace(control, kind="slider", bounds=_SLIDERS[option.name])
        elif option.kind == "top_k":
            control = replace(control, kind="text", info=option.meaning + _TOP_K_INFO)
        elif option.kind == "int":
            control.kind = "number"
        if option.name in _LABELS:
            control = replace(control, label=_LABELS[option.name], info=f"{control.info} (API: {option.name})")
        options.append(control)
    return options


@dataclass
class Family:
    name: str
    title: str
    description: str
    inputs: Sequence[str]  # "predictions", ("references", and "texts" or "aspects")
    options: list[Option]
    compute: Callable[..., dict[str, Any]]
    example: Sequence[str]  # the text boxes' prefilled values, in the order of `inputs`
    meanings: dict[str, str]  # output key pattern ("ndcg@{k}", "f1_{aspect}") -> one line


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
            semantic.unload_model(name, device)
        self.models[name] = model
        while len(self.models) > self.size:
            self.models.popitem(last=False)
        return model


MODELS = ModelPool()


def keyword_options(options: dict[str, Any]) -> dict[str, Any]:
    """The controls' values as the library's arguments (the intervals checkbox as a level)."""
    options = dict(options)
    for name, shown in (("stemmer", "none"), ("format", "none"), ("projections", "default"), ("label_map", "default")):
        value = options.get(name)
        # a text box shown as "default" is its default cleared too (empty or spaces), never an empty value
        cleared = shown == "default" and isinstance(value, str) and value.strip() in ("", shown)
        if name in options and (value == shown or cleared):
            options[name] = None
    if "top_k" in options:
        options["top_k"] = parse_top_k(options["top_k"])
    if "confidence_level" in options:
        options["confidence_level"] = INTERVAL_LEVEL if options["confidence_level"] else None
    return options


def presence_texts(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The `texts` argument, with a clear error when `presence` needs texts and none came."""
    presence = options.get("presence", "all")
    if presence != "all" and not data.get("texts"):
        raise ValueError(
            f"presence {presence!r} needs the texts: one review per line in the texts (reviews) box, "
            "or a `texts` or `review` column in an uploaded file"
        )
    return {"texts": data.get("texts")}


def _compute_keyword_prf(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    texts = presence_texts(data, options)
    return keyword_prf(
        data["predictions"], data["references"], return_per_example=True, **texts, **keyword_options(options)
    )


def _compute_weighted(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    if data.get("scores") is None:
        raise ValueError('weighted metrics need a score per keyword: "keyword (0.8); other (0.3)"')
    texts = presence_texts(data, options)
    options = keyword_options(options)
    options["k"] = whole_number(options["k"], "k")
    return weighted_keyword_prf(
        data["predictions"], data["scores"], data["references"], return_per_example=True, **texts, **options
    )


def _compute_semantic(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    texts = presence_texts(data, options)
    options = keyword_options(options)
    options["model"] = MODELS.get(options["model"])
    try:
        return semantic_keyword_prf(
            data["predictions"], data["references"], return_per_example=True, **texts, **options
        )
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
    options = keyword_options(options)
    for name in ("min_rating", "max_rating"):
        options[name] = whole_number(options[name], name)
    return aspect_sentiment_score(data["predictions"], data["references"], aspects=data["aspects"], **options)


def tuple_inputs(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The tuple family's predictions and references: each predictions line's tuples, or with a
    `format` (the library's option) its text; a line that is not tuples without one is an error."""
    if options.get("format") is not None:
        return {"predictions": data["generated"], "references": data["references"]}
    for index, row in enumerate(data["predictions"]):
        if isinstance(row, str):
            raise ValueError(
                f"predictions: example {index}: {shortened(row.strip())!r} is not a list of tuples (JSON such as "
                '[["pizza", "over cooked", "NEG"]]); a model\'s text needs its format: paraphrase or tuples'
            )
    return {"predictions": data["predictions"], "references": data["references"]}


def _compute_tuples(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    options = keyword_options(options)
    return sentiment_tuple_prf(**tuple_inputs(data, options), return_per_example=True, **options)


def _family(
    name: str, description: str, inputs: Sequence[str], compute: Callable[..., dict[str, Any]], example: Sequence[str]
) -> Family:
    """A family as the Space shows it: title, controls and output meanings from the declaration."""
    return Family(
        name,
        declared.FAMILIES[name].title,
        description,
        inputs,
        controls(name),
        compute,
        example,
        declared.output_meanings(name),
    )


_PRESENCE_NOTE = (
    " With presence *present*, only keywords that occur in the review count (*absent*: only the others); "
    "texts are needed then."
)

FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        _family(
            "keyword_prf",
            "Approximate-match keyword P/R/F1 with one-to-one matching: in the example, *social satire* "
            "matches *satire* and *dark comedy* matches *comedy*, but *pizza* matches nothing. The reviews "
            "(texts) never mention *class struggle*, *empire* or *pizza*: with presence *present* they are "
            "left out, with *absent* only they count.",
            ("predictions", "references", "texts"),
            _compute_keyword_prf,
            (
                "social satire; dark comedy; pizza\nspace opera; jedi knight",
                "satire; class struggle; comedy\nspace opera; jedi; empire",
                "A biting social satire, and a dark comedy too.\nA space opera: a young jedi knight fights on.",
            ),
        ),
        _family(
            "weighted_keyword_prf",
            "Confidence-weighted P/R/F1 and rankings graded by gold keyword importance (gold keywords "
            "most important first). The example's two lines rank the same keywords differently: the "
            "second puts the gold keywords first with the highest scores, so its nDCG@5 and MAP@5 are 1."
            + _PRESENCE_NOTE,
            ("predictions", "references", "texts"),
            _compute_weighted,
            (
                "scam (0.9); family (0.8); poverty (0.7); cinematography (0.6); fraud (0.5)\n"
                "fraud (0.9); poverty (0.8); scam (0.7); family (0.6); cinematography (0.5)",
                "fraud; poverty; scam\nfraud; poverty; scam",
                "A poor family falls for a scam, and the fraud unravels.\nFraud, scam and poverty, beautifully shot.",
            ),
        ),
        _family(
            "semantic_keyword_prf",
            "Keywords match when their embeddings are similar (all-MiniLM-L6-v2, offline): in the example, "
            "*scary movie* matches *horror film* and *funny* matches *hilarious*, which no string match finds."
            + _PRESENCE_NOTE,
            ("predictions", "references", "texts"),
            _compute_semantic,
            (
                "scary movie; funny; pizza\nwar film; zombie apocalypse",
                "horror film; hilarious; family drama\nwar movie; zombies; survival",
                "A hilarious horror film.\nA war movie full of zombies.",
            ),
        ),
        _family(
            "sentiment_appropriateness",
            "Does the sentiment (VADER) of the predicted keywords fit the gold keywords and the review? "
            "In the example, lines 1 and 2 fit their review (high per-example values); line 3 gives "
            "cheerful keywords to a harsh review (near 0).",
            ("predictions", "references", "texts"),
            _compute_sentiment,
            (
                "great acting; moving story\nboring plot\nwonderful cast; happy ending",
                "masterpiece; beautiful\ndull; waste of time\nboring; terrible",
                "A moving, beautiful film.\nDull and far too long.\nBoring and terrible.",
            ),
        ),
        _family(
            "aspect_sentiment_score",
            "Per-aspect presence F1 x rating R2. One line per review: one rating per aspect, 0 = absent. "
            "Upload columns: one per aspect (gold) and `pred_` + aspect (predicted); the tourism data's "
            "Vietnamese names (giai_tri, luu_tru, ...) are read as the default aspects.",
            ("predictions", "references", "aspects"),
            _compute_aspects,
            (
                "0, 4, 0, 5, 0, 0\n3, 0, 0, 4, 2, 0\n0, 0, 5, 5, 0, 0",
                "0, 5, 0, 5, 0, 0\n3, 0, 0, 0, 2, 0\n0, 0, 4, 5, 0, 0",
                ", ".join(DEFAULT_ASPECTS),
            ),
        ),
        _family(
            "keyword_diversity",
            "How varied one system's keywords are, without gold keywords: in the example, the first line "
            "says *star wars* twice (*Star Wars* and *star wars!* normalize alike) and *space* twice among "
            "its words; the second line repeats nothing.",
            ("predictions",),
            _compute_diversity,
            ("Star Wars; star wars!; space opera; space\nscam; fraud; swindle; con artist",),
        ),
        _family(
            "sentiment_tuple_prf",
            "Aspect-based sentiment tuples matched one to one: one example per line, its tuples as JSON (elements "
            "in the order the *elements* preset says: aste is aspect, opinion, sentiment). In the example, *POS* "
            "and *positive* are the same label; *over cooked* is not *overcooked* (exact match: 0 for that "
            "tuple; overlap: no shared token either), but the aspect alone (aspect_f1) is right. With a *format*, "
            "the predictions are a model's text: `(pizza, cold, negative); (staff, rude, negative)` (tuples) or "
            "ABSA-QUAD's paraphrases (asqp, acos); what cannot be read counts as a wrong tuple (*unparsed*).",
            ("predictions", "references"),
            _compute_tuples,
            (
                '[["pizza", "overcooked", "negative"], ["staff", "friendly", "POS"]]\n'
                '[["wine list", "long", "positive"], ["music", "loud", "negative"]]\n[]',
                '[["pizza", "over cooked", "negative"], ["staff", "friendly", "positive"]]\n'
                '[["wine list", "long", "positive"]]\n[["dessert", "great", "positive"]]',
            ),
        ),
    )
}
# Every family of keyword lists, side by side in the combined Space (all but the aspect score and the tuples).
COMBINED = tuple(name for name, family in FAMILIES.items() if "aspects" not in family.inputs and not takes_tuples(name))
# Per-aspect columns of the aspect table (not output keys of their own).
_ASPECT_COLUMNS = {"both": "reviews where both sides rate the aspect"}


def _pattern(key: str) -> re.Pattern[str]:
    return re.compile(re.escape(key).replace(r"\{k\}", r"\d+").replace(r"\{aspect\}", ".+") + "$")


def meaning(family: Family, key: str) -> str:
    """The declared one-line meaning of output `key` ("ndcg@5" -> that of "ndcg@{k}", "f1_food"
    -> that of "f1_{aspect}", "f1" of the aspect table -> that of "f1_{aspect}")."""
    for pattern, line in family.meanings.items():
        if _pattern(pattern).match(key) or pattern.split("_{")[0] == key and "{aspect}" in pattern:
            return line
    return _ASPECT_COLUMNS.get(key, "")


def split_intervals(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """(values, intervals): the flat `<key>_ci_low` / `<key>_ci_high` keys as (low, high) per key."""
    values = {key: value for key, value in result.items() if not key.endswith(("_ci_low", "_ci_high"))}
    intervals = {
        key: (result[f"{key}_ci_low"], result[f"{key}_ci_high"]) for key in values if f"{key}_ci_low" in result
    }
    return values, intervals


def evaluate_family(name: str, data: dict[str, Any], options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list]]:
    """(summary, per-example columns) for one family, the summary with its `<key>_ci_low` /
    `<key>_ci_high` keys when intervals are on, an example that `presence` leaves out said so;
    per aspect for the aspect score (its summary keeps every key: the per-aspect view of several
    systems), whose R2 (and its interval) is NO_OVERLAP where no review is rated on both sides."""
    result = FAMILIES[name].compute(data, options)
    per_example = result.pop("per_example", {})
    presence = options.get("presence", "all")
    if presence != "all":  # docs/definitions.md section 9: an example without such gold keywords is left out
        left_out = f"{LEFT_OUT} (no {presence} gold keyword)"
        per_example = {key: [left_out if v is None else v for v in values] for key, values in per_example.items()}
    if name == "aspect_sentiment_score":
        aspects = data["aspects"]
        both = [
            sum(1 for p, r in zip(data["predictions"], data["references"]) if p[j] and r[j])
            for j in range(len(aspects))
        ]
        per_example = {"aspect": list(aspects)}
        for column in ("f1", "r2", "score"):
            for suffix in ("", "_ci_low", "_ci_high"):
                if f"{column}_{aspects[0]}{suffix}" in result:
                    per_example[column + suffix] = [
                        result[f"{column}_{a}{suffix}"] if n or column != "r2" else NO_OVERLAP
                        for a, n in zip(aspects, both)
                    ]
        per_example["both"] = both
    return result, per_example
