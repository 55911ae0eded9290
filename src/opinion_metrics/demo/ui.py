"""The Gradio apps: one per family (`build_app`) and the keyword families side by side
(`build_combined_app`). Layout at 1400x1000: inputs prefilled with an example and Compute
on the left, results with their meanings and the plot on the right, the metric card below."""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import DEFINITIONS_URL
from ..tables import Table
from . import families
from .families import (
    COMBINED,
    FAMILIES,
    INTERVAL_LEVEL,
    Family,
    Option,
    allowed_models,
    evaluate_family,
    keyword_options,
    meaning,
    split_intervals,
)
from .parsing import (
    MAX_UPLOAD_MB,
    PREDICTION_PREFIX,
    UPLOAD_LIMITS,
    UPLOAD_TYPES,
    Inputs,
    collect_inputs,
    read_upload,
)
from .plots import plot_comparison, plot_differences, plot_for

_REPO = Path(__file__).resolve().parents[3]
_EXAMPLE = re.compile(r"\bexample (\d+)\b")
_FLAG = re.compile(r"\b(?:pass )?(\w+)=True\b")
_PLACEHOLDERS = {
    "predictions": "one example per line; keywords separated by ';'; optional score: keyword (0.8)",
    "references": "one example per line; gold keywords separated by ';', most important first",
    "texts": "optional: the review of each example, one per line (needed by presence)",
    "aspects": "aspect names, comma-separated (default: the six tourism aspects)",
}
INTERVAL_COLUMN = f"{INTERVAL_LEVEL:.0%} interval"
# Column widths of the results tables (the interval column stays, empty while intervals are off).
_WIDTHS = ["20%", "11%", "20%", "49%"]
_COMBINED_WIDTHS = ["19%", "19%", "9%", "19%", "34%"]
# Options shown next to Compute rather than in the options accordion.
_PROMINENT = ("presence", "confidence_level")
_RATING_PLACEHOLDER = "one review per line: one integer rating per aspect, 0 = absent"


def metric_card(folder: str, path: str | Path | None = None) -> str:
    """The Space's README (the metric card) without its YAML header; '' when absent (an
    installed package without the repository, and no path given)."""
    card = Path(path) if path is not None else _REPO / "spaces" / folder / "README.md"
    if not card.is_file():
        return ""
    text = card.read_text(encoding="utf-8")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4 :] if end != -1 else text
    return text.strip()


def space_message(error: Exception, where: Callable[[int], str]) -> str:
    """An error in the Space's words: examples as its lines (counted from 1), options as its
    controls; HTML-escaped, since the error box renders HTML."""
    message = _EXAMPLE.sub(lambda match: where(int(match[1])), str(error))
    message = _FLAG.sub(lambda match: f"tick {match[1]}", message)
    return html.escape(message, quote=False)


def _fail(error: Exception, where: Callable[[int], str] = lambda index: f"line {index + 1}") -> Any:
    import gradio as gr

    return gr.Error(space_message(error, where), print_exception=False)


def _interval(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]"


def _summary_table(family: Family, summary: dict[str, Any]) -> Any:
    """metric, value, its interval as "[low, high]" (empty while intervals are off), meaning."""
    import pandas as pd

    values, intervals = split_intervals(summary)
    columns: dict[str, list[Any]] = {"metric": list(values), "value": [round(value, 4) for value in values.values()]}
    columns[INTERVAL_COLUMN] = [_interval(*intervals[key]) if key in intervals else "" for key in values]
    columns["meaning"] = [meaning(family, key) for key in values]
    return pd.DataFrame(columns)


def _rows_table(per_example: dict[str, list], upload: Table | None) -> Any:
    """One row per example, named by its line (of the text boxes or the uploaded file; a
    Parquet file's row), or one row per aspect."""
    import pandas as pd

    per_example = dict(per_example)
    count = max((len(v) for v in per_example.values()), default=0)
    if "aspect" in per_example:  # the aspect score is corpus-level: one row per aspect instead
        rows = pd.DataFrame({"aspect": per_example.pop("aspect")})
    elif upload is not None and upload.lines is None:
        rows = pd.DataFrame({"row": range(1, 1 + count)})
    else:
        rows = pd.DataFrame({"line": upload.lines if upload is not None else range(1, 1 + count)})
    for key, values in per_example.items():
        rows[key] = [round(v, 4) if isinstance(v, float) else v for v in values]
    return rows


