"""The computations behind the Spaces' events: read the systems from the boxes or the upload
(`parsing.read_systems`), compute, tabulate with the shared view (`opinion_metrics.view`),
compare with a baseline (`opinion_metrics.comparison`), plot; errors in the Space's words.
Gradio is imported only to raise its errors."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..comparison import DEFAULT_RESAMPLES, Difference, Pairs, format_p, method_note, report_notes, signed, significance
from ..families import output_for
from ..tables import Rows, Table, id_column, pair_rows, pairing
from ..view import Block, Marks, entries, family_blocks, left_out_reason, option_text, results_figure, value_text
from . import families
from .families import (
    COMBINED,
    FAMILIES,
    INTERVAL_LEVEL,
    LEFT_OUT,
    Family,
    evaluate_family,
    keyword_options,
    presence_texts,
)
from .parsing import PREDICTION_PREFIX, Inputs, Systems, read_systems, read_upload, system_column, whole_number
from .plots import plot_differences, plot_for, plot_systems

_EXAMPLE = re.compile(r"\bexample (\d+)\b")
_FLAG = re.compile(r"\b(?:pass )?(\w+)=True\b")
MARKS = Marks()
NO_BASELINE = "none"
ALL_OTHERS = "every other system"
# A value's lines in a cell: never broken inside an interval ("[0.1000,\u00a00.2000]").
_NBSP = "\u00a0"
ROLES = ("predictions", "references", "scores", "texts", "system", "id")


def space_message(error: Exception, where: Callable[[int], str]) -> str:
    """An error in the Space's words: examples as its lines (counted from 1), options as its
    controls; HTML-escaped, since the error box renders HTML."""
    message = _EXAMPLE.sub(lambda match: where(int(match[1])), str(error))
    message = _FLAG.sub(lambda match: f"tick {match[1]}", message)
    return html.escape(message, quote=False)


def error(message: str) -> Any:
    """A Gradio error shown in the status line only (no toast over it): `ui` puts it there."""
    import gradio as gr

    return gr.Error(message, visible=False, print_exception=False)


def _fail(problem: Exception, where: Callable[[int], str] = lambda index: f"line {index + 1}") -> Any:
    return error(space_message(problem, where))


def _interval(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]"


def _read(upload: str | None, mapping: Mapping[str, str] | None = None) -> Table | None:
    if not upload:
        return None
    try:
        return read_upload(upload, mapping)
    except ValueError as problem:
        raise _fail(problem) from None


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _examples(count: int) -> str:
    return _plural(count, "example")


def options_line(family: Family, options: dict[str, Any]) -> str:
    """The options a result was computed with, as the status line says them (in the CLI's words:
    `view.option_text`)."""
    parts = []
    for option in family.options:
        value = options[option.name]
        if option.name == "confidence_level":
            parts += [f"{INTERVAL_LEVEL:.0%} intervals"] if value else []
            continue
        value = keyword_options({option.name: value}).get(option.name, value) if option.name == "stemmer" else value
        parts.append(option_text(option.name, None if option.name == "top_k" and value == "M" else value))
    return " · ".join(parts)


# --- the systems-by-metrics view, as the Spaces tabulate it ----------------------------------------


def _cell(entry: Any, several: bool, alpha: float) -> str:
    """A value as a Markdown cell: bold where it is the best of several systems, its interval
    and its difference from the baseline (marked † where significant) on lines of their own."""
    text = value_text(entry.value)
    text = f"**{text}**" if entry.best and several else text
    if entry.interval is not None:
        text += "<br>" + _interval(*entry.interval).replace(" ", _NBSP)
    if entry.difference is not None:
        mark = f"{_NBSP}{MARKS.significant}" if entry.difference.significant(alpha) else ""
        text += f"<br>{signed(entry.difference.difference)}{mark}"
    return text


def _metric(block: Block, column: Any, family: str | None = None) -> str:
    """A metric's cell: its full name and direction, its meaning in small print below."""
    name = f"{block.title.split(': ', 1)[1]}: {column.name}" if ": " in block.title else column.name
    arrow = MARKS.higher if column.higher_is_better else MARKS.lower
    direction = "higher is better" if column.higher_is_better else "lower is better"
    prefix = f"{family}:{_NBSP}" if family else ""  # one line: the combined table is full-width
    return f"{prefix}{name}{_NBSP}{arrow}<br><small>{column.meaning} ({column.range}, {direction})</small>"


