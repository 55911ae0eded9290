"""The results as the CLI shows them: one table per family (a row per subset, a column per
metric), the paired comparisons, the options and examples under each, and the plot."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .families import FAMILIES as DECLARATIONS
from .families import INTERVAL_OPTIONS, RETURN_PER_EXAMPLE, output_for
from .reading import Evaluation, Results

MAX_LABELLED = 20  # a plot labels its bars and has a legend up to this many subsets


def _cell(value: Any) -> str:
    """A table cell: 4 decimals; "n/a" for a value the metric leaves undefined (None)."""
    if value is None:
        return "n/a"
    return value if isinstance(value, str) else f"{value:.4f}"


def _cells(values: dict[str, Any]) -> dict[str, str]:
    """{key: cell}, a key with an interval as "value [low, high]" (its `_ci_` keys folded in)."""
    cells = {}
    for name, value in values.items():
        stem = re.sub(r"_ci_(low|high)$", "", name)
        if stem != name and stem in values:
            continue
        cells[name] = _cell(value)
        if f"{name}_ci_low" in values:
            cells[name] += f" [{_cell(values[name + '_ci_low'])}, {_cell(values.get(name + '_ci_high'))}]"
    return cells


# Options that never change a value (resources, output shape), that no flag sets (objects)
# or that the rows already name (aspects).
_NOT_SHOWN = {
    option.name
    for declaration in DECLARATIONS.values()
    for option in declaration.options
    if option.resource or option.kind == "object"
} | {RETURN_PER_EXAMPLE.name, "aspects"}
_UNDEFINED_INTERVALS = INTERVAL_OPTIONS - {"confidence_level"}  # the resampling settings


def _option_text(name: str, value: Any) -> str:
    if name == "top_k" and value is None:
        return "top_k all"
    if name == "confidence_level":
        return "no intervals" if value is None else f"{value:g} intervals"
    if isinstance(value, float):
        return f"{name} {value:g}"
    if not isinstance(value, (str, int, bool, type(None))):
        value = getattr(value, "name_or_path", None) or type(value).__name__
    return f"{name} {_shown(value)}"


def options_used(family: str, given: dict[str, Any]) -> dict[str, Any]:
    """The options a family ran with: its defaults, overridden by those given (inputs such as
    texts left out; resampling settings only with intervals)."""
    defaults = DECLARATIONS[family].defaults
    used = {name: given.get(name, value) for name, value in defaults.items() if name not in _NOT_SHOWN}
    if used.get("confidence_level") is None:
        for name in _UNDEFINED_INTERVALS:
            used.pop(name, None)
    return used


def run_details(evaluation: Evaluation) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, dict[str, Any]]]]:
    """Per subset and family: the number of examples (groups, once pooled) and the options used."""
    counts: dict[str, dict[str, int]] = {}
    options: dict[str, dict[str, dict[str, Any]]] = {}
    for (name, family), (given, _) in evaluation.inputs.items():
        counts.setdefault(name, {})[family] = len(given["predictions"])
        options.setdefault(name, {})[family] = options_used(family, given["options"])
    return counts, options


def _footer(
    family: str,
    subsets: list[str],
    counts: dict[str, dict[str, int]] | None,
    options: dict[str, dict[str, dict[str, Any]]] | None,
) -> list[str]:
    """How many examples each row covers, and the options common to every row (those that
    differ, such as a --presence view, are in the row names)."""
    lines = []
    if counts is not None:
        found = [counts.get(subset, {}).get(family) for subset in subsets]
        if None not in found:
            if len(set(found)) == 1:
                lines.append(f"examples per row: {found[0]}")
            else:
                lines.append("examples per row: " + ", ".join(f"{s} {n}" for s, n in zip(subsets, found)))
    if options is not None:
        used = [options.get(subset, {}).get(family, {}) for subset in subsets]
        common = {name: value for name, value in used[0].items() if all(other.get(name) == value for other in used)}
        if common:
            lines.append("options: " + " · ".join(_option_text(name, value) for name, value in common.items()))
    return lines


def legend(family: str, keys: Sequence[str]) -> list[str]:
    """One line per column: its meaning, range and direction, from the family's declaration."""
    found = [(key, output_for(family, key)) for key in keys]
    width = max((len(key) for key, output in found if output is not None), default=0)
    lines = []
    for key, output in found:
        if output is not None:
            direction = "higher is better" if output.higher_is_better else "lower is better"
            lines.append(f"  {key.ljust(width)}  {output.range}, {direction}: {output.meaning}")
    return lines