def _read(upload: str | None) -> Table | None:
    if not upload:
        return None
    try:
        return read_upload(upload)
    except ValueError as error:
        raise _fail(error) from None


def run(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | None,
    *values: Any,
    prediction_prefix: str = PREDICTION_PREFIX,
) -> tuple[str, Any, Any, Any]:
    """A family app's event handler: parse, compute, tabulate, plot. Returns the status
    line, the results with meanings, the per-example (per-aspect) table and the plot."""
    import gradio as gr

    family = FAMILIES[name]
    options = {option.name: value for option, value in zip(family.options, values)}
    table = _read(upload)
    inputs: Inputs | None = None
    try:
        inputs = collect_inputs(family.inputs, predictions, references, extra, table, prediction_prefix, name)
        summary, per_example = evaluate_family(name, inputs.data, options)
        figure = plot_for(name, inputs.data, options, summary, per_example)
    except (ValueError, ImportError) as error:
        raise _fail(error, *([inputs.where] if inputs else [])) from None
    if not summary:
        raise gr.Error("nothing to compute: no example has both predictions and something to compare them with")
    count = len(inputs.data["predictions"])
    status = f"Computed on {inputs.source}: {count} example{'s' * (count != 1)}."
    return status, _summary_table(family, summary), _rows_table(per_example, table), figure


def _control(option: Option) -> Any:
    import gradio as gr

    info, label = option.info or None, option.label or option.name
    if option.kind == "model":
        models = allowed_models()
        default = option.default if option.default in models else models[0]
        return gr.Dropdown(models, value=default, label=label, info=info)
    if option.kind == "choice":
        return gr.Dropdown(list(option.choices), value=option.default, label=label, info=info)
    if option.kind == "flag":
        return gr.Checkbox(value=option.default, label=label, info=info)
    if option.kind == "slider":
        low, high, step = option.bounds
        return gr.Slider(low, high, value=option.default, step=step, label=label, info=info)
    if option.kind == "number":
        return gr.Number(value=option.default, label=label, info=info)
    return gr.Textbox(value=str(option.default), label=label, info=info)


def _upload_box() -> Any:
    import gradio as gr

    return gr.File(
        label=f"CSV / TSV / JSONL / JSON / Parquet, optionally .gz ({UPLOAD_LIMITS}); replaces the text boxes",
        file_types=UPLOAD_TYPES,
        type="filepath",
    )


def _named(handler: Callable[..., Any], names: Sequence[str]) -> Callable[..., Any]:
    """The handler with named parameters, for the Space's API page and gradio_client."""

    def named(*args: Any) -> Any:
        return handler(**dict(zip(names, args)))

    named.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names
    )
    return named


