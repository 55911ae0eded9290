"""The systems-by-metrics view, shared by the CLI and the Spaces: per metric family a row per
system (or other subset), each metric by its full name with its direction, the best value of
each column marked, the examples behind each row and, against a baseline, each value's
difference with a significance marker. The CLI prints it to fit the terminal (`format_tables`,
`format_significance`); the Spaces tabulate the same entries (`demo.handlers`); both draw
`results_figure`.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..families.options import INTERVAL_OPTIONS, RETURN_PER_EXAMPLE
from ..families.registry import FAMILIES as DECLARATIONS
from ..families.registry import output_for
from ..stats.significance import Difference

Results = dict[str, dict[str, dict[str, float]]]


GAP = "  "  # between two columns of a printed table


@dataclass(frozen=True)
class Marks:
    """The characters that mark a direction, the best value and a significant difference."""

    higher: str = "↑"
    lower: str = "↓"
    best: str = "*"
    significant: str = "†"
    note: str = "‡"  # a report row whose interval tells another story than the significance mark


UNICODE_MARKS = Marks()
ASCII_MARKS = Marks("^", "v", "*", "!", "#")


def signed(value: float) -> str:
    """A difference with its sign and 4 decimals; one that rounds to zero is +0.0000, never -0.0000."""
    text = f"{value:+.4f}"
    return "+0.0000" if text == "-0.0000" else text


def marks_for(stream: Any) -> Marks:
    """The marks `stream` can print: ASCII ones where its encoding has no arrows (a Windows console)."""
    try:
        "↑↓†".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ASCII_MARKS
    return UNICODE_MARKS


def terminal_width(stream: Any = None) -> int | None:
    """The width to fit: $COLUMNS when set, else the terminal's; None (no limit) when the output
    goes to a file or a pipe."""
    stream = sys.stdout if stream is None else stream
    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    if hasattr(stream, "isatty") and stream.isatty():
        return shutil.get_terminal_size().columns
    return None


@dataclass(frozen=True)
class Column:
    """One metric of a family: its result key, the name shown and its declared direction."""

    key: str
    name: str
    higher_is_better: bool
    meaning: str
    range: str

    def header(self, marks: Marks) -> str:
        return f"{self.name} {marks.higher if self.higher_is_better else marks.lower}"


@dataclass(frozen=True)
class Block:
    """The columns shown together: a family's metrics, or for the aspect score the overall score
    and then one block per aspect (its F1, R2 and score)."""

    family: str
    title: str
    columns: tuple[Column, ...]


def _column(family: str, key: str, name: str | None = None) -> Column:
    output = output_for(family, key)
    if output is None:  # a key the declaration does not know: shown, no direction claimed
        return Column(key, name or key, True, "", "")
    return Column(key, name or key, output.higher_is_better, output.meaning, output.range)


def family_blocks(family: str, keys: Sequence[str]) -> list[Block]:
    """The blocks of `family`'s result `keys` (interval bounds left out): one block, or for the
    aspect score "score" and one block per aspect ("f1_food", "r2_food", "score_food" shown as
    f1, r2, score under the title "aspect_sentiment_score: food")."""
    keys = [key for key in keys if not key.endswith(("_ci_low", "_ci_high"))]
    if family != "aspect_sentiment_score":
        return [Block(family, family, tuple(_column(family, key) for key in keys))]
    blocks = [Block(family, family, tuple(_column(family, key) for key in keys if key == "score"))]
    aspects = list(dict.fromkeys(key.split("_", 1)[1] for key in keys if key.startswith(("f1_", "r2_", "score_"))))
    for aspect in aspects:
        parts = [(f"{part}_{aspect}", part) for part in ("f1", "r2", "score") if f"{part}_{aspect}" in keys]
        blocks.append(Block(family, f"{family}: {aspect}", tuple(_column(family, key, name) for key, name in parts)))
    return [block for block in blocks if block.columns]


@dataclass(frozen=True)
class Entry:
    """One value of one row: the value (None: undefined), its interval, whether it is the best of
    its column, and its difference from the baseline (None on the baseline's row, or without one)."""

    value: float | None
    interval: tuple[float, float] | None = None
    best: bool = False
    difference: Difference | None = None


def _number(value: Any) -> float | None:
    return None if value is None or isinstance(value, str) or not math.isfinite(value) else float(value)


def entries(
    block: Block,
    results: Mapping[str, Mapping[str, Any]],
    differences: Mapping[str, Mapping[str, Difference]] | None = None,
    groups: Mapping[str, str] | None = None,
) -> dict[str, list[Entry]]:
    """{row: an Entry per column of `block`} from each row's result of the block's family; the
    best value of a column (highest, or lowest where lower is better, as printed at 4 decimals;
    ties all marked) is marked when at least two rows have one. With `groups` ({row: group}),
    the best is marked within each group (the systems of one --presence view)."""
    table: dict[str, list[Entry]] = {}
    for row, result in results.items():
        found = []
        for column in block.columns:
            low, high = result.get(f"{column.key}_ci_low"), result.get(f"{column.key}_ci_high")
            interval = (low, high) if low is not None and high is not None else None
            difference = (differences or {}).get(row, {}).get(column.key)
            found.append(Entry(_number(result.get(column.key)), interval, False, difference))
        table[row] = found
    grouped: dict[str, list[list[Entry]]] = {}
    for row, found in table.items():
        grouped.setdefault((groups or {}).get(row, ""), []).append(found)
    for rows in grouped.values():
        for index, column in enumerate(block.columns):
            values = [round(found[index].value, 4) for found in rows if found[index].value is not None]
            if len(values) < 2:
                continue
            best = max(values) if column.higher_is_better else min(values)
            for found in rows:
                entry = found[index]
                if entry.value is not None and round(entry.value, 4) == best:
                    found[index] = Entry(entry.value, entry.interval, True, entry.difference)
    return table


def value_text(value: float | None) -> str:
    """4 decimals; "n/a" where the metric leaves the value undefined."""
    return "n/a" if value is None else f"{value:.4f}"


def entry_text(entry: Entry, marks: Marks, alpha: float, interval: bool = True, aligned: bool = False) -> str:
    """ "0.3672* [0.3367, 0.3946] +0.1186†": the value, the best mark, the interval, and the
    difference from the baseline with the significance mark. `aligned`: a blank where a mark
    is not, so that the numbers of a column line up."""
    text = value_text(entry.value) + (marks.best if entry.best else " " * aligned)
    if interval and entry.interval is not None:
        text += f" [{value_text(entry.interval[0])}, {value_text(entry.interval[1])}]"
    if entry.difference is not None:
        significant = entry.difference.significant(alpha)
        text += f" {signed(entry.difference.difference)}" + (marks.significant if significant else " " * aligned)
    return text


def fit_table(
    keys: Sequence[str],
    headers: Sequence[str],
    rows: Sequence[tuple[Sequence[str], Sequence[str]]],
    width: int | None,
) -> list[str]:
    """Lines of a table whose key columns (`keys`: left-aligned, repeated) precede value columns
    (`headers`: right-aligned). When it is wider than `width`, the value columns are split into
    stacked blocks, each under the key columns; a block of one column wider than `width` stays
    whole: no cell, header or word is ever cut or wrapped."""
    key_widths = [max([len(key), *(len(cells[i]) for cells, _ in rows)]) for i, key in enumerate(keys)]
    value_widths = [max([len(header), *(len(values[i]) for _, values in rows)]) for i, header in enumerate(headers)]
    start = sum(key_widths) + len(GAP) * max(0, len(keys) - 1)
    groups: list[list[int]] = [[]]
    used = start
    for index, size in enumerate(value_widths):
        if groups[-1] and width is not None and used + len(GAP) + size > width:
            groups.append([])
            used = start
        groups[-1].append(index)
        used += len(GAP) + size
    lines: list[str] = []
    for number, group in enumerate(groups):
        if number:
            lines.append("")
        header = [key.ljust(size) for key, size in zip(keys, key_widths)]
        header += [headers[i].rjust(value_widths[i]) for i in group]
        lines.append(GAP.join(header).rstrip())
        for cells, values in rows:
            line = [cell.ljust(size) for cell, size in zip(cells, key_widths)]
            line += [values[i].rjust(value_widths[i]) for i in group]
            lines.append(GAP.join(line).rstrip())
    return lines


def wrapped(text: str, width: int | None, indent: str = "") -> list[str]:
    """`text` in lines of at most `width` characters, broken between words only (a word longer
    than the width stays whole), later lines indented by `indent`."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [
        text
    ]


def wrapped_items(prefix: str, items: Sequence[str], width: int | None, separator: str = " · ") -> list[str]:
    """`prefix` and the items joined by `separator`, in lines of at most `width` characters broken
    between items only (an item stays on one line); later lines indented by two spaces. At a break,
    "·" starts the next line (no two options read as one) and "," or ";" ends the line."""
    lines = [prefix + (items[0] if items else "")]
    for item in items[1:]:
        if width is not None and len(lines[-1]) + len(separator) + len(item) > width:
            mark = separator.strip()
            lead = mark + " " if mark == "·" else ""
            lines[-1] += "" if mark == "·" else mark
            lines.append("  " + lead + item)
        else:
            lines[-1] += separator + item
    return lines


# Options that never change a value (resources, output shape), that no flag sets (objects)
# or that the rows already name (aspects).
_NOT_SHOWN = {
    option.name
    for declaration in DECLARATIONS.values()
    for option in declaration.options
    if option.resource or option.kind == "object"
} | {RETURN_PER_EXAMPLE.name, "aspects"}


_UNDEFINED_INTERVALS = INTERVAL_OPTIONS - {"confidence_level"}  # the resampling settings


def shown(value: Any) -> str:
    """An option's value as the CLI and the Spaces write it: on / off, none, top_k's M."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


def option_text(name: str, value: Any) -> str:
    """ "match substring", "top_k M" (all predictions: None, as typed), "0.95 intervals"."""
    if name == "top_k" and value is None:
        return "top_k M"
    if name in ("projections", "label_map") and value is None:  # sentiment_tuple_prf's defaults
        return f"{name} default"
    if name == "confidence_level":
        return "no intervals" if value is None else f"{value:g} intervals"
    if isinstance(value, float):
        return f"{name} {value:g}"
    if not isinstance(value, (str, int, bool, type(None))):
        value = getattr(value, "name_or_path", None) or type(value).__name__
    if name == "model" and isinstance(value, str):
        value = value.split("/")[-1]
    return f"{name} {shown(value)}"


def options_used(family: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options a family ran with: its defaults, overridden by those given (inputs such as
    texts left out; resampling settings only with intervals)."""
    defaults = DECLARATIONS[family].defaults
    used = {name: given.get(name, value) for name, value in defaults.items() if name not in _NOT_SHOWN}
    if used.get("confidence_level") is None:
        for name in _UNDEFINED_INTERVALS:
            used.pop(name, None)
    return used


def left_out_reason(presence: str) -> str:
    """Why a --presence view leaves an example out, as the tables, the report and the Spaces say it."""
    return f"no {presence} gold keyword"


def _footer(
    family: str,
    subsets: list[str],
    counts: Mapping[str, Mapping[str, int]] | None,
    options: Mapping[str, Mapping[str, Mapping[str, Any]]] | None,
    width: int | None,
    unit: str = "row",
    left_out: Mapping[str, Mapping[str, int]] | None = None,
) -> list[str]:
    """How many examples each row covers (those that count: `left_out` gives those a --presence view
    leaves out, and why), and the options common to every row (those that differ, such as a
    --presence view, are in the row names)."""
    lines = []
    if counts is not None:
        found = [counts.get(subset, {}).get(family) for subset in subsets]
        left = [(left_out or {}).get(subset, {}).get(family, 0) for subset in subsets]
        views = [(options or {}).get(subset, {}).get(family, {}).get("presence", "all") for subset in subsets]

        def counted(number: int, left: int, presence: str) -> str:
            return f"{number}" + (f" ({left} of {number + left} left out: {left_out_reason(presence)})" if left else "")

        if None not in found:
            if len(set(zip(found, left, views))) == 1:
                lines += wrapped(f"examples per {unit}: {counted(found[0], left[0], views[0])}", width, "  ")
            elif len(set(views)) == 1 and any(left):  # "base/a 1024 of 1429, ..." and why once
                items = [f"{s} {n} of {n + m}" for s, n, m in zip(subsets, found, left)]
                prefix = f"examples per {unit} that count (the others: {left_out_reason(views[0])}): "
                lines += wrapped_items(prefix, items, width, ", ")
            else:
                items = [f"{s} {counted(n, m, p)}" for s, n, m, p in zip(subsets, found, left, views)]
                lines += wrapped_items(f"examples per {unit}: ", items, width, ", ")
    if options is not None:
        used = [options.get(subset, {}).get(family, {}) for subset in subsets]
        common = {name: value for name, value in used[0].items() if all(other.get(name) == value for other in used)}
        if common:
            lines += wrapped_items("options: ", [option_text(name, value) for name, value in common.items()], width)
    return lines


def legend(family: str, keys: Sequence[str], width: int | None = None) -> list[str]:
    """One line per column: its meaning, range and direction, from the family's declaration."""
    found = [(key, output_for(family, key)) for key in keys]
    size = max((len(key) for key, output in found if output is not None), default=0)
    lines = []
    for key, output in found:
        if output is not None:
            direction = "higher is better" if output.higher_is_better else "lower is better"
            text = f"  {key.ljust(size)}  {output.range}, {direction}: {output.meaning}"
            lines += wrapped(text, width, " " * (size + 4))
    if family == "sentiment_appropriateness":
        from ..analysis.explain import SENTIMENT_SCALE

        lines += wrapped("  " + SENTIMENT_SCALE, width, "  ")
    return lines


def _marks_line(
    blocks: Sequence[Block], table: Mapping[str, Any], marks: Marks, baseline: str | None, within: str = ""
) -> str:
    """What the marks of a family's tables mean (only the marks that appear); `within`: the best is
    marked within each of these views (movie, --presence view), not across them."""
    directions = {column.higher_is_better for block in blocks for column in block.columns}
    parts = [f"{marks.higher} higher is better"] if True in directions else []
    parts += [f"{marks.lower} lower is better"] if False in directions else []
    if len(table) > 1:
        parts.append(f"{marks.best} best in its column" + (f" within each {within}" if within else ""))
    if baseline is not None:
        parts.append(f"+/- difference from {baseline} ({marks.significant} significant: see below)")
    return " · ".join(parts)


def format_tables(
    results: Results,
    label: str | Mapping[str, str],
    counts: Mapping[str, Mapping[str, int]] | None = None,
    options: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    explain: bool = False,
    *,
    width: int | None = None,
    marks: Marks = UNICODE_MARKS,
    baseline: str | None = None,
    differences: Mapping[str, Mapping[str, Mapping[str, Difference]]] | None = None,
    alpha: float = 0.05,
    groups: Mapping[str, str] | None = None,
    left_out: Mapping[str, Mapping[str, int]] | None = None,
    within: str = "",
) -> str:
    """One table per metric family (the aspect score: one per aspect too): a row per subset, a
    column per metric with its direction, intervals as `value [low, high]`, the best value of
    each column marked (within each view of `groups`, {subset: view}: the systems of one movie
    or --presence view); with a `baseline` and its `differences` ({subset: {family: {key:
    Difference}}}), each other row's difference from it, marked where significant. Split into
    stacked blocks to fit `width`. Under each family: the marks, the examples per row (those
    that count: `left_out`) and the options used (`counts`, `options`: per subset and family);
    with `explain`, each column's meaning, range and direction. `label` (per family where it
    differs) names the rows."""
    text_blocks = []
    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    for family in families:
        by_row = {subset: by_family[family] for subset, by_family in results.items() if family in by_family}
        keys = list(dict.fromkeys(key for result in by_row.values() for key in result))
        blocks = family_blocks(family, keys)
        title = label if isinstance(label, str) else label.get(family, "")
        family_differences = {subset: found[family] for subset, found in (differences or {}).items() if family in found}
        lines = [family]
        views = {row: (groups or {}).get(row, "") for row in by_row}
        for number, block in enumerate(blocks):
            table = entries(block, by_row, family_differences, views)
            names = [subset + (" (baseline)" if subset == baseline else "") for subset in table]
            rows = [
                ([name], [entry_text(entry, marks, alpha, aligned=True) for entry in found])
                for name, found in zip(names, table.values())
            ]
            if number or block.title != family:
                lines += ["", block.title] if number else [block.title]
            lines += fit_table([title], [column.header(marks) for column in block.columns], rows, width)
        several_views = len(set(views.values())) > 1
        lines += wrapped(_marks_line(blocks, by_row, marks, baseline, within if several_views else ""), width, "  ")
        unit = title if title and "/" not in title else "row"
        lines += _footer(family, list(by_row), counts, options, width, unit, left_out)
        if explain:
            lines += legend(family, [column.key for block in blocks for column in block.columns], width)
        text_blocks.append("\n".join(lines))
    return "\n\n".join(text_blocks)