def results_frame(
    families: Sequence[str],
    results: Mapping[str, Mapping[str, Mapping[str, Any]]],
    counts: Mapping[str, int],
    differences: Mapping[str, Mapping[str, Mapping[str, Difference]]] | None = None,
    baseline: str | None = None,
    alpha: float = 0.05,
    totals: Mapping[str, int] | None = None,
) -> Any:
    """The shared view with a column per system (a row per metric, so that full metric names fit
    half a page): a first row with each system's examples, then per family and block (the aspect
    score: one per aspect) each metric with its direction and meaning, each value with its
    interval, bold where best, and its difference from the `baseline`. `results`: {system:
    {family: result}}; one unnamed system ("") gets the column "value". `counts`: the examples
    that count, "1 of 3" where a presence view leaves some of the `totals` out."""
    import pandas as pd

    systems = list(results)
    several = len(systems) > 1
    names = [(system or "value") + (" (baseline)" if system == baseline else "") for system in systems]
    totals = totals or counts
    rows = [["examples", *(f"{counts[s]}" + (f" of {totals[s]}" if totals[s] != counts[s] else "") for s in systems)]]
    for family in families:
        by_system = {system: results[system][family] for system in systems if family in results[system]}
        keys = list(dict.fromkeys(key for result in by_system.values() for key in result))
        found = {system: (differences or {}).get(system, {}).get(family, {}) for system in systems}
        for block in family_blocks(family, keys):
            table = entries(block, by_system, found)
            for index, column in enumerate(block.columns):
                cells = [_cell(table[system][index], several, alpha) if system in table else "" for system in systems]
                rows.append([_metric(block, column, family if len(families) > 1 else None), *cells])
    return pd.DataFrame(rows, columns=["metric", *names])


def frame_widths(frame: Any) -> list[str]:
    """Column widths in pixels from each column's longest line (a header, or a line of a cell split
    at <br>: a value, an interval "[+0.7083, +0.9583]", a header "p (Holm)"; only small print
    wraps): no header or value is ever cut or wrapped, and no column wider than needed."""
    widths = []
    for column in frame.columns:
        longest = 0
        for text in [str(column), *map(str, frame[column])]:
            text = re.sub(r"<small>.*?</small>", "", text).replace("**", "")
            longest = max(longest, *(len(line) for line in text.split("<br>")))
        widths.append(f"{round(7.6 * longest) + 36}px")
    return widths


def legend(several: bool, baseline: str | None, intervals: bool) -> str:
    """What the results table's marks mean (its label)."""
    parts = [f"{MARKS.higher} higher is better, {MARKS.lower} lower is better"]
    parts += ["bold: the best system"] if several else []
    parts += [f"[{INTERVAL_LEVEL:.0%} interval]"] if intervals else []
    if baseline:
        parts.append(f"+/- difference from {baseline}, {MARKS.significant} significant (see below)")
    return "results: " + " · ".join(parts)


# --- one family's Space ----------------------------------------------------------------------------


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
    report: Any = None  # the significance report against the baseline (a frame), or None
    notes: str = ""  # its notes, Markdown
    label: str = "results"  # the results table's legend
    baseline: str | None = None  # the system the others were compared with


def _rows_table(per_example: dict[str, list], upload: Table | None) -> Any:
    """One row per example, named by its line (of the text boxes or the uploaded file; a
    Parquet file's row), or one row per aspect."""
    import pandas as pd

    per_example = dict(per_example)
    count = max((len(v) for v in per_example.values()), default=0)
    if "aspect" in per_example:  # the aspect score is corpus-level: one row per aspect instead
        rows = pd.DataFrame({"aspect": per_example.pop("aspect")})
    else:
        rows = pd.DataFrame(_example_names(upload, count))
    for key, values in per_example.items():
        rows[key] = [round(v, 4) if isinstance(v, float) else v for v in values]
    return rows


def _read_systems(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | Sequence[str] | None,
    mapping: Mapping[str, str] | None = None,
    prefix: str = PREDICTION_PREFIX,
) -> Systems:
    """`parsing.read_systems`, errors in the Space's words; several uploaded files are systems each
    (named by their system column where it has one value, else by the file's name)."""
    paths = [upload] if isinstance(upload, str) else list(upload or [])
    tables = [_read(path, mapping) for path in paths] or [None]
    inputs, given = FAMILIES[name].inputs, dict(mapping or {})
    try:
        if len(tables) == 1:
            return read_systems(name, inputs, predictions, references, extra, tables[0], given, prefix)
        found = [read_systems(name, inputs, "", "", extra, table, given, prefix) for table in tables]
    except ValueError as problem:
        raise _fail(problem) from None
    return _merged(
        found, [Path(path) for path in paths], bool((predictions or "").strip() or (references or "").strip())
    )


