"""The Gradio apps: one per family (`build_app`) and the keyword families side by side
(`build_combined_app`). Layout at 1400x1000: inputs prefilled with an example and Compute
on the left, results with their meanings and the plot on the right, the metric card below."""

from __future__ import annotations

import contextvars
import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import DEFINITIONS_URL
from . import families
from .families import (
    COMBINED,
    FAMILIES,
    INTERVAL_LEVEL,
    Option,
    allowed_models,
    evaluate_family,
)
from .handlers import (
    LEVELS,
    METHODS,
    Outcome,
    _evaluate,
    _rows_table,
    compare_families,
    compare_two_systems,
    explanation_table,
)
from .parsing import (
    MAX_UPLOAD_MB,
    PREDICTION_PREFIX,
    UPLOAD_LIMITS,
    UPLOAD_TYPES,
)
from .plots import plot_for

_REPO = Path(__file__).resolve().parents[3]
_PLACEHOLDERS = {
    "predictions": "one example per line; keywords separated by ';'; optional score: keyword (0.8); "
    "several systems: start each line with [its name]",
    "references": "one example per line; gold keywords separated by ';', most important first",
    "texts": "optional: the review of each example, one per line (needed by presence)",
    "aspects": "aspect names, comma-separated (default: the six tourism aspects)",
}
# A click while a computation runs is computed after it (Gradio's default drops it): the
# user who turns intervals on and clicks again gets intervals, never the older result.
LAST_CLICK_RUNS = "always_last"
# Column widths of the results tables (the interval column stays, empty while intervals are off).
_WIDTHS = ["25%", "11%", "22%", "42%"]
_COMBINED_WIDTHS = ["18%", "17%", "8%", "15%", "42%"]
# Tables show their rows without an inner scroll box up to this height (pixels).
_TALL = 2400
# Options shown next to Compute rather than in the options accordion.
_PROMINENT = ("presence", "confidence_level")
_RATING_PLACEHOLDER = "one review per line: one integer rating per aspect, 0 = absent"


# Each browser session's last outcome (or error), for the per-system view and the status line.
_SESSIONS: OrderedDict[str, Any] = OrderedDict()
MAX_SESSIONS = 32  # each holds a parsed upload: few, for the per-system view of recent pages
# The running event's progress display (model loading reports there).
_PROGRESS: contextvars.ContextVar[Any] = contextvars.ContextVar("progress", default=None)


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


def _remember(request: Any, value: Any, slot: str) -> None:
    session = getattr(request, "session_hash", None)
    if session is None:
        return
    key = f"{session}/{slot}"
    _SESSIONS[key] = value
    _SESSIONS.move_to_end(key)
    while len(_SESSIONS) > MAX_SESSIONS:
        _SESSIONS.popitem(last=False)


def _recalled(request: Any, slot: str) -> Any:
    return _SESSIONS.get(f"{getattr(request, 'session_hash', None)}/{slot}")


def _styled(frame: Any) -> Any:
    """Every number with 4 decimals, whatever its value (the table's data keeps the number)."""
    if frame is None:
        return None
    return frame.style.format(lambda value: f"{value:.4f}" if isinstance(value, float) else value).hide(axis="index")


def error_status(message: str) -> str:
    return f"**Not computed:** {message}"


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
        elem_classes=["om-upload"],
    )


def _named(handler: Callable[..., Any], names: Sequence[str], slot: str = "compute") -> Callable[..., Any]:
    """The handler with named parameters, for the Space's API page and gradio_client. It
    remembers the session's outcome or error (shown by `_after` in the status line), and
    model loading reports in the event's progress display."""
    import gradio as gr

    count = len(names)

    def named(*args: Any) -> Any:
        request, progress = args[count : count + 2]
        token = _PROGRESS.set(progress)
        try:
            result = handler(**dict(zip(names, args[:count])))
        except gr.Error as error:
            _remember(request, str(error.message), slot)
            raise
        finally:
            _PROGRESS.reset(token)
        _remember(request, result, slot)
        if isinstance(result, Outcome):
            return result.status, _styled(result.summary), _styled(result.rows), result.figure
        return tuple(_styled(value) if hasattr(value, "style") else value for value in result)

    defaults = {  # the handler's own defaults: optional API parameters (the trailing ones only)
        name: parameter.default
        for name, parameter in inspect.signature(handler).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    optional = len(names)
    while optional and names[optional - 1] in defaults:
        optional -= 1
    parameters = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if index < optional
        else inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=defaults[name])
        for index, name in enumerate(names)
    ]
    parameters.append(
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=gr.Request)
    )
    parameters.append(inspect.Parameter("progress", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=gr.Progress()))
    named.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    named.__annotations__ = {"request": gr.Request}
    return named


