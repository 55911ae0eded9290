"""The Gradio app of one family (`build_app`). Layout at 1400x1000: inputs prefilled with an
example and Compute on the left, results with their meanings and the plot on the right, the
metric card below.
"""

from __future__ import annotations

import contextvars
import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import DEFINITIONS_URL
from ..analysis.explain import SENTIMENT_SCALE
from . import controls as families
from .controls import FAMILIES, Option, allowed_models, evaluate_family
from .explanations import explanation_table
from .handlers import _evaluate
from .parsing import MAX_UPLOAD_MB, PREDICTION_PREFIX, UPLOAD_LIMITS, UPLOAD_TYPES, takes_tuples
from .results import ALL_OTHERS, NO_BASELINE, ROLES, Outcome, _rows_table, frame_widths

_REPO = Path(__file__).resolve().parents[3]


_PLACEHOLDERS = {
    "predictions": "one example per line; keywords separated by ';'; optional score: keyword (0.8); "
    "several systems: start every line with [its name], one line per example and system",
    "references": "one example per line, shared by every system; gold keywords separated by ';', most important first",
    "texts": "optional: the review of each example, one per line (needed by presence)",
    "aspects": "aspect names, comma-separated (default: the six tourism aspects)",
}


# A click while a computation runs is computed after it (Gradio's default drops it): the
# user who turns intervals on and clicks again gets intervals, never the older result.
LAST_CLICK_RUNS = "always_last"


# Above an upload box (whose own label stays short: its buttons would hide a long one).
UPLOAD_HINT = f"CSV / TSV / JSONL / JSON / Parquet, optionally .gz ({UPLOAD_LIMITS}); replaces the text boxes."


# Tables show their rows without an inner scroll box up to this height (pixels).
_TALL = 2400


# Options shown next to Compute rather than in the options accordion (format: the tuple Space reads text with it).
_PROMINENT = ("presence", "format", "confidence_level")


_RATING_PLACEHOLDER = "one review per line: one integer rating per aspect, 0 = absent"


_TUPLE_PLACEHOLDERS = {
    "predictions": 'one example per line, its tuples as JSON: [["pizza", "over cooked", "NEG"]]; or, with a '
    "format, the model's text; several systems: start every line with [its name]",
    "references": 'one example per line, shared by every system: its gold tuples as JSON, [["pizza", "cold", "NEG"]]',
}


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

    gr.Markdown(UPLOAD_HINT)
    return gr.File(label="file", file_types=UPLOAD_TYPES, type="filepath", elem_classes=["om-upload"])