def _merged(files: Sequence[Systems], paths: Sequence[Path], typed_boxes: bool = False) -> Systems:
    """The systems of several files as one: a file of one system named by its system column (or
    its file name); the files pair their examples by the same id column, else by position."""
    ids = {systems.paired_by for systems in files}
    if len(ids) > 1:
        found = " and ".join(f"`{path.name}` by {systems.paired_by or 'position (no id column)'}"
                             for path, systems in zip(paths, files))  # fmt: skip
        raise _fail(ValueError(f"the files pair their examples differently: {found}; give both the same id column"))
    inputs: dict[str, Inputs] = {}
    parts: dict[str, Table | None] = {}
    for path, systems in zip(paths, files):
        for system, found in systems.inputs.items():
            part = systems.parts[system]
            column = system_column(part.columns) if part is not None else None
            named = system or (str(part.columns[column][0]) if column and part.columns[column] else path.stem)
            if named in inputs:
                named = f"{path.stem}/{named}"
            inputs[named], parts[named] = found, part
    files_named = ", ".join(f"`{path.name}`" for path in paths)
    typed = " (the text boxes are not used while files are uploaded)" if typed_boxes else ""
    described = f"the uploaded files {files_named}{typed}: {len(inputs)} systems"
    return Systems(inputs, parts, described, "", files[0].paired_by)


def _status(systems: Systems, counts: Mapping[str, int], shown: str, presence: str = "all") -> str:
    """The status line: where the systems came from, their examples (those that count, where a
    presence view leaves some out, and why), the options and the columns read."""
    given = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    sizes = set(zip(counts.values(), given.values()))
    if len(sizes) == 1:
        count, total = next(iter(sizes))
        each = " each" if systems.named else ""
        if count == total:
            examples = _examples(count) + each
        else:  # "1 of 3 examples each count (2 left out: no present gold keyword)"
            examples = (
                f"{count} of {_examples(total)}{each} count ({total - count} left out: {left_out_reason(presence)})"
            )
    else:
        found = [f"{system} {count}" + (f" of {given[system]}" if count != given[system] else "")
                 for system, count in counts.items()]  # fmt: skip
        left = f" (the others left out: {left_out_reason(presence)})" if counts != given else ""
        examples = "examples: " + ", ".join(found) + left
    columns = f" · columns: {systems.columns}" if systems.columns else ""
    return f"Computed on {systems.described}: {examples} · {shown}{columns}"


def _counted(per_example: Mapping[str, list[Any]]) -> int:
    """The examples that count: those a presence view does not leave out (`evaluate_family` marks them)."""
    first = next(iter(per_example.values()), [])
    return sum(not (isinstance(value, str) and value.startswith(LEFT_OUT)) for value in first)


