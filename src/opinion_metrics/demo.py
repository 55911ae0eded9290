"""The Gradio demo Spaces: one app per metric family and one that shows the keyword
families side by side. `spaces/<name>/app.py` only calls `build_app(name)`.

Input parsing and the computations behind each app are plain functions (tested without
a browser); gradio and matplotlib are imported only when an app or a plot is built.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .aspects import DEFAULT_ASPECTS, aspect_sentiment_score
from .keyword_prf import keyword_prf
from .tables import load_table, rating_rows
from .weighted_keyword_prf import weighted_keyword_prf

KEYWORD_SEPARATOR = ";"
# "keyword (0.8)": a trailing number in parentheses is a score; other parentheses stay.
_SCORED = re.compile(r"^(?P<keyword>.*?)\s*\((?P<score>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\)\s*$")


# --- parsing -------------------------------------------------------------------------


def _lines(text: str | None) -> list[str]:
    lines = (text or "").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def parse_keyword_lines(
    text: str | None, name: str = "predictions"
) -> tuple[list[list[str]], list[list[float]] | None]:
    """One example per line, keywords separated by ';', each optionally with a score in
    parentheses: "social satire (0.8); pizza (0.1)". Returns keywords and scores (None when
    no keyword has a score; otherwise every keyword needs one)."""
    keywords: list[list[str]] = []
    scores: list[list[float]] = []
    scored_lines = unscored_lines = 0
    for number, line in enumerate(_lines(text), start=1):
        row, row_scores = [], []
        for item in line.split(KEYWORD_SEPARATOR):
            item = item.strip()
            if not item:
                continue
            match = _SCORED.match(item)
            if match:
                row_scores.append(float(match["score"]))
                item = match["keyword"]
            row.append(item)
        if row_scores and len(row_scores) != len(row):
            raise ValueError(f"{name}, line {number}: give a score to every keyword or to none")
        scored_lines += bool(row_scores)
        unscored_lines += bool(row) and not row_scores
        keywords.append(row)
        scores.append(row_scores)
    if scored_lines and unscored_lines:
        raise ValueError(f"{name}: some lines have scores and others not; give scores everywhere or nowhere")
    return keywords, (scores if scored_lines else None)


def parse_rating_lines(text: str | None, name: str = "predictions") -> list[list[int]]:
    """One example per line, one integer rating per aspect, separated by commas or spaces."""
    rows = []
    for number, line in enumerate(_lines(text), start=1):
        cells = [cell for cell in re.split(r"[,\s]+", line.strip()) if cell]
        try:
            rows.append([int(cell) for cell in cells])
        except ValueError:
            raise ValueError(
                f"{name}, line {number}: ratings must be integers separated by commas, got {line!r}"
            ) from None
    return rows


def parse_names(text: str | None) -> list[str]:
    return [name.strip() for name in re.split(r"[,;\n]", text or "") if name.strip()]


def read_upload(path: str | Path) -> dict[str, list[Any]]:
    """Columns of an uploaded CSV / TSV / JSONL / JSON / Parquet file (list cells in CSV: ';')."""
    return load_table(Path(path), ["predictions", "references"], ["scores", "prediction_sentiments"])


def _same_count(**columns: Sequence[Any]) -> None:
    counts = {name: len(column) for name, column in columns.items() if column is not None}
    if len(set(counts.values())) > 1:
        described = ", ".join(f"{name}: {n}" for name, n in counts.items())
        raise ValueError(f"every input needs one line per example ({described})")
    if not any(counts.values()):
        raise ValueError("no examples: type one example per line, or upload a file")


# --- families ------------------------------------------------------------------------


@dataclass
class Option:
    """One metric option as a UI control."""

    name: str
    kind: str  # "choice", "flag", "number", "slider", "text"
    default: Any
    choices: Sequence[Any] = ()
    info: str = ""
    bounds: tuple[float, float, float] = (0.0, 1.0, 0.05)


@dataclass
class Family:
    name: str
    title: str
    description: str
    inputs: Sequence[str]  # of "predictions", "references", "texts", "aspects"
    options: list[Option]
    compute: Callable[..., dict[str, Any]]
    examples: list[list[Any]] = field(default_factory=list)


_MATCH = Option("match", "choice", "substring", ("substring", "token", "exact"), "how keywords match")
_NORMALIZE = Option("normalize", "choice", "default", ("default", "ascii", "none"), "keyword normalization")
_STEMMER = Option("stemmer", "choice", "none", ("none", "porter"), "stem each token")
_AVERAGE = Option("average", "choice", "macro", ("macro", "micro"), "mean of examples, or pooled counts")
_TOP_K = Option("top_k", "text", "M", info="M (all), O (as many as gold keywords) or an integer")
_ZERO = Option("zero_division", "number", 0.0, info="value of a ratio with a zero denominator")


def _top_k(value: str) -> int | str | None:
    value = str(value).strip()
    if value.upper() in ("", "M", "NONE"):
        return None
    if value.upper() == "O":
        return "O"
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"top_k must be M, O or a positive integer, got {value!r}") from None


def whole_number(value: Any, label: str) -> int:
    """A control's value that must be an integer: 3 or 3.0, never 2.5 or True (no rounding)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise ValueError(f"{label} must be an integer, got {value!r}")
    return int(value)


