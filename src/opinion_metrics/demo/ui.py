"""The Gradio apps: one per family (`build_app`) and the keyword families side by side
(`build_combined_app`). Layout at 1400x1000: inputs prefilled with an example and Compute
on the left, results with their meanings and the plot on the right, the metric card below."""

from __future__ import annotations

import contextvars
import html
import inspect
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import DEFINITIONS_URL
from ..tables import Rows, Table, check_paired_texts, id_column, pair_rows, pairing
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
    split_systems,
    system_column,
    whole_number,
)
from .plots import plot_comparison, plot_differences, plot_for

_REPO = Path(__file__).resolve().parents[3]
_EXAMPLE = re.compile(r"\bexample (\d+)\b")
_FLAG = re.compile(r"\b(?:pass )?(\w+)=True\b")
_PLACEHOLDERS = {
    "predictions": "one example per line; keywords separated by ';'; optional score: keyword (0.8); "
    "several systems: start each line with [its name]",
    "references": "one example per line; gold keywords separated by ';', most important first",
    "texts": "optional: the review of each example, one per line (needed by presence)",
    "aspects": "aspect names, comma-separated (default: the six tourism aspects)",
}
INTERVAL_COLUMN = f"{INTERVAL_LEVEL:.0%} interval"
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


@dataclass
class Outcome:
    """One computation of a family app: what the page shows, and each system's inputs (for
    the per-example view and its explanation)."""

    status: str
    summary: Any
    rows: Any
    figure: Any
    options: dict[str, Any]
    systems: dict[str, tuple[Inputs, Table | None]] = field(default_factory=dict)


def options_line(family: Family, options: dict[str, Any]) -> str:
    """The options a result was computed with, as the status line says them."""
    parts = []
    for option in family.options:
        value = options[option.name]
        if option.name == "confidence_level":
            parts += [f"{INTERVAL_LEVEL:.0%} intervals"] if value else []
            continue
        if option.kind == "model":
            value = str(value).split("/")[-1]
        elif isinstance(value, bool):
            value = "on" if value else "off"
        elif isinstance(value, float):
            value = f"{value:g}"
        parts.append(f"{option.name} {value}")
    return " · ".join(parts)


def _examples(count: int) -> str:
    return f"{count} example{'s' * (count != 1)}"


# "[system] keyword; keyword": a typed line of one system (every line must name its system).
_SYSTEM_PREFIX = re.compile(r"^\s*\[([^\[\]]+)\]\s*")
TYPED_SOURCE = "the text boxes"


def typed_systems(name: str, predictions: str, references: str, extra: str) -> Table | None:
    """The text boxes of family `name` as a table with a `system` column when every prediction
    line starts with "[name] " (several systems typed in, one line per example of a system),
    else None."""
    from .parsing import lines, parse_keyword_lines, same_count, takes_scores

    inputs = FAMILIES[name].inputs
    found = lines(predictions, "predictions")
    named = [_SYSTEM_PREFIX.match(line) for line in found]
    if "aspects" in inputs or not found or not all(named):
        return None
    typed = "\n".join(_SYSTEM_PREFIX.sub("", line, count=1) for line in found)
    keywords, scores = parse_keyword_lines(typed, "predictions", takes_scores(name))
    columns: dict[str, list[Any]] = {"system": [match[1].strip() for match in named], "predictions": keywords}  # type: ignore[index]
    if scores is not None:
        columns["scores"] = scores
    if "references" in inputs:
        columns["references"] = parse_keyword_lines(references, "references", scored=False)[0]
    if "texts" in inputs and lines(extra, "texts"):
        columns["texts"] = lines(extra, "texts")
    same_count(**columns)
    return Table(Path(TYPED_SOURCE), columns, list(range(1, len(found) + 1)))


