"""The computations behind the Spaces' events: read the boxes or the upload, compute,
tabulate, plot; errors in the Space's words. Gradio is imported only to raise its errors."""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..tables import Rows, Table, check_paired_texts, id_column, pair_rows, pairing
from . import families
from .families import (
    COMBINED,
    FAMILIES,
    INTERVAL_LEVEL,
    Family,
    evaluate_family,
    keyword_options,
    meaning,
    split_intervals,
)
from .parsing import (
    PREDICTION_PREFIX,
    Inputs,
    collect_inputs,
    read_upload,
    split_systems,
    system_column,
    whole_number,
)
from .plots import plot_comparison, plot_differences, plot_for

_EXAMPLE = re.compile(r"\bexample (\d+)\b")
_FLAG = re.compile(r"\b(?:pass )?(\w+)=True\b")
INTERVAL_COLUMN = f"{INTERVAL_LEVEL:.0%} interval"


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