def _keyword_options(options: dict[str, Any]) -> dict[str, Any]:
    options = dict(options)
    if "stemmer" in options:
        options["stemmer"] = None if options["stemmer"] == "none" else options["stemmer"]
    if "top_k" in options:
        options["top_k"] = _top_k(options["top_k"])
    return options


def _compute_keyword_prf(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    return keyword_prf(data["predictions"], data["references"], return_per_example=True, **_keyword_options(options))


def _compute_weighted(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    if data.get("scores") is None:
        raise ValueError('weighted metrics need a score per keyword: "keyword (0.8); other (0.3)"')
    options = _keyword_options(options)
    options["k"] = whole_number(options["k"], "k")
    return weighted_keyword_prf(
        data["predictions"], data["scores"], data["references"], return_per_example=True, **options
    )


def _compute_semantic(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    from .semantic import semantic_keyword_prf

    return semantic_keyword_prf(
        data["predictions"], data["references"], return_per_example=True, **_keyword_options(options)
    )


def _compute_sentiment(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    from .sentiment import sentiment_appropriateness

    return sentiment_appropriateness(
        data["predictions"],
        data["references"],
        texts=data.get("texts"),
        prediction_sentiments=data.get("prediction_sentiments"),
        return_per_example=True,
        **_keyword_options(options),
    )


def _compute_aspects(data: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    options = dict(options)
    for name in ("min_rating", "max_rating"):
        options[name] = whole_number(options[name], name.replace("_", " "))
    return aspect_sentiment_score(data["predictions"], data["references"], aspects=data["aspects"], **options)


FAMILIES: dict[str, Family] = {
    "keyword_prf": Family(
        "keyword_prf",
        "Keyword precision / recall / F1",
        "Approximate-match keyword P/R/F1 with one-to-one maximum matching.",
        ("predictions", "references"),
        [
            _MATCH,
            Option("one_to_one", "flag", True, info="maximum one-to-one matching"),
            _AVERAGE,
            _TOP_K,
            _NORMALIZE,
            _STEMMER,
            _ZERO,
        ],
        _compute_keyword_prf,
        [
            [
                "social satire; dark comedy; pizza\nspace opera; jedi knight",
                "satire; class struggle; comedy\nspace opera; jedi; empire",
            ],
            ["war; star wars; wars", "star wars"],
        ],
    ),
    "weighted_keyword_prf": Family(
        "weighted_keyword_prf",
        "Weighted keyword P/R/F1, nDCG@k, MAP@k",
        "Confidence-weighted P/R/F1 and rankings graded by gold keyword importance. Give each keyword a score.",
        ("predictions", "references"),
        [
            _MATCH,
            Option("one_to_one", "flag", True, info="maximum-weight one-to-one matching"),
            _AVERAGE,
            _TOP_K,
            Option("k", "slider", 5, bounds=(1, 20, 1), info="rank cut-off of nDCG and MAP"),
            Option("relevance", "choice", "graded", ("graded", "binary")),
            Option("clip_scores", "flag", False, info="clip scores into [0, 1]"),
            _NORMALIZE,
            _STEMMER,
            _ZERO,
        ],
        _compute_weighted,
        [
            [
                "scam (0.9); family (0.8); poverty (0.7); cinematography (0.6); fraud (0.5)\n"
                "fraud (0.9); poverty (0.8); scam (0.7); family (0.6); cinematography (0.5)",
                "fraud; poverty; scam\nfraud; poverty; scam",
            ],
        ],
    ),
    "semantic_keyword_prf": Family(
        "semantic_keyword_prf",
        "Semantic keyword P/R/F1",
        "Embedding similarity (all-MiniLM-L6-v2, offline) instead of string matching.",
        ("predictions", "references"),
        [
            Option("threshold", "slider", 0.75, bounds=(0.0, 1.0, 0.01), info="minimum cosine similarity"),
            Option("one_to_one", "flag", False),
            _AVERAGE,
            _TOP_K,
            _NORMALIZE,
            _STEMMER,
            _ZERO,
            Option("model", "text", "sentence-transformers/all-MiniLM-L6-v2", info="a model name or path"),
        ],
        _compute_semantic,
        [["scam; family drama; pizza\nspace opera; jedi knight", "fraud; family; poverty\nspace opera; jedi; empire"]],
    ),
    "sentiment_appropriateness": Family(
        "sentiment_appropriateness",
        "Sentiment Appropriateness Score",
        "Does the sentiment (VADER) of the predicted keywords fit the gold keywords and the review?",
        ("predictions", "references", "texts"),
        [
            Option("mapping", "choice", "weighted", ("weighted", "compound"), "VADER mapping into [0, 1]"),
            _NORMALIZE,
            _STEMMER,
        ],
        _compute_sentiment,
        [
            [
                "great acting; moving story\nboring plot",
                "masterpiece; beautiful\ndull; waste of time",
                "A moving, beautiful film.\nDull and far too long.",
            ]
        ],
    ),
    "aspect_sentiment_score": Family(
        "aspect_sentiment_score",
        "Aspect sentiment score",
        "Per-aspect presence F1 x rating R2. One line per review: one rating per aspect, 0 = absent.",
        ("predictions", "references", "aspects"),
        [
            Option("min_rating", "number", 1),
            Option("max_rating", "number", 5),
            Option("zero_division", "number", 1.0, info="F1 of an aspect absent on both sides"),
        ],
        _compute_aspects,
        [
            [
                "0, 4, 0, 5, 0, 0\n3, 0, 0, 4, 2, 0\n0, 0, 5, 5, 0, 1",
                "0, 5, 0, 5, 0, 0\n3, 0, 0, 0, 2, 0\n0, 0, 4, 5, 0, 0",
                ", ".join(DEFAULT_ASPECTS),
            ]
        ],
    ),
}


def collect_inputs(family: Family, predictions: str, references: str, extra: str, upload: str | None) -> dict[str, Any]:
    """The metric inputs from the typed text boxes, or from an uploaded file when given."""
    data: dict[str, Any] = {}
    if family.name == "aspect_sentiment_score":
        data["aspects"] = parse_names(extra) or list(DEFAULT_ASPECTS)
        if upload:
            table = read_upload(upload)
            missing = [a for a in data["aspects"] if a not in table or f"pred_{a}" not in table]
            if missing:
                raise ValueError(
                    f"the file needs a column per aspect (gold) and pred_<aspect> (predicted); missing for {missing}"
                )
            data["references"] = rating_rows(table, data["aspects"])
            data["predictions"] = rating_rows(table, data["aspects"], "pred_")
        else:
            data["predictions"] = parse_rating_lines(predictions, "predictions")
            data["references"] = parse_rating_lines(references, "references")
        _same_count(predictions=data["predictions"], references=data["references"])
        return data
    if upload:
        table = read_upload(upload)
        for column in ("predictions", "references"):
            if column not in table:
                raise ValueError(f"the file needs a {column!r} column (found: {', '.join(table)})")
        data["predictions"], data["references"] = table["predictions"], table["references"]
        data["scores"] = table.get("scores")
        # Confidence scores are never sentiments (SPEC deviation 7): only a column named so.
        data["prediction_sentiments"] = table.get("prediction_sentiments")
        data["texts"] = table.get("texts", table.get("review"))
    else:
        data["predictions"], data["scores"] = parse_keyword_lines(predictions, "predictions")
        data["references"], _ = parse_keyword_lines(references, "references")
        data["texts"] = (_lines(extra) or None) if "texts" in family.inputs else None
    _same_count(predictions=data["predictions"], references=data["references"], texts=data.get("texts"))
    return data


def evaluate_family(
    name: str, data: dict[str, Any], options: dict[str, Any]
) -> tuple[dict[str, float], dict[str, list]]:
    """(summary, per-example columns) for one family; per aspect for the aspect score."""
    result = FAMILIES[name].compute(data, options)
    per_example = result.pop("per_example", {})
    if name == "aspect_sentiment_score":
        aspects = data["aspects"]
        per_example = {"aspect": list(aspects)}
        per_example.update({key: [result[f"{key}_{a}"] for a in aspects] for key in ("f1", "r2", "score")})
    return result, per_example


# --- plots -----------------------------------------------------------------------------


def _figure(width: float = 6.0, height: float = 3.2) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def plot_distribution(values: Sequence[float | None], label: str) -> Any:
    """Histogram of per-example values in [0, 1]."""
    figure, axes = _figure()
    present = [v for v in values if v is not None]
    axes.hist(present, bins=[i / 10 for i in range(11)], color="#4c72b0", edgecolor="white")
    axes.set_xlim(0, 1)
    axes.set_xlabel(f"per-example {label}")
    axes.set_ylabel("examples")
    axes.set_title(
        f"{label}: mean {sum(present) / len(present):.3f} over {len(present)} examples" if present else label
    )
    return figure


def plot_ndcg_by_rank(data: dict[str, Any], options: dict[str, Any], max_k: int = 10) -> Any:
    """Mean nDCG@k for k = 1..max_k: where in the ranking the matches come. The corpus is
    prepared and matched once; only the cut-off changes."""
    from .averaging import mean_or
    from .matching import corpus_neighbors
    from .preparation import prepare_corpus
    from .weighted_keyword_prf import ranking_scores

    preparation = _keyword_options({key: options[key] for key in ("normalize", "stemmer") if key in options})
    corpus = prepare_corpus(data["predictions"], data["references"], **preparation)
    neighbors = corpus_neighbors(corpus, options.get("match", "substring"))
    n_gold = corpus.references.sizes.tolist()
    relevance, zero_division = options.get("relevance", "graded"), float(options.get("zero_division", 0.0))
    ks = list(range(1, max_k + 1))
    values = [
        mean_or([v for v in ranking_scores(neighbors, n_gold, k, relevance)[0] if v is not None], zero_division)
        for k in ks
    ]
    figure, axes = _figure()
    axes.plot(ks, values, marker="o", color="#dd8452")
    axes.set_ylim(0, 1.05)
    axes.set_xticks(ks)
    axes.set_xlabel("k")
    axes.set_ylabel("mean nDCG@k")
    axes.set_title("nDCG by rank cut-off")
    return figure


def plot_aspects(result: dict[str, float], aspects: Sequence[str]) -> Any:
    """Per-aspect F1 and R2 bars."""
    figure, axes = _figure(7.0, 3.4)
    positions = range(len(aspects))
    axes.bar([p - 0.2 for p in positions], [result[f"f1_{a}"] for a in aspects], 0.4, label="presence F1")
    axes.bar([p + 0.2 for p in positions], [result[f"r2_{a}"] for a in aspects], 0.4, label="rating R2")
    axes.set_xticks(list(positions), aspects, rotation=20, ha="right")
    axes.set_ylim(0, 1.05)
    axes.legend(loc="lower right")
    axes.set_title(f"score {result['score']:.3f}")
    return figure


def plot_for(
    name: str, data: dict[str, Any], options: dict[str, Any], summary: dict[str, float], per_example: dict
) -> Any:
    if name == "aspect_sentiment_score":
        return plot_aspects(summary, data["aspects"])
    if name == "weighted_keyword_prf":
        return plot_ndcg_by_rank(data, options)
    key = {"keyword_prf": "f1", "semantic_keyword_prf": "soft_f1"}.get(name, "sas_from_keywords")
    if key not in per_example:
        key = next(iter(per_example), None)
    return plot_distribution(per_example.get(key, []), key or name)


# --- the apps ----------------------------------------------------------------------------


def _tables(summary: dict[str, float], per_example: dict[str, list]) -> tuple[Any, Any]:
    import pandas as pd

    summary_table = pd.DataFrame({"metric": list(summary), "value": [round(v, 4) for v in summary.values()]})
    if "aspect" in per_example:  # the aspect score is corpus-level: one row per aspect instead
        rows = pd.DataFrame({"aspect": per_example.pop("aspect")})
    else:
        rows = pd.DataFrame({"example": range(1, 1 + max((len(v) for v in per_example.values()), default=0))})
    for key, values in per_example.items():
        rows[key] = [None if v is None else round(v, 4) for v in values]
    return summary_table, rows


def run(
    name: str, predictions: str, references: str, extra: str, upload: str | None, *values: Any
) -> tuple[Any, Any, Any]:
    """The app's event handler: parse, compute, tabulate, plot. Errors become gr.Error."""
    import gradio as gr

    family = FAMILIES[name]
    options = {option.name: value for option, value in zip(family.options, values)}
    try:
        data = collect_inputs(family, predictions, references, extra, upload)
        summary, per_example = evaluate_family(name, data, options)
        figure = plot_for(name, data, options, summary, per_example)
    except (ValueError, ImportError) as error:
        raise gr.Error(str(error), print_exception=False) from None
    if not summary:
        raise gr.Error("nothing to compute: no example has both predictions and something to compare them with")
    return (*_tables(summary, per_example), figure)


def _control(option: Option) -> Any:
    import gradio as gr

    label = option.name.replace("_", " ")
    if option.kind == "choice":
        return gr.Dropdown(list(option.choices), value=option.default, label=label, info=option.info or None)
    if option.kind == "flag":
        return gr.Checkbox(value=option.default, label=label, info=option.info or None)
    if option.kind == "slider":
        low, high, step = option.bounds
        return gr.Slider(low, high, value=option.default, step=step, label=label, info=option.info or None)
    if option.kind == "number":
        return gr.Number(value=option.default, label=label, info=option.info or None)
    return gr.Textbox(value=str(option.default), label=label, info=option.info or None)


_PLACEHOLDERS = {
    "predictions": "one example per line; keywords separated by ';'; optional score: keyword (0.8)",
    "references": "one example per line; gold keywords separated by ';', most important first",
    "texts": "optional: the review of each example, one per line",
    "aspects": "aspect names, comma-separated (default: the six tourism aspects)",
}


def build_app(name: str) -> Any:
    """The Gradio Blocks app of one family (what spaces/<name>/app.py launches)."""
    import gradio as gr

    family = FAMILIES[name]
    with gr.Blocks(title=f"{family.title} · opinion-metrics") as app:
        gr.Markdown(f"# {family.title}\n{family.description} Definitions and options: see the metric card.")
        with gr.Row():
            with gr.Column(scale=3):
                predictions = gr.Textbox(label="predictions", lines=5, placeholder=_PLACEHOLDERS["predictions"])
                references = gr.Textbox(label="references", lines=5, placeholder=_PLACEHOLDERS["references"])
                extra_name = "texts" if "texts" in family.inputs else "aspects"
                extra = gr.Textbox(
                    label=extra_name,
                    lines=3 if extra_name == "texts" else 1,
                    placeholder=_PLACEHOLDERS[extra_name],
                    visible=extra_name in family.inputs,
                )
                upload = gr.File(
                    label="or upload CSV / JSONL / Parquet",
                    file_types=[".csv", ".tsv", ".jsonl", ".json", ".parquet"],
                    type="filepath",
                )
            with gr.Column(scale=2):
                controls = [_control(option) for option in family.options]
                button = gr.Button("Compute", variant="primary")
        with gr.Row():
            summary = gr.Dataframe(label="results", interactive=False)
            figure = gr.Plot(label="plot")
        per_example = gr.Dataframe(
            label="per aspect" if name == "aspect_sentiment_score" else "per example", interactive=False
        )
        gr.Examples(family.examples, [predictions, references, extra][: len(family.examples[0])], label="examples")

        def handler(*args: Any) -> tuple[Any, Any, Any]:
            return run(name, *args)

        # Named parameters for the Space's API page and gradio_client (instead of param_0...).
        handler.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            inspect.Parameter(parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for parameter in [
                "predictions",
                "references",
                extra_name if extra_name in family.inputs else "unused",
                "upload",
                *(option.name for option in family.options),
            ]
        )

        button.click(
            handler,
            [predictions, references, extra, upload, *controls],
            [summary, per_example, figure],
            api_name="compute",
        )
    return app


COMBINED = ("keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf", "sentiment_appropriateness")


def compare_families(predictions: str, references: str, texts: str, upload: str | None) -> Any:
    """Every keyword family with its default options on one input: one row per metric."""
    import gradio as gr
    import pandas as pd

    rows = []
    for name in COMBINED:
        family = FAMILIES[name]
        try:
            data = collect_inputs(family, predictions, references, texts, upload)
            if name == "weighted_keyword_prf" and data.get("scores") is None:
                continue
            summary, _ = evaluate_family(name, data, {o.name: o.default for o in family.options})
        except (ValueError, ImportError) as error:
            raise gr.Error(f"{name}: {error}", print_exception=False) from None
        rows.extend((name, key, round(value, 4)) for key, value in summary.items())
    return pd.DataFrame(rows, columns=["family", "metric", "value"])


def build_combined_app() -> Any:
    """All keyword families side by side on the same input, with their default options."""
    import gradio as gr

    with gr.Blocks(title="opinion-metrics: all keyword metrics") as app:
        gr.Markdown("# opinion-metrics\nThe keyword metric families on one input, with their default options.")
        predictions = gr.Textbox(label="predictions", lines=5, placeholder=_PLACEHOLDERS["predictions"])
        references = gr.Textbox(label="references", lines=5, placeholder=_PLACEHOLDERS["references"])
        texts = gr.Textbox(label="texts", lines=3, placeholder=_PLACEHOLDERS["texts"])
        upload = gr.File(label="or upload CSV / JSONL / Parquet", type="filepath")
        button = gr.Button("Compare", variant="primary")
        table = gr.Dataframe(label="results", interactive=False)
        gr.Examples(
            [
                [
                    "great acting (0.9); moving story (0.6)\nboring plot (0.8); space (0.3)",
                    "masterpiece; moving story\ndull; boring plot; space opera",
                    "A moving, beautiful film.\nDull and far too long.",
                ]
            ],
            [predictions, references, texts],
        )
        button.click(compare_families, [predictions, references, texts, upload], table, api_name="compare")
    return app