def _evaluate(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | None,
    values: Sequence[Any],
    prediction_prefix: str = PREDICTION_PREFIX,
) -> Outcome:
    """Parse, compute, tabulate, plot: one system, or one row per system of an upload's
    system column (the per-example table and the plot then show the first system)."""
    import gradio as gr

    family = FAMILIES[name]
    options = {option.name: value for option, value in zip(family.options, values)}
    table = _read(upload)
    if table is None:
        try:
            table = typed_systems(name, predictions, references, extra)
        except ValueError as error:
            raise _fail(error) from None
    column = None if table is None else system_column(table.columns)
    parts = {"": table} if table is None else split_systems(table)
    results, systems = {}, {}
    for system, part in parts.items():
        inputs: Inputs | None = None
        try:
            inputs = collect_inputs(family.inputs, predictions, references, extra, part, prediction_prefix, name)
            summary, per_example = evaluate_family(name, inputs.data, options)
            if not results:
                figure = plot_for(name, inputs.data, options, summary, per_example)
        except (ValueError, ImportError) as error:
            message = space_message(error, inputs.where if inputs else lambda index: f"line {index + 1}")
            raise gr.Error(f"system {system!r}: {message}" if column else message, print_exception=False) from None
        if not summary:
            raise gr.Error("nothing to compute: no example has both predictions and something to compare them with")
        results[system], systems[system] = (summary, per_example), (inputs, part)
    shown = options_line(family, options)
    first = next(iter(results))
    count = len(systems[first][0].data["predictions"])
    rows = _rows_table(results[first][1], systems[first][1])
    if column is None:
        status = f"Computed on {systems[first][0].source}: {_examples(count)} · {shown}"
        return Outcome(status, _summary_table(family, results[first][0]), rows, figure, options, systems)
    sizes = ", ".join(f"{system} {len(inputs.data['predictions'])}" for system, (inputs, _) in systems.items())
    typed = table is not None and table.path.name == TYPED_SOURCE and not upload
    where = (
        f"{TYPED_SOURCE}: {len(systems)} systems named [like this]"
        if typed
        else (f"{systems[first][0].source}: {len(systems)} systems of its `{column}` column")
    )
    status = f"Computed on {where}, one row each (examples: {sizes}) · {shown}"
    return Outcome(status, _systems_table(family, results), rows, figure, options, systems)


