"""The figures of the systems-by-metrics view: per family a bar per system and metric, with
interval error bars, drawn by matplotlib for the CLI's --plot and the Spaces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..families.registry import output_for
from .text import Results, _number, value_text

MAX_LABELLED = 20  # a plot labels its bars and has a legend up to this many subsets


def _cells(values: Mapping[str, Any]) -> dict[str, str]:
    """{key: cell}, a key with an interval as "value [low, high]" (its `_ci_` keys folded in)."""
    cells = {}
    for name, value in values.items():
        stem = re.sub(r"_ci_(low|high)$", "", name)
        if stem != name and stem in values:
            continue
        cells[name] = value_text(_number(value)) if not isinstance(value, str) else value
    return cells


def _value_label(value: float) -> str:
    """A bar's label: 4 decimals, or 2 significant digits for values that would print as 0.0000."""
    if math.isnan(value):
        return ""
    return f"{value:.2g}" if 0 < abs(value) < 0.00005 else f"{value:.4f}"


def _number_or_nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def results_figure(results: Results, title: str = "", keys: Sequence[str] | None = None) -> Any:
    """One bar chart per family: a group of bars per metric (those of `keys`, if given), a bar per
    subset, each labelled with its value (so a tiny value stays readable) and with error bars
    where the results have intervals (`<key>_ci_low` / `<key>_ci_high`); `title` names the file
    and the subsets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    subsets = list(results)
    drawn = {  # the bars: every key but the interval bounds
        family: [
            name
            for name in dict.fromkeys(name for subset in subsets for name in _cells(results[subset].get(family, {})))
            if keys is None or name in keys
        ]
        for family in families
    }
    bars = max(len(names) for names in drawn.values())
    inches = min(max(8.0, 0.35 * bars * len(subsets) + 3), 24.0)
    figure, axes = plt.subplots(len(families), 1, figsize=(inches, 3.4 * len(families)), squeeze=False)
    figure.set_layout_engine("constrained")
    if title:
        figure.suptitle(title)
    for axis, family in zip(axes[:, 0], families):
        names = drawn[family]
        width = 0.8 / len(subsets)
        top = 0.0  # the data's own scale: small values and their differences stay visible
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
        axis.set_ylim(0, (top or 1.0) * (1.25 if len(subsets) > 2 else 1.12))
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