def _blocks() -> Any:
    """gr.Blocks whose launch() caps uploads at MAX_UPLOAD_MB unless told otherwise."""
    import gradio as gr

    class SpaceBlocks(gr.Blocks):
        def launch(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("max_file_size", int(MAX_UPLOAD_MB * 1e6))
            return super().launch(*args, **kwargs)

    return SpaceBlocks


def _loading_notice(name: str) -> None:
    import gradio as gr

    gr.Info(f"Loading the model {name.split('/')[-1]}: about 15 s on a CPU Space, only on first use.")


def build_app(name: str, card: str | Path | None = None) -> Any:
    """The Gradio app of one family (what spaces/<name>/app.py launches), with its metric
    card (`card`: the README.md path; default: the repository's spaces/<name>/README.md)."""
    import gradio as gr

    family = FAMILIES[name]
    ratings = "aspects" in family.inputs
    example = dict(zip(family.inputs, family.example))
    families.MODELS.on_load = _loading_notice
    with _blocks()(title=f"{family.title} · opinion-metrics") as app:
        gr.Markdown(f"## {family.title}\n{family.description}\n\n[Definitions and worked examples]({DEFINITIONS_URL})")
        boxes: dict[str, Any] = {}
        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                for box in family.inputs:
                    placeholder = _RATING_PLACEHOLDER if ratings and box != "aspects" else _PLACEHOLDERS[box]
                    boxes[box] = gr.Textbox(
                        label=box,
                        lines=1 if box == "aspects" else 3,
                        max_lines=12,
                        value=example.get(box, ""),
                        placeholder=placeholder,
                    )
                made: dict[str, Any] = {}
                with gr.Row():
                    for option in family.options:
                        if option.name in _PROMINENT:
                            made[option.name] = _control(option)
                button = gr.Button("Compute", variant="primary")
                rest = [option for option in family.options if option.name not in _PROMINENT]
                with gr.Accordion("options", open=len(rest) <= 4):
                    made.update({option.name: _control(option) for option in rest})
                controls = [made[option.name] for option in family.options]
                with gr.Accordion(f"or upload a file ({UPLOAD_LIMITS})", open=False):
                    upload = _upload_box()
                    prefix = (
                        gr.Textbox(
                            value=PREDICTION_PREFIX,
                            label="prediction_prefix",
                            info="the predicted rating columns are this prefix + the aspect name",
                        )
                        if ratings
                        else None
                    )
            with gr.Column(scale=6):
                status = gr.Markdown("Press **Compute** to score the example, or type your own.")
                summary = gr.Dataframe(label="results", interactive=False, wrap=True, column_widths=_WIDTHS)
                figure = gr.Plot(label="plot")
        rows_label = "per aspect" if ratings else "per example (its line in the text boxes or the file)"
        rows = gr.Dataframe(label=rows_label, interactive=False)
        gr.Markdown(metric_card(name, card))

        extra_name = next((box for box in family.inputs if box in ("texts", "aspects")), None)
        prefixes = {"prediction_prefix": prefix} if prefix is not None else {}
        inputs = [*boxes.values(), upload, *prefixes.values(), *controls]
        names = [*boxes, "upload", *prefixes, *(option.name for option in family.options)]

        def handler(**values: Any) -> tuple[str, Any, Any, Any]:
            status, table, rows, plot = run(
                name,
                values["predictions"],
                values.get("references", ""),
                values.get(extra_name, ""),
                values["upload"],
                *(values[option.name] for option in family.options),
                prediction_prefix=values.get("prediction_prefix", PREDICTION_PREFIX),
            )
            return status, table, rows, plot

        button.click(_named(handler, names), inputs, [status, summary, rows, figure], api_name="compute")
    return app


def compare_families(
    predictions: str, references: str, texts: str, upload: str | None, confidence_level: bool = False
) -> tuple[str, Any, Any]:
    """Every family of keyword lists with its default options on one input (the upload read
    once): the status line, one row per metric with its meaning (and its interval when
    `confidence_level` is ticked), and a bar plot (with error bars)."""
    import gradio as gr
    import pandas as pd

    table = _read(upload)
    rows, intervals, skipped, source = [], [], [], ""
    for name in COMBINED:
        family = FAMILIES[name]
        inputs: Inputs | None = None
        options = {o.name: o.default for o in family.options}
        options["confidence_level"] = confidence_level
        try:
            inputs = collect_inputs(family.inputs, predictions, references, texts, table)
            if name == "weighted_keyword_prf" and inputs.data.get("scores") is None:
                skipped.append(name)
                continue
            summary, _ = evaluate_family(name, inputs.data, options)
        except (ValueError, ImportError) as error:
            message = space_message(error, inputs.where if inputs else lambda index: f"line {index + 1}")
            raise gr.Error(f"{name}: {message}", print_exception=False) from None
        source = inputs.source
        values, found = split_intervals(summary)
        for key, value in values.items():
            rows.append((name, key, round(value, 4), meaning(family, key)))
            intervals.append(found.get(key))
    status = f"Computed on {source}."
    if skipped:
        status += " weighted_keyword_prf needs a score per keyword, as in `keyword (0.8)`: not shown."
    frame = pd.DataFrame(rows, columns=["family", "metric", "value", "meaning"])
    frame.insert(3, INTERVAL_COLUMN, [_interval(*interval) if interval else "" for interval in intervals])
    return status, frame, plot_comparison([row[:3] for row in rows], intervals if confidence_level else None)


# The comparison tab's example: B finds the gold keywords of 8 films, A mostly generic words.
_SYSTEM_A = (
    "movie; film; story\nfilm; comedy; acting\nmovie; scary; night\nfilm; money; plan\n"
    "movie; love; city\nfilm; war; history\nmovie; machine; story\nfilm; hero; action"
)
_SYSTEM_B = (
    "space opera; jedi knight; empire\nsocial satire; comedy; class\nhorror; haunted house; ghost story\n"
    "bank robbery; heist crew; vault\nromance; wedding; paris\nwar; french resistance; soldiers\n"
    "time travel; paradox; future\nsuperhero; villain; city"
)
_GOLD = (
    "space opera; jedi; empire\nsatire; class struggle; comedy\nhorror; haunted house; ghost\n"
    "heist; bank robbery; crew\nromance; wedding; paris\nwar; resistance; soldiers\n"
    "time travel; paradox; future\nsuperhero; villain; city"
)
METHODS = ("permutation", "bootstrap")
LEVELS = (0.9, 0.95, 0.99)


def compare_two_systems(
    family: str,
    predictions_a: str,
    predictions_b: str,
    references: str,
    texts: str,
    presence: str = "all",
    method: str = "permutation",
    confidence_level: float = INTERVAL_LEVEL,
) -> tuple[str, Any, Any]:
    """Two systems' keywords on the same examples (paired by line), through
    `opinion_metrics.compare_systems` with the family's default options: the status line, per
    metric a, b, the difference b - a, its interval, the p-value and whether it is significant
    at the level, and a plot of the differences with their intervals."""
    import pandas as pd

    from .. import compare_systems
    from .parsing import lines, parse_keyword_lines, same_count, takes_scores

    shown = FAMILIES[family]
    try:
        a, scores_a = parse_keyword_lines(predictions_a, "predictions A", takes_scores(family))
        b, scores_b = parse_keyword_lines(predictions_b, "predictions B", takes_scores(family))
        typed_gold = "references" in shown.inputs and lines(references, "references")
        gold = parse_keyword_lines(references, "references", scored=False)[0] if typed_gold else None
        reviews = lines(texts, "texts") or None
        same_count(**{"predictions A": a, "predictions B": b, "references": gold, "texts": reviews})
        options = keyword_options({o.name: o.default for o in shown.options})
        options.pop("confidence_level", None)
        if "presence" in options:
            options["presence"] = presence
            options.update(families.presence_texts({"texts": reviews}, options))
        elif "texts" in shown.inputs:
            options["texts"] = reviews
        if "model" in options:
            options["model"] = families.MODELS.get(options["model"])
        if family == "weighted_keyword_prf":
            if scores_a is None or scores_b is None:
                raise ValueError('weighted metrics need a score per keyword in A and B: "keyword (0.8); other (0.3)"')
            options.update(scores_a=scores_a, scores_b=scores_b, k=int(options["k"]))
        result = compare_systems(family, a, b, gold, method=method, confidence_level=float(confidence_level), **options)
    except (ValueError, ImportError) as error:
        raise _fail(error) from None
    finally:
        families.clear_embedding_cache()
    alpha = 1 - float(confidence_level)
    frame = pd.DataFrame(
        {
            "metric": list(result),
            "a": [round(row["a"], 4) for row in result.values()],
            "b": [round(row["b"], 4) for row in result.values()],
            "difference b - a": [round(row["difference"], 4) for row in result.values()],
            f"{float(confidence_level):.0%} interval": [
                _interval(row["difference_ci_low"], row["difference_ci_high"]) for row in result.values()
            ],
            "p_value": [round(row["p_value"], 4) for row in result.values()],
            "significant": ["yes" if row["p_value"] < alpha else "no" for row in result.values()],
        }
    )
    defaults = inspect.signature(compare_systems).parameters
    resampling = f"{defaults['n_resamples'].default} resamples, seed {defaults['random_state'].default}"
    status = (
        f"Compared on {len(a)} examples paired by line ({method}, {resampling}): significant where p < {alpha:.2g}."
    )
    differences = [(family, key, row["difference"]) for key, row in result.items()]
    intervals = [(row["difference_ci_low"], row["difference_ci_high"]) for row in result.values()]
    return status, frame, plot_differences(differences, intervals)


def _combined_tab() -> None:
    import gradio as gr

    with gr.Row(equal_height=False):
        with gr.Column(scale=5):
            predictions = gr.Textbox(
                label="predictions",
                lines=3,
                value="great acting (0.9); moving story (0.6)\nboring plot (0.8); space (0.3)",
                placeholder=_PLACEHOLDERS["predictions"],
            )
            references = gr.Textbox(
                label="references",
                lines=3,
                value="masterpiece; moving story\ndull; boring plot; space opera",
                placeholder=_PLACEHOLDERS["references"],
            )
            texts = gr.Textbox(
                label="texts",
                lines=2,
                value="A moving, beautiful film.\nDull and far too long.",
                placeholder=_PLACEHOLDERS["texts"],
            )
            intervals = _control(next(o for o in FAMILIES["keyword_prf"].options if o.name == "confidence_level"))
            button = gr.Button("Compute", variant="primary")
            with gr.Accordion(f"or upload a file ({UPLOAD_LIMITS})", open=False):
                upload = _upload_box()
        with gr.Column(scale=6):
            status = gr.Markdown("Press **Compute** to score the example, or type your own.")
            table = gr.Dataframe(label="results", interactive=False, wrap=True, column_widths=_COMBINED_WIDTHS)
    figure = gr.Plot(label="plot")
    button.click(
        _named(compare_families, ["predictions", "references", "texts", "upload", "confidence_level"]),
        [predictions, references, texts, upload, intervals],
        [status, table, figure],
        api_name="compare",
    )


def _comparison_tab() -> None:
    import gradio as gr

    gr.Markdown(
        "Is system B better than system A, or is the difference chance? The same examples, one per line in "
        "each box (paired by line). In the example, B finds most gold keywords of eight films and A "
        "mostly generic words: every difference is significant."
    )
    with gr.Row(equal_height=False):
        with gr.Column(scale=5):
            family = gr.Dropdown(list(COMBINED), value="keyword_prf", label="metric family")
            system_a = gr.Textbox(
                label="system A", lines=3, max_lines=4, value=_SYSTEM_A, placeholder=_PLACEHOLDERS["predictions"]
            )
            system_b = gr.Textbox(
                label="system B", lines=3, max_lines=4, value=_SYSTEM_B, placeholder=_PLACEHOLDERS["predictions"]
            )
            gold = gr.Textbox(
                label="gold keywords", lines=3, max_lines=4, value=_GOLD, placeholder=_PLACEHOLDERS["references"]
            )
            reviews = gr.Textbox(label="reviews", lines=2, placeholder=_PLACEHOLDERS["texts"])
            with gr.Row():
                presence = gr.Dropdown(
                    ["all", "present", "absent"], value="all", label="presence", info="keyword families only"
                )
                method = gr.Dropdown(
                    list(METHODS),
                    value="permutation",
                    label="method",
                    info="approximate randomization, or paired bootstrap",
                )
                level = gr.Dropdown(list(LEVELS), value=INTERVAL_LEVEL, label="confidence level")
            button = gr.Button("Compare", variant="primary")
        with gr.Column(scale=6):
            status = gr.Markdown("Press **Compare** to test the example, or type your own.")
            table = gr.Dataframe(
                label="comparison",
                interactive=False,
                wrap=True,
                column_widths=["17%", "10%", "10%", "13%", "24%", "12%", "14%"],
            )
            figure = gr.Plot(label="differences")
    names = ["family", "predictions_a", "predictions_b", "references", "texts", "presence", "method"]
    button.click(
        _named(compare_two_systems, [*names, "confidence_level"]),
        [family, system_a, system_b, gold, reviews, presence, method, level],
        [status, table, figure],
        api_name="compare_systems",
    )


def build_combined_app(card: str | Path | None = None) -> Any:
    """Every family of keyword lists side by side on the same input, with their default
    options; a second tab compares two systems (paired differences and p-values)."""
    import gradio as gr

    families.MODELS.on_load = _loading_notice
    with _blocks()(title="opinion-metrics: all keyword metrics") as app:
        gr.Markdown(
            "## opinion-metrics: every keyword metric on one input\n"
            "Each family with its default options. Scores in parentheses are confidences (used by the "
            "weighted metrics only), never sentiments. "
            f"[Definitions and worked examples]({DEFINITIONS_URL})"
        )
        with gr.Tabs():
            with gr.Tab("all metrics"):
                _combined_tab()
            with gr.Tab("compare two systems"):
                _comparison_tab()
        gr.Markdown(metric_card("opinion_metrics", card))
    return app