def _systems_table(family: Family, results: dict[str, tuple[dict[str, Any], dict]]) -> Any:
    """One row per system: its examples' count is in the status line; a column per value
    (and per interval, when intervals are on)."""
    import pandas as pd

    rows = []
    for system, (summary, _) in results.items():
        values, intervals = split_intervals(summary)
        row: dict[str, Any] = {"system": system}
        for key, value in values.items():
            row[key] = round(value, 4)
            if key in intervals:
                row[f"{key} {INTERVAL_COLUMN}"] = _interval(*intervals[key])
        rows.append(row)
    return pd.DataFrame(rows)


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
    line, the results with meanings (one row per system when the upload has a system column),
    the per-example (per-aspect) table and the plot."""
    outcome = _evaluate(name, predictions, references, extra, upload, values, prediction_prefix)
    return outcome.status, outcome.summary, outcome.rows, outcome.figure


def _pairs(matches: list[dict[str, Any]], detail: str = "") -> str:
    shown = []
    for match in matches:
        extra = f" ({match[detail]:.4f})" if detail in match else ""
        shown.append(f"{match['prediction']} → {match['reference']}{extra}")
    return "; ".join(shown) or "none"


def _sentiments(items: list[dict[str, Any]]) -> str:
    return "; ".join(f"{item['keyword']} {item['sentiment']:.4f}" for item in items) or "none"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def explanation_table(name: str, data: dict[str, Any], options: dict[str, Any], upload: Table | None) -> Any:
    """Per example, why its values are what they are (`opinion_metrics.explain`): which
    prediction matched which gold keyword (with the cosine for the semantic family, the score
    for the weighted one), each keyword's and the review's sentiment, the repeated keywords."""
    import pandas as pd

    from ..explain import explain

    library = keyword_options(options)
    library.pop("confidence_level", None)
    if "model" in library:
        library["model"] = families.MODELS.get(library["model"])
    if "k" in library:
        library["k"] = whole_number(library["k"], "k")
    given: dict[str, Any] = {"texts": data.get("texts")}
    if name == "weighted_keyword_prf":
        given["scores"] = data.get("scores")
    if name == "sentiment_appropriateness":
        given["prediction_sentiments"] = data.get("prediction_sentiments")
    if name == "keyword_diversity":
        given.pop("texts")
    try:
        records = explain(name, data["predictions"], data.get("references"), **given, **library)
    finally:
        families.clear_embedding_cache()
    count = len(records)
    lines = upload.lines if upload is not None and upload.lines is not None else range(1, 1 + count)
    frame = pd.DataFrame({"line" if upload is None or upload.lines is not None else "row": list(lines)})
    if name in ("keyword_prf", "weighted_keyword_prf"):
        frame["matched: prediction → gold keyword" + (" (its score)" if name != "keyword_prf" else "")] = [
            _pairs(r["matches"], "score") for r in records
        ]
        frame["unmatched predictions"] = [
            "; ".join(p for p in r["predictions"] if p not in {m["prediction"] for m in r["matches"]}) for r in records
        ]
        frame["unmatched gold keywords"] = [
            "; ".join(g for g in r["references"] if g not in {m["reference"] for m in r["matches"]}) for r in records
        ]
    elif name == "semantic_keyword_prf":
        threshold = records[0]["threshold"] if records else library.get("threshold")
        frame[f"matched (cosine ≥ {threshold:g})"] = [_pairs(r["matches"], "similarity") for r in records]
        closest = []
        for record in records:
            matched = {m["prediction"] for m in record["matches"]}
            closest.append(
                _pairs([p for p in record["closest_references"] if p["prediction"] not in matched], "similarity")
            )
        frame[f"unmatched: closest gold keyword (cosine < {threshold:g})"] = closest
    elif name == "sentiment_appropriateness":
        frame["predicted keywords (sentiment)"] = [_sentiments(r["predictions"]) for r in records]
        frame["their mean"] = [_number(r["prediction_sentiment"]) for r in records]
        frame["gold keywords (sentiment)"] = [_sentiments(r["references"]) for r in records]
        frame["gold mean"] = [_number(r["reference_sentiment"]) for r in records]
        frame["review sentiment"] = [_number(r["text_sentiment"]) for r in records]
    else:
        frame["written differently, normalized alike (repeats)"] = [
            "; ".join(" = ".join(group) for group in r["repeated"]) or "none" for r in records
        ]
    return frame


# Each browser session's last outcome (or error), for the per-system view and the status line.
_SESSIONS: OrderedDict[str, Any] = OrderedDict()
MAX_SESSIONS = 32  # each holds a parsed upload: few, for the per-system view of recent pages
# The running event's progress display (model loading reports there).
_PROGRESS: contextvars.ContextVar[Any] = contextvars.ContextVar("progress", default=None)


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
    count = len(inputs.data["predictions"]) if inputs is not None else 0
    status = f"Computed on {source}: {_examples(count)} · every family with its default options"
    status += f" · {INTERVAL_LEVEL:.0%} intervals." if confidence_level else "."
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
    upload: str | Sequence[str] | None = None,
) -> tuple[str, Any, Any]:
    """Two systems' keywords on the same examples (paired by line, or as `_uploaded_systems`
    pairs the rows of `upload`: one file with a system column, or two files), through
    `opinion_metrics.compare_systems` with the family's default options: the status line, per
    metric a, b, the difference b - a, its interval, the p-value and whether it is significant
    at the level, and a plot of the differences with their intervals."""
    import pandas as pd

    from .. import compare_systems
    from .parsing import lines, parse_keyword_lines, same_count, takes_scores

    shown = FAMILIES[family]
    names, source = ("A", "B"), "the text boxes"
    try:
        paths = [upload] if isinstance(upload, (str, Path)) else list(upload or [])
        if paths:
            names, (a, scores_a), (b, scores_b), gold, reviews, paired_by = _uploaded_systems(paths)
            source = ", ".join(f"`{Path(path).name}`" for path in paths)
            gold = gold if "references" in shown.inputs else None
        else:
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
    paired_by = "by line" if source == "the text boxes" else paired_by
    status = (
        f"Compared on {len(a)} examples paired {paired_by} of {source}, a = {names[0]}, b = {names[1]} "
        f"({family}, {method}, {resampling}): significant where p < {alpha:.2g}."
    )
    differences = [(family, key, row["difference"]) for key, row in result.items()]
    intervals = [(row["difference_ci_low"], row["difference_ci_high"]) for row in result.values()]
    return status, frame, plot_differences(differences, intervals)


def _uploaded_systems(paths: Sequence[str | Path]) -> tuple[tuple[str, str], Any, Any, Any, Any, str]:
    """((name a, name b), (a, scores a), (b, scores b), references, texts, pairing) from one file
    with a system column (its first two systems) or from two files. Examples are paired as
    the CLI pairs them (`tables.pair_rows`): by a `review_id` / `id` column when there is one,
    else by position (then differing review texts are refused)."""
    tables = [read_upload(path) for path in paths]
    if len(tables) == 1:
        by_system = split_systems(tables[0])
        if len(by_system) < 2:
            raise ValueError(
                "one file compares two systems through a `model` or `system` column with two values; "
                "or upload two files, one per system"
            )
        names = tuple(list(by_system)[:2])
        parts = [by_system[name] for name in names]
        what, column = system_column(tables[0].columns) or "system", id_column(tables[0].columns)
    elif len(tables) == 2:
        names = tuple(f"`{table.path.name}`" for table in tables)
        parts = tables
        what, columns = "file", [id_column(table.columns) for table in tables]
        if columns[0] != columns[1]:
            found = " and ".join(
                f"{name} by {named or 'position (no id column)'}" for name, named in zip(names, columns)
            )
            raise ValueError(f"the files pair their examples differently: {found}; give both the same id column")
        column = columns[0]
    else:
        raise ValueError(f"upload one file with a system column, or two files; got {len(tables)} files")
    everything = [Rows(part, list(range(len(next(iter(part.columns.values()), []))))) for part in parts]
    paired = pair_rows(dict(zip(names, everything)), names[0], column, what)
    systems = [Rows(part, paired[name]) for name, part in zip(names, parts)]
    texts = next((name for name in ("texts", "review") if name in parts[0].columns), "review")
    check_paired_texts(systems[0], systems[1], texts, names, what, column)

    def picked(system: Rows, key: str) -> list[Any] | None:
        values = system.table.columns.get(key)
        return None if values is None else [values[row] for row in system.rows]

    for name, part in zip(names, parts):
        if "predictions" not in part.columns:
            raise ValueError(f"{name}: the file needs a `predictions` column (found: {', '.join(part.columns)})")
    gold = [picked(system, "references") for system in systems]
    differ = [i for i, (x, y) in enumerate(zip(gold[0] or [], gold[1] or [])) if x != y][:1]
    if differ:  # (different counts are named by the count check)
        (a, row_a), (b, row_b) = ((system.table, system.rows[differ[0]]) for system in systems)
        raise ValueError(
            f"the systems' references differ at {b.location(row_b)} and {a.location(row_a)}: "
            f"the examples must be the same; {pairing(column, what)}"
        )
    predicted = [(picked(system, "predictions"), picked(system, "scores")) for system in systems]
    reviews = picked(systems[0], "texts") or picked(systems[0], "review")
    paired_by = f"by {column}" if column else "by position"
    return names, predicted[0], predicted[1], gold[0] if gold[0] is not None else gold[1], reviews, paired_by  # type: ignore[return-value]


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