def _named(
    handler: Callable[..., Any],
    names: Sequence[str],
    slot: str = "compute",
    defaults: dict[str, Any] | None = None,
    shown: int | None = None,
) -> Callable[..., Any]:
    """The handler with named parameters, for the Space's API page and gradio_client (the trailing
    ones with `defaults`, or the handler's own, are optional). It remembers the session's outcome
    or error (shown by `_after` in the status line), model loading reports in the event's progress
    display, and the first `shown` values of a tuple result are the event's outputs."""
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
            return result.status, result.summary, _styled(result.rows), result.figure
        return tuple(_styled(value) if hasattr(value, "style") else value for value in result[:shown])

    defaults = defaults or {
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


# The columns an upload's roles can be mapped to, as API parameters ("predictions_column", ...).
COLUMN_NAMES = [f"{role}_column" for role in ROLES]


def _mapping(values: dict[str, Any]) -> dict[str, str]:
    return {role: values.get(f"{role}_column") or "" for role in ROLES}


def _column_boxes(roles: Sequence[str] = ROLES) -> list[Any]:
    """The column-mapping step of an upload: a box per role, empty to find the column by its usual
    names (the status line says which were found)."""
    import gradio as gr

    from ..io.column_names import NAMES

    boxes = []
    with gr.Accordion("columns of the file (empty: found by their usual names)", open=False), gr.Row():
        for role in ROLES:
            if role not in roles:
                continue
            usual = ", ".join(NAMES[role][:3])
            pattern = "; or a pattern such as keywords_*" if role in ("predictions", "scores") else ""
            boxes.append(gr.Textbox("", label=f"{role} column", placeholder=f"{usual}, ...{pattern}", min_width=140))
    return boxes


def _results_table(label: str = "results") -> Any:
    import gradio as gr

    return gr.Dataframe(
        label=label, interactive=False, wrap=True, max_height=_TALL, datatype="markdown", elem_classes=["om-results"]
    )


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
.om-why td { vertical-align: top !important; }
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
    """After a computation: an error stays in the status line (results cleared); a success gets
    its table widths and legend, its explanation, the system selector, the baseline selector and
    the significance report."""
    import gradio as gr

    extra = _explains(name)

    def after(request: gr.Request) -> tuple[Any, ...]:
        recalled = _recalled(request, "compute")
        hidden = gr.update(visible=False)
        if isinstance(recalled, str):  # the results of an earlier input are hidden, not shown as these
            selector = gr.update(choices=[], value=None, visible=False)
            return (error_status(recalled), *([hidden] * (3 + extra)), selector, gr.skip(), hidden, hidden)
        if not isinstance(recalled, Outcome):
            return (gr.skip(),) * (8 + extra)
        systems = list(recalled.systems)
        several = len(systems) > 1
        selector = gr.update(choices=systems, value=systems[0], visible=several)
        summary = gr.update(visible=True, column_widths=frame_widths(recalled.summary), label=recalled.label)
        why = [_why_update(name, _explanation(name, recalled, systems[0]))] if extra else []  # none per aspect
        shown = gr.update(visible=True)
        baseline = gr.update(choices=[NO_BASELINE, *systems], value=recalled.baseline or NO_BASELINE, visible=several)
        report = gr.update(value=recalled.report, visible=recalled.report is not None)
        notes = gr.update(value=recalled.notes, visible=bool(recalled.notes))
        return (gr.skip(), summary, shown, shown, *why, selector, baseline, report, notes)

    after.__annotations__ = {"request": gr.Request}  # a class, not a string: gradio passes the request
    return after


def _error_shown(slot: str, count: int, selectors: int = 0) -> Callable[..., Any]:
    """After a computation of `slot` with `count` outputs: an error stays in the status line
    (the first output), the others cleared; after a success the tables get their widths, and
    `selectors` dropdowns (a baseline and the system compared) the systems found."""
    import gradio as gr

    def after(request: gr.Request) -> tuple[Any, ...]:
        recalled = _recalled(request, slot)
        if isinstance(recalled, str):  # the results of an earlier input are hidden, not shown as these
            return (error_status(recalled), *([gr.update(visible=False)] * (count - 1)), *[gr.skip()] * selectors)
        if recalled is None:
            return (gr.skip(),) * (count + selectors)
        shown = [gr.update(visible=True, column_widths=frame_widths(value)) if hasattr(value, "columns")
                 else gr.update(visible=True) for value in recalled[1:count]]  # fmt: skip
        if not selectors:
            return (gr.skip(), *shown)
        names, base = recalled[-2:]
        others = [name for name in names if name != base]
        return (gr.skip(), *shown, gr.update(choices=names, value=base), gr.update(choices=[ALL_OTHERS, *others]))

    after.__annotations__ = {"request": gr.Request}
    return after


# The explanation table's column widths, per family (the line first).
_WHY_WIDTHS = {
    "keyword_prf": ["6%", "40%", "24%", "30%"],
    "weighted_keyword_prf": ["6%", "40%", "24%", "30%"],
    "semantic_keyword_prf": ["6%", "32%", "31%", "31%"],
    "sentiment_appropriateness": ["6%", "28%", "10%", "28%", "12%", "16%"],
    "keyword_diversity": ["6%", "47%", "47%"],
    "sentiment_tuple_prf": ["6%", "30%", "18%", "18%", "14%", "14%"],
}


def why_widths(name: str, frame: Any) -> list[str]:
    """The explanation table's column widths: those of `_WHY_WIDTHS`, with room made for an id
    column (review_id) after the line where the file has one."""
    widths = _WHY_WIDTHS[name]
    if frame is None or len(frame.columns) == len(widths):
        return widths
    named = len(frame.columns) - len(widths) + 1  # the line and the id
    rest = [float(width.rstrip("%")) for width in widths[1:]]
    scale = (100 - 6 - 9 * (named - 1)) / sum(rest)
    return ["6%", *["9%"] * (named - 1), *(f"{width * scale:.0f}%" for width in rest)]


def _why_update(name: str, frame: Any) -> Any:
    import gradio as gr

    return gr.update(value=_styled(frame), visible=True, column_widths=why_widths(name, frame))


# Under a family's explanation: how to read it.
_WHY_NOTES = {"sentiment_appropriateness": SENTIMENT_SCALE}


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
    """The per-example table (and the explanation) of the system chosen in the selector; with one
    system, its own plot (several: the plot compares them all)."""
    import gradio as gr

    def select(system: str, request: gr.Request) -> Any:
        recalled = _recalled(request, "compute")
        if not isinstance(recalled, Outcome) or system not in recalled.systems:
            return gr.skip()  # every output
        inputs, part = recalled.systems[system]
        _, per_example = evaluate_family(name, inputs.data, recalled.options)
        rows = _styled(_rows_table(per_example, part))
        if not _explains(name):  # the aspect score: its one output, per aspect (gradio takes a tuple as the value)
            return rows
        return rows, _why_update(name, _explanation(name, recalled, system))

    select.__annotations__ = {"system": str, "request": gr.Request}
    return select


def build_app(name: str, card: str | Path | None = None) -> Any:
    """The Gradio app of one family (what spaces/<name>/app.py launches), with its metric
    card (`card`: the README.md path; default: the repository's spaces/<name>/README.md).
    The prefilled example is computed when the page loads, and again after each upload."""
    import gradio as gr

    family = FAMILIES[name]
    ratings = "aspects" in family.inputs
    tuples = takes_tuples(name)
    # The roles an upload's columns can be mapped to: the aspect score reads its columns by aspect.
    roles = ("system", "id") if ratings else ("predictions", "references", "system", "id") if tuples else ROLES
    example = dict(zip(family.inputs, family.example))
    families.MODELS.on_load = _loading_notice
    with _blocks()(title=f"{family.title} · opinion-metrics") as app:
        gr.Markdown(f"## {family.title}\n{family.description}\n\n[Definitions and worked examples]({DEFINITIONS_URL})")
        boxes: dict[str, Any] = {}
        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                for box in family.inputs:
                    placeholder = _RATING_PLACEHOLDER if ratings and box != "aspects" else _PLACEHOLDERS[box]
                    placeholder = _TUPLE_PLACEHOLDERS[box] if tuples else placeholder
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
                    mapping = _column_boxes(roles)
            with gr.Column(scale=6):
                status = gr.Markdown("Computing the example…", elem_classes=["om-status"])
                summary = _results_table()
                baseline = gr.Dropdown(
                    [NO_BASELINE],
                    value=NO_BASELINE,
                    label="baseline",
                    info="each system's difference from it, and whether it is significant",
                    visible=False,
                    interactive=True,
                    allow_custom_value=True,  # the systems found; the API may name one before
                )
                figure = gr.Plot(label="plot")
        report = gr.Dataframe(
            label="significance: each system against the baseline", interactive=False, visible=False, wrap=True
        )
        notes = gr.Markdown("", visible=False)
        rows_label = "per aspect" if ratings else "per example (its line in the text boxes or the file)"
        system = gr.Dropdown([], label="system shown per example", visible=False, interactive=True)
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
                    elem_classes=["om-why"],
                )
            ]
            if name in _WHY_NOTES:
                gr.Markdown(_WHY_NOTES[name])
        gr.Markdown(metric_card(name, card))

        extra_name = next((box for box in family.inputs if box in ("texts", "aspects")), None)
        prefixes = {"prediction_prefix": prefix} if prefix is not None else {}
        columns = [f"{role}_column" for role in roles]
        inputs = [*boxes.values(), upload, *prefixes.values(), *controls, baseline, *mapping]
        names = [*boxes, "upload", *prefixes, *(option.name for option in family.options), "baseline", *columns]

        def handler(**values: Any) -> Outcome:
            return _evaluate(
                name,
                values["predictions"],
                values.get("references", ""),
                values.get(extra_name, ""),
                values["upload"],
                [values[option.name] for option in family.options],
                prediction_prefix=values.get("prediction_prefix", PREDICTION_PREFIX),
                mapping=_mapping(values),
                baseline=values.get("baseline") or NO_BASELINE,
            )

        defaults = {"baseline": NO_BASELINE, **dict.fromkeys(columns, "")}
        compute = _named(handler, names, defaults=defaults)
        outputs = [status, summary, rows, figure]
        after = _after(name)
        followed = [*outputs, *why, system, baseline, report, notes]
        # One queue for the page load, Compute, an upload and a baseline: a slow one never lands after a later one.
        queue = {"concurrency_id": f"{name}-compute", "trigger_mode": LAST_CLICK_RUNS}
        click = button.click(compute, inputs, outputs, api_name="compute", **queue)
        _follow(click, after, followed)
        _follow(app.load(compute, inputs, outputs, api_visibility="private", concurrency_id=f"{name}-compute"), after,
                followed)  # fmt: skip
        for event in (upload.upload, upload.clear, baseline.input):
            _follow(event(compute, inputs, outputs, api_visibility="private", **queue), after, followed)
        system.input(_select(name), [system], [rows, *why], api_visibility="private")
    return app