def _evaluate(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | None,
    values: Sequence[Any],
    prediction_prefix: str = PREDICTION_PREFIX,
    mapping: Mapping[str, str] | None = None,
    baseline: str = NO_BASELINE,
) -> Outcome:
    """Parse, compute, tabulate, plot: one system, or a column per system (typed "[name]" lines,
    a file's system column or side-by-side columns), with the differences from `baseline`."""
    family = FAMILIES[name]
    options = {option.name: value for option, value in zip(family.options, values)}
    systems = _read_systems(name, predictions, references, extra, upload, mapping, prediction_prefix)
    results: dict[str, dict[str, Any]] = {}
    per_examples: dict[str, dict[str, list]] = {}
    for system, inputs in systems.inputs.items():
        try:
            summary, per_example = evaluate_family(name, inputs.data, options)
        except (ValueError, ImportError) as problem:
            message = space_message(problem, inputs.where)
            raise error(f"system {system!r}: {message}" if system else message) from None
        if not summary:
            raise error("nothing to compute: no example has both predictions and something to compare them with")
        results[system], per_examples[system] = {name: summary}, per_example
    if name == "aspect_sentiment_score" and len(results) == 1:  # one system: its aspects in the per-aspect table
        for result in results.values():
            result[name] = {key: value for key, value in result[name].items() if key.split("_ci_")[0] == "score"}
    first = next(iter(results))
    if name == "aspect_sentiment_score":  # per aspect, not per example: every example counts
        counts = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    else:
        counts = {system: _counted(per_example) for system, per_example in per_examples.items()}
    differences, report, notes = None, None, ""
    chosen = baseline if baseline in results and len(results) > 1 else None
    if chosen is not None:
        differences, report, notes = _against_baseline(name, systems, chosen, options)
    totals = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    frame = results_frame([name], results, counts, differences, chosen, totals=totals)
    if len(results) == 1:
        inputs = systems.inputs[first]
        figure = plot_for(name, inputs.data, options, results[first][name], per_examples[first])
    else:
        keys = _plotted(name, results)
        figure = results_figure(results, keys=keys)  # a bar per system, the legend naming them
    status = _status(systems, counts, options_line(family, options), options.get("presence", "all"))
    rows = _rows_table(per_examples[first], systems.parts[first])
    parts = {system: (inputs, systems.parts[system]) for system, inputs in systems.inputs.items()}
    label = legend(len(results) > 1, chosen, bool(options.get("confidence_level")))
    return Outcome(status, frame, rows, figure, options, parts, report, notes, label, chosen)


def _plotted(name: str, results: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str] | None:
    """The keys drawn for several systems: all, or for the aspect score its score per aspect."""
    if name != "aspect_sentiment_score":
        return None
    keys = next(iter(results.values()))[name]
    return [key for key in keys if key == "score" or key.startswith("score_") and not key.endswith(("_low", "_high"))]


def run(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | None,
    *values: Any,
    prediction_prefix: str = PREDICTION_PREFIX,
    mapping: Mapping[str, str] | None = None,
    baseline: str = NO_BASELINE,
) -> tuple[str, Any, Any, Any]:
    """A family app's event handler: parse, compute, tabulate, plot. Returns the status
    line, the results (a column per system), the per-example (per-aspect) table of the first
    system and the plot."""
    outcome = _evaluate(name, predictions, references, extra, upload, values, prediction_prefix, mapping, baseline)
    return outcome.status, outcome.summary, outcome.rows, outcome.figure


# --- against a baseline: pairing, the library's comparison, the report ------------------------------