# Readable tables (names never broken mid-word, no inner scroll box for short results) and
# helper text with enough contrast; the status line stands out, an error in red.
CSS = """
.table-wrap td, .table-wrap th, .table-wrap th *, .table-wrap .cell-wrap, .table-wrap [role="gridcell"] span {
    word-break: normal !important; overflow-wrap: normal !important; hyphens: manual !important;
    font-family: var(--font) !important;
}
.info-text, [data-testid="block-info"] + .info-text { color: #4b5563 !important; opacity: 1 !important; }
.dark .info-text { color: #d1d5db !important; }
.block.om-status { padding: 6px 10px; border-left: 4px solid #2563eb; background: rgba(37, 99, 235, 0.06); }
.block.om-status:has(strong:first-child) { border-left-color: #b91c1c; background: rgba(185, 28, 28, 0.07); }
"""


def _blocks() -> Any:
    """gr.Blocks whose launch() caps uploads at MAX_UPLOAD_MB and adds the Spaces' CSS unless told otherwise."""
    import gradio as gr

    class SpaceBlocks(gr.Blocks):
        def launch(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("max_file_size", int(MAX_UPLOAD_MB * 1e6))
            kwargs.setdefault("css", CSS)
            return super().launch(*args, **kwargs)

    return SpaceBlocks


def loading_message(name: str) -> str:
    return f"Loading the model {name.split('/')[-1]}: about 15 s on a CPU Space, only on first use"


def _loading_notice(name: str) -> None:
    """In the running event's progress display (over the results, never over the introduction)."""
    progress = _PROGRESS.get()
    if progress is not None:
        progress(None, desc=loading_message(name))


ASPECT_NOTE = (
    "**Reading the per-aspect table.** *both*: the number of reviews in which the prediction and the gold "
    "side both rate the aspect (a rating above 0); R2 is computed on those reviews only, so it is *n/a* "
    "when there are none. The metric then takes R2 = 1, so the aspect's score is its presence F1: an "
    "aspect absent from every review on both sides has F1 = zero_division (1 by default) and a score of 1, "
    "although nothing was rated."
)


def _after(name: str) -> Callable[..., Any]:
    """After a computation: an error stays in the status line (results cleared); a success
    gets its explanation and the system selector."""
    import gradio as gr

    def after(request: gr.Request) -> tuple[Any, ...]:
        recalled = _recalled(request, "compute")
        hidden = gr.update(visible=False)
        if isinstance(recalled, str):  # the results of an earlier input are hidden, not shown as these
            selector = gr.update(choices=[], value=None, visible=False)
            return (error_status(recalled), *([hidden] * (3 + _explains(name))), selector)
        if not isinstance(recalled, Outcome):
            return (gr.skip(),) * (5 + _explains(name))
        systems = list(recalled.systems)
        selector = gr.update(choices=systems, value=systems[0], visible=len(systems) > 1)
        widths = _WIDTHS if len(systems) == 1 else _fitted_widths(recalled.summary)
        why = [gr.update(value=_styled(_explanation(name, recalled, systems[0])), visible=True)][: _explains(name)]
        shown = gr.update(visible=True)
        return (gr.skip(), gr.update(visible=True, column_widths=widths), shown, shown, *why, selector)

    after.__annotations__ = {"request": gr.Request}  # a class, not a string: gradio passes the request
    return after


def _error_shown(slot: str, count: int) -> Callable[..., Any]:
    """After a computation of `slot` with `count` outputs: an error stays in the status line
    (the first output), the others cleared; after a success nothing changes."""
    import gradio as gr

    def after(request: gr.Request) -> tuple[Any, ...]:
        recalled = _recalled(request, slot)
        if isinstance(recalled, str):  # the results of an earlier input are hidden, not shown as these
            return (error_status(recalled), *([gr.update(visible=False)] * (count - 1)))
        return (gr.skip(), *([gr.update(visible=True)] * (count - 1)))

    after.__annotations__ = {"request": gr.Request}
    return after


def _fitted_widths(frame: Any) -> list[str]:
    """Column widths in proportion to each column's longest text (header or 4-decimal value)."""
    sizes = [max([len(str(column)), 6, *(len(str(value)) for value in frame[column])]) for column in frame.columns]
    return [f"{100 * size / sum(sizes):.1f}%" for size in sizes]


# The explanation table's column widths, per family (the line first).
_WHY_WIDTHS = {
    "keyword_prf": ["6%", "40%", "24%", "30%"],
    "weighted_keyword_prf": ["6%", "40%", "24%", "30%"],
    "semantic_keyword_prf": ["6%", "50%", "44%"],
    "sentiment_appropriateness": ["6%", "28%", "10%", "28%", "12%", "16%"],
    "keyword_diversity": ["6%", "94%"],
}


def _follow(event: Any, after: Callable[..., Any], outputs: Sequence[Any]) -> None:
    """Run `after` once `event` ends, whether it succeeded or failed (a failure triggers only
    `.failure` listeners)."""
    event.then(after, None, outputs, api_visibility="private")
    event.failure(after, None, outputs, api_visibility="private")


def _explains(name: str) -> int:
    """1 when the family has a per-example explanation (the aspect score is corpus-level)."""
    return int(name != "aspect_sentiment_score")


def _explanation(name: str, outcome: Outcome, system: str) -> Any:
    inputs, part = outcome.systems[system]
    try:
        return explanation_table(name, inputs.data, outcome.options, part)
    except (ValueError, ImportError):
        return None


def _select(name: str) -> Callable[..., Any]:
    """The per-example table, the plot (and the explanation) of the system chosen in the selector."""
    import gradio as gr

    def select(system: str, request: gr.Request) -> tuple[Any, ...]:
        recalled = _recalled(request, "compute")
        if not isinstance(recalled, Outcome) or system not in recalled.systems:
            return (gr.skip(),) * (2 + _explains(name))
        inputs, part = recalled.systems[system]
        summary, per_example = evaluate_family(name, inputs.data, recalled.options)
        rows = _styled(_rows_table(per_example, part))
        figure = plot_for(name, inputs.data, recalled.options, summary, per_example)
        return (rows, figure, _styled(_explanation(name, recalled, system)))[: 2 + _explains(name)]

    select.__annotations__ = {"system": str, "request": gr.Request}
    return select


def build_app(name: str, card: str | Path | None = None) -> Any:
    """The Gradio app of one family (what spaces/<name>/app.py launches), with its metric
    card (`card`: the README.md path; default: the repository's spaces/<name>/README.md).
    The prefilled example is computed when the page loads."""
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
                status = gr.Markdown("Computing the example…", elem_classes=["om-status"])
                summary = gr.Dataframe(
                    label="results", interactive=False, wrap=True, column_widths=_WIDTHS, max_height=_TALL
                )
                figure = gr.Plot(label="plot")
        rows_label = "per aspect" if ratings else "per example (its line in the text boxes or the file)"
        system = gr.Dropdown([], label="system shown per example and in the plot", visible=False, interactive=True)
        rows = gr.Dataframe(label=rows_label, interactive=False, wrap=True, max_height=_TALL)
        if ratings:
            gr.Markdown(ASPECT_NOTE)
            why = []
        else:
            why = [
                gr.Dataframe(
                    label="why: per example",
                    interactive=False,
                    wrap=True,
                    max_height=_TALL,
                    column_widths=_WHY_WIDTHS[name],
                )
            ]
        gr.Markdown(metric_card(name, card))

        extra_name = next((box for box in family.inputs if box in ("texts", "aspects")), None)
        prefixes = {"prediction_prefix": prefix} if prefix is not None else {}
        inputs = [*boxes.values(), upload, *prefixes.values(), *controls]
        names = [*boxes, "upload", *prefixes, *(option.name for option in family.options)]

        def handler(**values: Any) -> Outcome:
            return _evaluate(
                name,
                values["predictions"],
                values.get("references", ""),
                values.get(extra_name, ""),
                values["upload"],
                [values[option.name] for option in family.options],
                prediction_prefix=values.get("prediction_prefix", PREDICTION_PREFIX),
            )

        compute = _named(handler, names)
        outputs = [status, summary, rows, figure]
        after = _after(name)
        # One queue for the page load and Compute: a slow load never lands after a later click.
        queue = {"concurrency_id": f"{name}-compute"}
        click = button.click(compute, inputs, outputs, api_name="compute", trigger_mode=LAST_CLICK_RUNS, **queue)
        _follow(click, after, [*outputs, *why, system])
        _follow(app.load(compute, inputs, outputs, api_visibility="private", **queue), after, [*outputs, *why, system])
        system.input(_select(name), [system], [rows, figure, *why], api_visibility="private")
    return app


def _combined_tab() -> tuple[Any, ...]:
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
            status = gr.Markdown("Computing the example…", elem_classes=["om-status"])
            figure = gr.Plot(label="plot")
    table = gr.Dataframe(
        label="results", interactive=False, wrap=True, column_widths=_COMBINED_WIDTHS, max_height=_TALL
    )
    compute = _named(compare_families, ["predictions", "references", "texts", "upload", "confidence_level"], "compare")
    inputs, outputs = [predictions, references, texts, upload, intervals], [status, table, figure]
    after = _error_shown("compare", len(outputs))
    click = button.click(
        compute, inputs, outputs, api_name="compare", concurrency_id="compare", trigger_mode=LAST_CLICK_RUNS
    )
    _follow(click, after, outputs)
    return compute, inputs, outputs, after


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


def _comparison_tab() -> tuple[Any, ...]:
    import gradio as gr

    gr.Markdown(
        "Is system B better than system A, or is the difference chance? The same examples, one per line in "
        "each box (paired by line), or uploaded: one file with a `model` (or `system`) column, or two files, "
        "rows paired by a `review_id` (or `id`) column, else in order. In the example, B finds most gold "
        "keywords of eight films and A mostly generic words: every difference is significant."
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
            with gr.Accordion(f"or upload: one file with a model column, or two files ({UPLOAD_LIMITS})", open=False):
                upload = gr.File(
                    label=f"CSV / TSV / JSONL / JSON / Parquet, optionally .gz ({UPLOAD_LIMITS}): predictions "
                    "(scores for the weighted family), references, texts; replaces the text boxes",
                    file_types=UPLOAD_TYPES,
                    file_count="multiple",
                    type="filepath",
                )
        with gr.Column(scale=6):
            status = gr.Markdown("Comparing the example…", elem_classes=["om-status"])
            table = gr.Dataframe(
                label="comparison",
                interactive=False,
                wrap=True,
                column_widths=["16%", "9%", "9%", "17%", "22%", "12%", "15%"],
                max_height=_TALL,
            )
            figure = gr.Plot(label="differences")
    names = ["family", "predictions_a", "predictions_b", "references", "texts", "presence", "method"]
    compute = _named(compare_two_systems, [*names, "confidence_level", "upload"], "compare_systems")
    inputs = [family, system_a, system_b, gold, reviews, presence, method, level, upload]
    outputs = [status, table, figure]
    after = _error_shown("compare_systems", len(outputs))
    _follow(
        button.click(
            compute,
            inputs,
            outputs,
            api_name="compare_systems",
            concurrency_id="compare_systems",
            trigger_mode=LAST_CLICK_RUNS,
        ),
        after,
        outputs,
    )
    return compute, inputs, outputs, after


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
                every = _combined_tab()
            with gr.Tab("compare two systems"):
                paired = _comparison_tab()
        gr.Markdown(metric_card("opinion_metrics", card))
        for (compute, inputs, outputs, after), queue in ((every, "compare"), (paired, "compare_systems")):
            # the prefilled examples when the page loads, in the queue of their button
            _follow(app.load(compute, inputs, outputs, api_visibility="private", concurrency_id=queue), after, outputs)
    return app