def format_tables(
    results: Results,
    label: str | dict[str, str],
    counts: dict[str, dict[str, int]] | None = None,
    options: dict[str, dict[str, dict[str, Any]]] | None = None,
    explain: bool = False,
) -> str:
    """One table per metric family: a row per subset, a column per metric (`label`, per family
    where it differs, names the subsets' column); intervals as `value [low, high]`. Under each
    table, with `counts` and `options` (`run_details`): the examples per row and the options
    used; with `explain`, one line per column (meaning, range, whether higher is better)."""
    blocks = []
    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    for family in families:
        rows = [(subset, _cells(by_family[family])) for subset, by_family in results.items() if family in by_family]
        names = list(dict.fromkeys(name for _, cells in rows for name in cells))
        widths = {name: max(len(name), 6, *(len(cells.get(name, "-")) for _, cells in rows)) for name in names}
        title = label if isinstance(label, str) else label.get(family, "")
        width = max(len(title), *(len(subset) for subset, _ in rows))
        lines = [family, "  ".join([title.ljust(width), *(name.rjust(widths[name]) for name in names)])]
        for subset, cells in rows:
            lines.append(
                "  ".join([subset.ljust(width), *(cells.get(name, "-").rjust(widths[name]) for name in names)])
            )
        lines += _footer(family, [subset for subset, _ in rows], counts, options)
        if explain:
            lines += legend(family, names)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_comparisons(
    evaluation: Evaluation, base: str, labels: dict[str, str], method: str, level: float, explain: bool = False
) -> str:
    """Per family, a row per compared subset and key: the base's value, the subset's, their
    difference with its interval and p-value; `*` marks p < 1 - level, explained below. Under
    each table: the paired examples of each subset (when known), and with `explain` the
    meaning and direction of each key (a positive difference is better where higher is)."""
    alpha = round(1 - level, 10)
    blocks = []
    families = list(dict.fromkeys(family for by_family in evaluation.comparisons.values() for family in by_family))
    for family in families:
        compared = [subset for subset, by_family in evaluation.comparisons.items() if family in by_family]
        header = [labels.get(family) or "subset", "metric", "base", "value", "difference", f"{level:.0%} interval"]
        rows = [[*header, "p-value"]]
        for subset in compared:
            for key, result in evaluation.comparisons[subset][family].items():
                interval = f"[{result['difference_ci_low']:+.4f}, {result['difference_ci_high']:+.4f}]"
                mark = " *" if result["p_value"] < alpha else "  "
                rows.append(
                    [subset, key, f"{result['a']:.4f}", f"{result['b']:.4f}", f"{result['difference']:+.4f}",
                     interval, f"{result['p_value']:.4f}{mark}"]
                )  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(header) + 1)]
        lines = [f"{family}: difference from {base} (paired {method} test; base: the value of {base})"]
        for row in rows:
            cells = [cell.ljust(size) if i < 2 else cell.rjust(size) for i, (cell, size) in enumerate(zip(row, widths))]
            lines.append("  ".join(cells).rstrip())
        paired = [(subset, evaluation.inputs.get((subset, family))) for subset in compared]
        if paired and all(found is not None for _, found in paired):
            sizes = [len(found[0]["predictions"]) for _, found in paired]  # type: ignore[index]
            shown = str(sizes[0]) if len(set(sizes)) == 1 else ", ".join(f"{s} {n}" for (s, _), n in zip(paired, sizes))
            lines.append(f"examples paired per row: {shown}")
        if explain:
            lines += legend(family, list(dict.fromkeys(row[1] for row in rows[1:])))
        blocks.append("\n".join(lines))
    note = f"* significant at the {alpha:g} level (p-value < {alpha:g} = 1 - confidence level {level:g})"
    return "\n\n".join(blocks) + "\n\n" + note


def _value_label(value: float) -> str:
    """A bar's label: 4 decimals, or 2 significant digits for values that would print as 0.0000."""
    if math.isnan(value):
        return ""
    return f"{value:.2g}" if 0 < abs(value) < 0.00005 else f"{value:.4f}"


def _number_or_nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def results_figure(results: Results, title: str = "") -> Any:
    """One bar chart per family: a group of bars per metric, a bar per subset, each labelled
    with its value (so a tiny value stays readable) and with error bars where the results have
    intervals (`<key>_ci_low` / `<key>_ci_high`); `title` names the file and the subsets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    subsets = list(results)
    keys = {  # the bars: every key but the interval bounds
        family: list(dict.fromkeys(name for subset in subsets for name in _cells(results[subset].get(family, {}))))
        for family in families
    }
    bars = max(len(names) for names in keys.values())
    inches = min(max(8.0, 0.35 * bars * len(subsets) + 3), 24.0)
    figure, axes = plt.subplots(len(families), 1, figsize=(inches, 3.4 * len(families)), squeeze=False)
    figure.set_layout_engine("constrained")
    if title:
        figure.suptitle(title)
    for axis, family in zip(axes[:, 0], families):
        names = keys[family]
        width = 0.8 / len(subsets)
        top = 1.0
        for position, subset in enumerate(subsets):
            found = results[subset].get(family, {})
            values = [_number_or_nan(found.get(name)) for name in names]
            highs = [_number_or_nan(found.get(f"{name}_ci_high")) for name in names]
            lows = [_number_or_nan(found.get(f"{name}_ci_low")) for name in names]
            top = max([top, *(value for value in values + highs if not math.isnan(value))])
            errors = None  # error bars from the intervals, where there are some
            if any(not math.isnan(high) for high in highs):
                errors = [[v - low if v == v and low == low else 0.0 for v, low in zip(values, lows)]]
                errors.append([high - v if v == v and high == high else 0.0 for v, high in zip(values, highs)])
            positions = [i + position * width for i in range(len(names))]
            bars = axis.bar(positions, values, width, label=subset, yerr=errors, capsize=3 if errors else 0)
            if len(subsets) <= MAX_LABELLED:  # beyond, the labels pile up above the bars
                rotation = 90 if len(subsets) > 2 else 0
                labels = [_value_label(value) for value in values]
                axis.bar_label(bars, labels, padding=2, fontsize="x-small", rotation=rotation)
        ticks = [name.replace("_", "\n", 1) if len(name) > 10 else name for name in names]  # no overlap
        lower = [(output := output_for(family, name)) is not None and not output.higher_is_better for name in names]
        ticks = [tick + "\n(lower is better)" if flag else tick for tick, flag in zip(ticks, lower)]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], ticks)
        axis.set_ylim(0, top * (1.25 if len(subsets) > 2 else 1.12))
        axis.set_ylabel("value")
        axis.set_title(family)
        if 1 < len(subsets) <= MAX_LABELLED:
            axis.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def plot_results(results: Results, path: Path, title: str = "") -> None:
    """Save `results_figure` (PNG, SVG, PDF, ...: the format of `path`'s extension)."""
    figure = results_figure(results, title)
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=120)
    plt.close(figure)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)
