"""The combined Space: every keyword family side by side on the same inputs, and the tab
that compares systems with a baseline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import DEFINITIONS_URL
from . import controls as families
from .comparing import LEVELS, METHODS, compare_families, compare_systems_tab
from .controls import COMBINED, FAMILIES, INTERVAL_LEVEL
from .parsing import UPLOAD_LIMITS, UPLOAD_TYPES
from .results import ALL_OTHERS
from .systems import typed_lines
from .ui import (
    _PLACEHOLDERS,
    _TALL,
    COLUMN_NAMES,
    LAST_CLICK_RUNS,
    UPLOAD_HINT,
    _blocks,
    _column_boxes,
    _control,
    _error_shown,
    _explanation,
    _follow,
    _loading_notice,
    _mapping,
    _named,
    _recalled,
    _results_table,
    _upload_box,
    _why_update,
    metric_card,
)


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
                mapping = _column_boxes()
        with gr.Column(scale=6):
            status = gr.Markdown("Computing the example…", elem_classes=["om-status"])
            figure = gr.Plot(label="plot")
    table = _results_table()
    with gr.Row():  # why: per example, for a family and a system of the results above
        why_family = gr.Dropdown(list(COMBINED), value=COMBINED[0], label="family explained per example",
                                 interactive=True, visible=False)  # fmt: skip
        why_system = gr.Dropdown([], label="system explained per example", interactive=True, visible=False)
    why = gr.Dataframe(
        label="why: per example", interactive=False, wrap=True, max_height=_TALL, visible=False, elem_classes=["om-why"]
    )
    names = ["predictions", "references", "texts", "upload", "confidence_level", *COLUMN_NAMES]

    def handler(**values: Any) -> Any:
        return compare_families(
            values["predictions"],
            values["references"],
            values["texts"],
            values["upload"],
            values.get("confidence_level", False),
            mapping=_mapping(values),
        )

    defaults = {"confidence_level": False, **dict.fromkeys(COLUMN_NAMES, "")}
    compute = _named(handler, names, "compare", defaults=defaults, shown=3)
    inputs, outputs = [predictions, references, texts, upload, intervals, *mapping], [status, table, figure]
    shown = _error_shown("compare", len(outputs))

    def after(request: gr.Request) -> tuple[Any, ...]:
        """The results' widths (`_error_shown`), then the explanation of the first family and system."""
        updates = shown(request)
        recalled = _recalled(request, "compare")
        if not isinstance(recalled, tuple):  # an error: the explanation of an earlier input is hidden
            return (*updates, *[gr.update(visible=False)] * 3)
        explained = recalled[3]
        family = next(iter(explained), None)
        systems = list(explained[family].systems) if family else []
        frame = _explanation(family, explained[family], systems[0]) if family else None
        return (
            *updates,
            gr.update(choices=list(explained), value=family, visible=family is not None),
            gr.update(choices=systems, value=systems[0] if systems else None, visible=len(systems) > 1),
            _why_update(family, frame) if frame is not None else gr.update(visible=False),
        )

    after.__annotations__ = {"request": gr.Request}

    def select(family: str, system: str, request: gr.Request) -> Any:
        recalled = _recalled(request, "compare")
        if not isinstance(recalled, tuple) or family not in recalled[3]:
            return gr.skip()
        outcome = recalled[3][family]
        frame = _explanation(family, outcome, system if system in outcome.systems else next(iter(outcome.systems)))
        return _why_update(family, frame) if frame is not None else gr.update(visible=False)

    select.__annotations__ = {"family": str, "system": str, "request": gr.Request}
    followed = [*outputs, why_family, why_system, why]
    queue = {"concurrency_id": "compare", "trigger_mode": LAST_CLICK_RUNS}
    _follow(button.click(compute, inputs, outputs, api_name="compare", **queue), after, followed)
    for event in (upload.upload, upload.clear):
        _follow(event(compute, inputs, outputs, api_visibility="private", **queue), after, followed)
    for selector in (why_family, why_system):
        selector.input(select, [why_family, why_system], [why], api_visibility="private")
    return compute, inputs, followed, after


