"""What the Spaces show of a run: reading the systems of the text boxes and uploads, the
results table, its status line and legend, and errors in the Space's words. Shared by the
run (`handlers`) and the comparisons (`comparing`)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.positions import outside_quotes, rename_examples
from ..io.table import Table
from ..stats.significance import Difference
from ..view.text import Block, Marks, entries, family_blocks, left_out_reason, option_text, signed, value_text
from .controls import FAMILIES, INTERVAL_LEVEL, LEFT_OUT, Family, keyword_options
from .explanations import _example_names
from .parsing import PREDICTION_PREFIX, Inputs, read_upload, system_column
from .systems import Systems, read_systems

# A library position counted from 0 ("keyword 0", "tuple 0"), said from 1 in the Spaces as people count.
_POSITION = re.compile(r"\b(keyword|tuple) (\d+)\b")


_FLAG = re.compile(r"\b(?:pass )?(\w+)=True\b")


# A library hint to set an option ("; pass clip_scores=True to clip ..."), to the next clause.
_HINT = re.compile(r"(?:; )?\bpass (\w+)=True\b[^;]*")


# What to do where the tab has no control for the option a library hint names.
_WITHOUT_CONTROL = {"clip_scores": "give scores in [0, 1] (this tab uses them as they are, never clipped)"}


MARKS = Marks()


NO_BASELINE = "none"


ALL_OTHERS = "every other system"


# A value's lines in a cell: never broken inside an interval ("[0.1000,\u00a00.2000]").
_NBSP = "\u00a0"


ROLES = ("predictions", "references", "scores", "texts", "system", "id")


def space_message(error: Exception, where: Callable[[int], str], controls: Collection[str] | None = None) -> str:
    """An error in the Space's words: examples as its lines, keywords and tuples counted from 1, options
    as its controls (`controls`: those the tab has, None: the family's; a hint to set another is
    advice that fits the tab), quoted values left as they are; HTML-escaped, since the error box
    renders HTML."""

    def spoken(text: str) -> str:
        if controls is not None:
            text = _HINT.sub(lambda match: _advice(match, controls), text)
        text = rename_examples(text, where)
        text = _POSITION.sub(lambda match: f"{match[1]} {int(match[2]) + 1}", text)
        return _FLAG.sub(lambda match: f"tick {match[1]}", text)

    return html.escape(outside_quotes(str(error), spoken), quote=False)


def _advice(hint: re.Match[str], controls: Collection[str]) -> str:
    """A library hint to set option `hint[1]`: kept where the tab has its control, else advice without it."""
    if hint[1] in controls:
        return hint[0]
    return "; " + _WITHOUT_CONTROL.get(hint[1], f"this tab has no {hint[1]} option")


def error(message: str) -> Any:
    """A Gradio error shown in the status line only (no toast over it): `ui` puts it there."""
    import gradio as gr

    return gr.Error(message, visible=False, print_exception=False)


def _fail(
    problem: Exception,
    where: Callable[[int], str] = lambda index: f"line {index + 1}",
    controls: Collection[str] | None = None,
) -> Any:
    return error(space_message(problem, where, controls))


def _interval(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]"


def _read(upload: str | None, mapping: Mapping[str, str] | None = None, family: str | None = None) -> Table | None:
    if not upload:
        return None
    try:
        return read_upload(upload, mapping, family)
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
    """`systems.read_systems`, errors in the Space's words; several uploaded files are systems each
    (named by their system column where it has one value, else by the file's name)."""
    paths = [upload] if isinstance(upload, str) else list(upload or [])
    tables = [_read(path, mapping, name) for path in paths] or [None]
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
    return f"Computed on {systems.described}: {examples} · {shown}{columns}{noted(systems)}"


def noted(systems: Systems) -> str:
    """The notes of `systems` for the end of a status line (a warning sign each)."""
    return "".join(f" · ⚠ {note}" for note in systems.notes)


def _counted(per_example: Mapping[str, list[Any]]) -> int:
    """The examples that count: those a presence view does not leave out (`evaluate_family` marks them)."""
    first = next(iter(per_example.values()), [])
    return sum(not (isinstance(value, str) and value.startswith(LEFT_OUT)) for value in first)