def _paired(systems: Systems, baseline: str, system: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baseline's and `system`'s inputs, example i of one with example i of the other: typed
    lines and side-by-side columns by position, a file's rows by its id column (else by position);
    their references must agree."""
    base, other = systems.inputs[baseline].data, systems.inputs[system].data
    parts = systems.parts
    column = systems.paired_by
    if parts[baseline] is not None and parts[system] is not None and parts[baseline] is not parts[system]:
        both = {
            name: Rows(parts[name], list(range(len(systems.inputs[name].data["predictions"]))))
            for name in (baseline, system)
        }  # type: ignore[arg-type]
        if column is not None and parts[baseline].columns.get(column) is not None:  # type: ignore[union-attr]
            order = pair_rows(both, baseline, column, "system")[system]
            other = {key: [value[i] for i in order] if isinstance(value, list) and len(value) == len(order) else value
                     for key, value in other.items()}  # fmt: skip
    count_a, count_b = len(base["predictions"]), len(other["predictions"])
    if count_a != count_b:
        raise ValueError(
            f"cannot compare system {system!r} with {baseline!r}: {count_a} and {count_b} examples; "
            f"{pairing(column, 'system')}"
        )
    for side in ("texts", "references"):  # the same examples: the same reviews and gold keywords
        found_a, found_b = base.get(side), other.get(side)
        if found_a and found_b and found_a != found_b:
            index = next(i for i, (x, y) in enumerate(zip(found_a, found_b)) if x != y)
            raise ValueError(
                f"cannot compare system {system!r} with {baseline!r}: their {side} differ at their example "
                f"{index + 1}; the examples must be the same ({pairing(column, 'system')})"
            )
    return base, other


def _compared(
    name: str, options: Mapping[str, Any], base: dict[str, Any], other: dict[str, Any], **settings: Any
) -> tuple[dict[str, dict[str, float]], Pairs]:
    """`compare_systems` with the family's options as the controls give them, and its `Pairs`."""
    from ..comparison import compare_systems_with_pairs

    library = keyword_options(dict(options))
    level = float(settings.pop("confidence_level", INTERVAL_LEVEL))
    library.pop("confidence_level", None)
    if "presence" in library:
        library.update(presence_texts(base, library))
    elif "texts" in FAMILIES[name].inputs and base.get("texts"):
        library["texts"] = base.get("texts")
    if "model" in library:
        library["model"] = families.MODELS.get(library["model"])
    for integer in ("k", "min_rating", "max_rating"):
        if integer in library:
            library[integer] = whole_number(library[integer], integer)
    if name == "weighted_keyword_prf":
        if base.get("scores") is None or other.get("scores") is None:
            raise ValueError('weighted metrics need a score per keyword: "keyword (0.8); other (0.3)"')
        library.update(scores_a=base["scores"], scores_b=other["scores"])
    if name == "aspect_sentiment_score":
        library["aspects"] = base["aspects"]
    references = base.get("references") if "references" in FAMILIES[name].inputs else None
    if name == "sentiment_appropriateness" and not references:
        references = None
    try:
        return compare_systems_with_pairs(
            name, base["predictions"], other["predictions"], references, confidence_level=level, **library, **settings
        )
    finally:
        families.clear_embedding_cache()


def _against_baseline(
    name: str,
    systems: Systems,
    baseline: str,
    options: Mapping[str, Any],
    versus: Sequence[str] | None = None,
    method: str = "permutation",
    level: float = INTERVAL_LEVEL,
) -> tuple[dict[str, dict[str, dict[str, Difference]]], Any, str]:
    """Each system (or those of `versus`) against `baseline`: {system: {family: {key: Difference}}}
    with Holm's correction over them, the report's frame and its notes (Markdown)."""
    import pandas as pd

    compared, pairs = {}, {}
    for system in versus or [name for name in systems.inputs if name != baseline]:
        try:
            base, other = _paired(systems, baseline, system)
            compared[system], pairs[system] = _compared(
                name, options, base, other, method=method, confidence_level=level
            )
        except (ValueError, ImportError) as problem:
            raise _fail(problem, systems.inputs[system].where) from None
    found = significance(compared, method=method, n_resamples=DEFAULT_RESAMPLES, pairs=pairs)
    alpha = round(1 - level, 10)
    several = len(found) > 1
    rows = []
    for system, by_key in found.items():
        for key, row in by_key.items():
            output = output_for(name, key)
            arrow = MARKS.lower if output is not None and not output.higher_is_better else MARKS.higher
            significant = ("yes" if row.significant(alpha) else "no") + (
                f" {MARKS.note}" if row.disagreement(alpha) else ""
            )
            p_values = [format_p(row.p_value, DEFAULT_RESAMPLES)] + (
                [format_p(row.holm_p_value, DEFAULT_RESAMPLES)] if several else []
            )
            interval = f"[{signed(row.low)}, {signed(row.high)}]"
            values = [value_text(row.baseline_value), value_text(row.value), signed(row.difference), interval]
            rows.append([system, f"{key} {arrow}", *values, *p_values, significant])
    headers = ["system", "metric", baseline, "value", "difference", f"{level:.0%} interval", "p"]
    headers += ["p (Holm)"] if several else []
    frame = pd.DataFrame(rows, columns=[*headers, "significant"])
    presence = options.get("presence", "all")
    notes = report_notes(
        found,
        baseline=baseline,
        method=method,
        level=level,
        n_resamples=DEFAULT_RESAMPLES,
        left_out=f"left out: {left_out_reason(presence)}",
    )
    notes.append(method_note(method, level, DEFAULT_RESAMPLES))
    return {system: {name: by_key} for system, by_key in found.items()}, frame, "\n".join(f"- {note}" for note in notes)


def _written(keyword: str, normalized: str | None) -> str:
    """A keyword as written, and the form that was compared where normalization changed it."""
    return keyword if normalized is None else f"{keyword} [{normalized}]"


def _pairs(matches: list[dict[str, Any]], detail: str = "") -> str:
    shown = []
    for match in matches:
        extra = f" ({match[detail]:.4f})" if detail in match else ""
        prediction = _written(match["prediction"], match.get("prediction_normalized"))
        shown.append(f"{prediction} → {_written(match['reference'], match.get('reference_normalized'))}{extra}")
    return "; ".join(shown) or "none"


def _sentiments(items: list[dict[str, Any]], limit: int | None = None) -> str:
    return _listed([f"{item['keyword']} {item['sentiment']:.4f}" for item in items], limit) or "none"


# Unmatched gold keywords shown per example (real gold lists hold hundreds): the first, most important ones.
GOLD_SHOWN = 12


def _listed(items: Sequence[str], limit: int | None = GOLD_SHOWN) -> str:
    """Items joined by "; ", at most `limit` of them and then how many more: "a; b; … and 398 more (400)"."""
    if limit is None or len(items) <= limit:
        return "; ".join(items)
    return "; ".join(items[:limit]) + f"; … and {len(items) - limit} more ({len(items)} in all)"


def _example_names(upload: Table | None, count: int) -> dict[str, list[Any]]:
    """The columns naming each example of a per-example table: its line in the boxes or the file (a
    Parquet file's row), and its id where the file has an id column (review_id, id)."""
    if upload is None or upload.lines is not None:
        names: dict[str, list[Any]] = {"line": list(upload.lines if upload is not None else range(1, 1 + count))}
    else:
        names = {"row": [row + 1 for row in (upload.rows or range(count))]}
    column = id_column(upload.columns) if upload is not None else None
    if column is not None and len(upload.columns[column]) == count:
        names[column] = list(upload.columns[column])
    return names


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
    frame = pd.DataFrame(_example_names(upload, len(records)))
    if name in ("keyword_prf", "weighted_keyword_prf"):
        frame["matched: prediction → gold keyword" + (" (its score)" if name != "keyword_prf" else "")] = [
            _pairs(r["matches"], "score") for r in records
        ]
        frame["unmatched predictions"] = [
            "; ".join(_written(p, r.get("normalized", {}).get(p)) for p in r["unmatched_predictions"]) for r in records
        ]
        frame[f"unmatched gold keywords (the first {GOLD_SHOWN}, most important first)"] = [
            _listed([_written(g, r.get("normalized", {}).get(g)) for g in r["unmatched_references"]]) for r in records
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
        frame[f"unmatched predictions: closest gold keyword (cosine < {threshold:g})"] = closest
        frame["unmatched gold keywords (what recall misses): closest prediction"] = [
            _listed(
                [f"{p['reference']} ← {p['prediction']} ({p['similarity']:.4f})" for p in r["unmatched_references"]]
            )
            or "none"
            for r in records
        ]
    elif name == "sentiment_appropriateness":
        frame["predicted keywords (sentiment: 0 negative, 0.5 neutral, 1 positive)"] = [
            _sentiments(r["predictions"]) for r in records
        ]
        frame["their mean"] = [_number(r["prediction_sentiment"]) for r in records]
        frame["gold keywords (sentiment)"] = [_sentiments(r["references"], GOLD_SHOWN) for r in records]
        frame["gold mean"] = [_number(r["reference_sentiment"]) for r in records]
        frame["review sentiment"] = [_number(r["text_sentiment"]) for r in records]
    else:
        frame["repeated keywords (written differently, normalized alike)"] = [
            "; ".join(" = ".join(group) for group in r["repeated"]) or "none" for r in records
        ]
        frame["repeated tokens (what lowers unique_token_ratio)"] = [
            "; ".join(f"{item['token']} ×{item['count']}" for item in r["repeated_tokens"]) or "none" for r in records
        ]
    return frame


# --- the combined Space: every keyword family, and the comparison tab ------------------------------


def compare_families(
    predictions: str,
    references: str,
    texts: str,
    upload: str | None,
    confidence_level: bool = False,
    mapping: Mapping[str, str] | None = None,
) -> tuple[str, Any, Any, dict[str, Outcome]]:
    """Every family of keyword lists with its default options on one input, for each system of it
    (the upload read once): the status line, the shared view (a row per family and metric, a
    column per system), grouped bars (with error bars), and per family its options and each
    system's inputs (an `Outcome` of those only: for the per-example explanation)."""

    table = _read(upload, mapping)
    results: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    systems: Systems | None = None
    explained: dict[str, Outcome] = {}
    for name in COMBINED:
        family = FAMILIES[name]
        options = {o.name: o.default for o in family.options}
        options["confidence_level"] = confidence_level
        try:
            # one predictions box for every family: scores read unless a number cannot be one (a year)
            systems = read_systems(None, family.inputs, predictions, references, texts, table, dict(mapping or {}))
        except ValueError as problem:
            raise _fail(ValueError(f"{name}: {problem}")) from None
        for system, inputs in systems.inputs.items():
            if name == "weighted_keyword_prf" and inputs.data.get("scores") is None:
                skipped.append(name)
                break
            try:
                summary, _ = evaluate_family(name, inputs.data, options)
            except (ValueError, ImportError) as problem:
                where = f"{name}" + (f", system {system!r}" if system else "")
                raise error(f"{where}: {space_message(problem, inputs.where)}") from None
            results.setdefault(system, {})[name] = summary
        if name not in skipped:
            parts = {system: (inputs, systems.parts[system]) for system, inputs in systems.inputs.items()}
            explained[name] = Outcome("", None, None, None, options, parts)
    assert systems is not None
    counts = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    shown = [name for name in COMBINED if name not in skipped]
    status = _status(systems, counts, "every family with its default options")
    status += f" · {INTERVAL_LEVEL:.0%} intervals." if confidence_level else "."
    if skipped:
        status += " weighted_keyword_prf needs a score per keyword, as in `keyword (0.8)`: not shown."
    frame = results_frame(shown, results, counts)
    title = "every keyword metric" + (f" of {_plural(len(results), 'system')}" if len(results) > 1 else "")
    return status, frame, plot_systems(results, title), explained


METHODS = ("permutation", "bootstrap")
LEVELS = (0.9, 0.95, 0.99)


def compare_systems_tab(
    family: str,
    predictions: str,
    references: str,
    texts: str,
    presence: str = "all",
    method: str = "permutation",
    confidence_level: float = INTERVAL_LEVEL,
    upload: str | Sequence[str] | None = None,
    baseline: str = "",
    versus: str = ALL_OTHERS,
    mapping: Mapping[str, str] | None = None,
) -> tuple[str, Any, str, Any, list[str], str]:
    """Systems compared on the same examples, read as every Space reads them (typed "[name]" lines
    or a file), with the family's default options: `baseline` (default: the first system) against
    every other system or only `versus`. Returns the status line, the report (per system and
    metric: both values, the difference, its interval, the p-value and Holm's adjusted one,
    whether it is significant), its notes (Markdown), a plot of the differences, the systems
    found and the baseline (for the selectors)."""
    shown = FAMILIES[family]
    systems = _read_systems(family, predictions, references, texts, upload, mapping)
    names = list(systems.inputs)
    if len(names) < 2:
        raise _fail(
            ValueError(
                "compare needs at least two systems: start each predictions line with [its name] "
                '("[tfidf] keyword; keyword"), or upload a file with a `model` (or `system`) column or columns '
                "side by side such as keywords_tfidf, keywords_yake"
            )
        )
    base = baseline if baseline in names else names[0]
    others = [name for name in names if name != base]
    chosen = others if versus in (None, "", ALL_OTHERS) or versus not in others else [versus]
    options = {o.name: o.default for o in shown.options}
    if "presence" in options:
        options["presence"] = presence
    options["confidence_level"] = False
    level = float(confidence_level)
    differences, frame, notes = _against_baseline(family, systems, base, options, chosen, method, level)
    paired = f"paired by {systems.paired_by}" if systems.paired_by else "paired by position"
    first = next(iter(next(iter(differences.values()))[family].values()))
    examples = _examples(first.pairs + first.left_out)
    if first.left_out:  # a presence view: the pairs that count
        counts = "counts" if first.pairs == 1 else "count"
        examples += f" {paired}, {first.pairs} {counts} ({first.left_out} left out: {left_out_reason(presence)})"
    else:
        examples += f" {paired}"
    view = f", presence {presence}" if presence != "all" and "presence" in options else ""
    status = (
        f"Compared on {systems.described}: {base} against {', '.join(chosen)}, {examples} ({family}{view}, "
        f"{method} test, {DEFAULT_RESAMPLES:,} resamples, seed 0)"
    )
    alpha = 1 - level
    rows = [(f"{row[0]}: {row[1]}", float(row[4]), row[-1].startswith("yes")) for row in frame.itertuples(index=False)]
    intervals = [
        tuple(float(bound) for bound in row[5].strip("[]").split(", ")) for row in frame.itertuples(index=False)
    ]
    figure = plot_differences([(family, label, value) for label, value, _ in rows], intervals)
    figure.axes[0].set_title(f"difference from {base} (significant at {alpha:.2g}: see the table)", fontsize=10)
    return status, frame, notes, figure, names, base