# The comparison tab's example: three systems on 8 films; B finds most gold keywords, A generic words.
_SYSTEM_A = (
    "movie; film; story\nfilm; comedy; acting\nmovie; scary; night\nfilm; money; plan\n"
    "movie; love; city\nfilm; war; history\nmovie; machine; story\nfilm; hero; action"
)


_SYSTEM_B = (
    "space opera; jedi knight; empire\nsocial satire; comedy; class\nhorror; haunted house; ghost story\n"
    "bank robbery; heist crew; vault\nromance; wedding; paris\nwar; french resistance; soldiers\n"
    "time travel; paradox; future\nsuperhero; villain; city"
)


_SYSTEM_C = (
    "space; jedi; war\nsatire; film; comedy\nhorror; house; night\nheist; bank; money\n"
    "romance; love; paris\nwar; soldiers; history\ntime; paradox; machine\nhero; villain; city"
)


_GOLD = (
    "space opera; jedi; empire\nsatire; class struggle; comedy\nhorror; haunted house; ghost\n"
    "heist; bank robbery; crew\nromance; wedding; paris\nwar; resistance; soldiers\n"
    "time travel; paradox; future\nsuperhero; villain; city"
)


_SYSTEMS = "\n".join(
    f"[{name}] {line}"
    for name, text in (("A", _SYSTEM_A), ("B", _SYSTEM_B), ("C", _SYSTEM_C))
    for line in text.split("\n")
)


def _comparison_tab() -> tuple[Any, ...]:
    import gradio as gr

    gr.Markdown(
        "Is a system better than the baseline, or is the difference chance? Type each system's keywords on "
        "lines that start with [its name], one line per example (the gold keywords once per example), or upload "
        "a file with a `model` (or `system`) column, or columns side by side such as keywords_tfidf, keywords_yake; "
        "rows pair by a `review_id` (or `id`) column, else in order. In the example, B finds most gold keywords of "
        "eight films, C some, A mostly generic words."
    )
    with gr.Row(equal_height=False):
        with gr.Column(scale=5):
            family = gr.Dropdown(list(COMBINED), value="keyword_prf", label="metric family")
            predictions = gr.Textbox(
                label="predictions", lines=4, max_lines=8, value=_SYSTEMS, placeholder=_PLACEHOLDERS["predictions"]
            )
            gold = gr.Textbox(
                label="references", lines=3, max_lines=6, value=_GOLD, placeholder=_PLACEHOLDERS["references"]
            )
            reviews = gr.Textbox(label="texts", lines=2, placeholder=_PLACEHOLDERS["texts"])
            with gr.Row():
                # their choices: the systems found (any name is taken: the API may ask before they are known)
                baseline = gr.Dropdown(["A"], value="A", label="baseline", interactive=True, allow_custom_value=True)
                versus = gr.Dropdown(
                    [ALL_OTHERS], value=ALL_OTHERS, label="compared with", interactive=True, allow_custom_value=True
                )
            with gr.Row():
                presence = gr.Dropdown(
                    ["all", "present", "absent"], value="all", label="presence", info="keyword families only"
                )
                method = gr.Dropdown(
                    list(METHODS),
                    value="permutation",
                    label="method",
                    info="permutation: p-value from random swaps, interval from the bootstrap; bootstrap: both from "
                    "the same resamples",
                )
                level = gr.Dropdown(list(LEVELS), value=INTERVAL_LEVEL, label="confidence level")
            button = gr.Button("Compare", variant="primary")
            with gr.Accordion(
                f"or upload: one file with a model column, or a file per system ({UPLOAD_LIMITS})", open=False
            ):
                gr.Markdown(
                    f"{UPLOAD_HINT[:-1]}: predictions (scores for the weighted family), references, texts, a model "
                    "column or columns side by side; several files: a file per system."
                )
                upload = gr.File(
                    label="files",
                    file_types=UPLOAD_TYPES,
                    file_count="multiple",
                    type="filepath",
                    elem_classes=["om-upload"],
                )
                mapping = _column_boxes()
        with gr.Column(scale=6):
            status = gr.Markdown("Comparing the example…", elem_classes=["om-status"])
            figure = gr.Plot(label="differences")
            notes = gr.Markdown("")
    table = gr.Dataframe(label="each system against the baseline", interactive=False, wrap=True, max_height=_TALL)
    names = ["family", "predictions", "references", "texts", "presence", "method", "confidence_level", "upload"]
    names += ["baseline", "versus", *COLUMN_NAMES]

    def handler(**values: Any) -> Any:
        return compare_systems_tab(
            values["family"],
            values["predictions"],
            values["references"],
            values["texts"],
            values.get("presence", "all"),
            values.get("method", "permutation"),
            values.get("confidence_level", INTERVAL_LEVEL),
            values.get("upload"),
            values.get("baseline") or "",
            values.get("versus") or ALL_OTHERS,
            mapping=_mapping(values),
        )

    defaults = {"presence": "all", "method": "permutation", "confidence_level": INTERVAL_LEVEL, "upload": None}
    defaults.update(baseline="", versus=ALL_OTHERS, **dict.fromkeys(COLUMN_NAMES, ""))
    compute = _named(handler, names, "compare_systems", defaults=defaults, shown=4)
    inputs = [family, predictions, gold, reviews, presence, method, level, upload, baseline, versus, *mapping]
    outputs = [status, table, notes, figure]
    after = _error_shown("compare_systems", len(outputs), selectors=2)
    followed = [*outputs, baseline, versus]
    queue = {"concurrency_id": "compare_systems", "trigger_mode": LAST_CLICK_RUNS}
    _follow(button.click(compute, inputs, outputs, api_name="compare_systems", **queue), after, followed)
    for event in (upload.upload, upload.clear, baseline.input, versus.input):
        _follow(event(compute, inputs, outputs, api_visibility="private", **queue), after, followed)
    # the selectors follow the systems typed, before Compare (a file's systems: once it is read)
    predictions.change(
        _typed_choices,
        [predictions, baseline, versus],
        [baseline, versus],
        api_visibility="private",
        trigger_mode=LAST_CLICK_RUNS,
    )
    return compute, inputs, followed, after


def _typed_choices(predictions: str, baseline: str, versus: str) -> tuple[Any, Any]:
    """The baseline and "compared with" choices: the systems named in the predictions box (lines
    starting with [name]); unchanged while the box names none or is being fixed."""
    import gradio as gr

    try:
        systems = typed_lines(predictions)
    except ValueError:
        systems = None
    if not systems:
        return gr.skip(), gr.skip()
    names = list(systems)
    base = baseline if baseline in names else names[0]
    others = [name for name in names if name != base]
    return (
        gr.update(choices=names, value=base),
        gr.update(choices=[ALL_OTHERS, *others], value=versus if versus in others else ALL_OTHERS),
    )


def build_combined_app(card: str | Path | None = None) -> Any:
    """Every family of keyword lists side by side on the same input, one column per system, with
    their default options; a second tab compares systems with a baseline (paired differences,
    p-values, Holm's correction)."""
    import gradio as gr

    families.MODELS.on_load = _loading_notice
    with _blocks()(title="opinion-metrics: all keyword metrics") as app:
        gr.Markdown(
            "## opinion-metrics: every keyword metric on one input\n"
            "Each family with its default options. Scores in parentheses are confidences (used by the "
            "weighted metrics only), never sentiments. Several systems: start each predictions line with "
            "[its name]. "
            f"[Definitions and worked examples]({DEFINITIONS_URL})"
        )
        with gr.Tabs():
            with gr.Tab("all metrics"):
                every = _combined_tab()
            with gr.Tab("compare systems"):
                paired = _comparison_tab()
        gr.Markdown(metric_card("opinion_metrics", card))
        for (compute, inputs, outputs, after), queue in ((every, "compare"), (paired, "compare_systems")):
            # the prefilled examples when the page loads, in the queue of their button
            shown = outputs[:4] if queue == "compare_systems" else outputs[:3]
            _follow(app.load(compute, inputs, shown, api_visibility="private", concurrency_id=queue), after, outputs)
    return app
