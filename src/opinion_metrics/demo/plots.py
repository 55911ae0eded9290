"""The Spaces' plots (matplotlib, imported only when a plot is drawn)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .controls import keyword_options, split_intervals

_BLUE, _ORANGE = "#4c72b0", "#dd8452"


def _figure(width: float = 6.0, height: float = 3.2) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _integer_axis(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def plot_distribution(
    values: Sequence[Any], label: str, corpus: float | None = None, interval: tuple[float, float] | None = None
) -> Any:
    """Histogram of per-example values in [0, 1]; the count axis has integer ticks. With an
    `interval`, the corpus value is a line and its interval a shaded band."""
    figure, axes = _figure()
    present = [v for v in values if isinstance(v, (int, float))]
    axes.hist(present, bins=[i / 10 for i in range(11)], color=_BLUE, edgecolor="white")
    if interval is not None and corpus is not None:
        axes.axvspan(*interval, color=_ORANGE, alpha=0.25)
        axes.axvline(corpus, color=_ORANGE)
    axes.set_xlim(0, 1)
    _integer_axis(axes.yaxis)
    axes.set_xlabel(f"per-example {label}")
    axes.set_ylabel("number of examples")
    title = f"{label}: mean {sum(present) / len(present):.3f} over {len(present)} examples" if present else label
    if interval is not None and corpus is not None:
        title = f"{label} {corpus:.3f}, interval [{interval[0]:.3f}, {interval[1]:.3f}] (line, band)"
    axes.set_title(title, fontsize=10)
    return figure


def ranking_by_rank(data: dict[str, Any], options: dict[str, Any], max_k: int) -> tuple[list[float], list[float]]:
    """Mean nDCG@k and MAP@k for k = 1..max_k. The corpus is prepared and matched once; only
    the cut-off changes (with presence other than "all", the library is called per cut-off)."""
    from ..core.matching import corpus_neighbors
    from ..core.preparation import prepare_corpus
    from ..families.averaging import mean_or
    from ..families.weighted_keyword_prf import ranking_scores

    preparation = keyword_options({key: options[key] for key in ("normalize", "stemmer") if key in options})
    if options.get("presence", "all") != "all":
        from ..families.weighted_keyword_prf import map_at_k, ndcg_at_k

        chosen = {key: options[key] for key in ("match", "relevance", "zero_division", "presence") if key in options}
        given = {"texts": data.get("texts"), **chosen, **preparation}
        without_relevance = {key: value for key, value in given.items() if key != "relevance"}  # MAP is binary
        ks = range(1, max_k + 1)
        return (
            [ndcg_at_k(data["predictions"], data["references"], k=k, **given) for k in ks],
            [map_at_k(data["predictions"], data["references"], k=k, **without_relevance) for k in ks],
        )
    corpus = prepare_corpus(data["predictions"], data["references"], **preparation)
    neighbors = corpus_neighbors(corpus, options.get("match", "substring"))
    n_gold = corpus.references.sizes.tolist()
    relevance, zero_division = options.get("relevance", "graded"), float(options.get("zero_division", 0.0))
    ndcg, average_precision = [], []
    for k in range(1, max_k + 1):
        by_example = ranking_scores(neighbors, n_gold, k, relevance)
        ndcg.append(mean_or([v for v in by_example[0] if v is not None], zero_division))
        average_precision.append(mean_or([v for v in by_example[1] if v is not None], zero_division))
    return ndcg, average_precision


def ndcg_by_rank(data: dict[str, Any], options: dict[str, Any], max_k: int) -> list[float]:
    """Mean nDCG@k for k = 1..max_k (see `ranking_by_rank`)."""
    return ranking_by_rank(data, options, max_k)[0]


def plot_ndcg_by_rank(
    data: dict[str, Any],
    options: dict[str, Any],
    max_k: int | None = None,
    interval: tuple[float, float] | None = None,
) -> Any:
    """Mean nDCG@k and MAP@k for k = 1..max_k (default: the longest prediction list, at
    least the chosen k), the chosen k marked (with an error bar on nDCG when its `interval`
    is given). Both are higher-is-better values in [0, 1], on one axis."""
    chosen = int(options.get("k", 5))
    if max_k is None:
        max_k = max([chosen, *(len(keywords) for keywords in data["predictions"])])
    ks = list(range(1, max_k + 1))
    values, average_precision = ranking_by_rank(data, options, max_k)
    figure, axes = _figure()
    axes.plot(ks, values, marker="o", color=_ORANGE, label="nDCG@k")
    if 1 <= chosen <= max_k:
        axes.axvline(chosen, color="grey", linestyle="--", linewidth=1)
        if interval is not None:
            value = values[chosen - 1]
            axes.errorbar([chosen], [value], yerr=_error([value], [interval]), color="black", capsize=4, linewidth=1.5)
        right = chosen > (max_k + 1) / 2  # the label on the side with room
        axes.annotate(
            f"nDCG@{chosen} = {values[chosen - 1]:.3f}",
            (chosen, values[chosen - 1]),
            xytext=(-6 if right else 6, -14),
            textcoords="offset points",
            ha="right" if right else "left",
        )
    axes.plot(ks, average_precision, marker="s", color=_BLUE, label="MAP@k")
    axes.set_ylim(0, 1.05)
    axes.set_xlim(0.5, max_k + 0.5)
    _integer_axis(axes.xaxis)
    axes.set_xlabel("rank cut-off k")
    axes.set_ylabel("mean (higher is better)")
    axes.legend(loc="lower right", fontsize=8)
    axes.set_title("nDCG@k and MAP@k by rank cut-off (dashed: the chosen k)", fontsize=10)
    return figure


def _label(value: float) -> str:
    """Two decimals, or three significant digits when that would read 0.00."""
    return f"{value:.2f}" if value == 0 or abs(value) >= 0.005 else f"{value:.2g}"


def _error(values: Sequence[Any], intervals: Sequence[Any] | None) -> list[list[float]] | None:
    """Matplotlib's asymmetric error bars (below, above) from (low, high) intervals; none
    where the value or its interval is missing."""
    if intervals is None:
        return None
    below, above = [], []
    for value, interval in zip(values, intervals):
        known = (
            isinstance(value, (int, float))
            and interval is not None
            and all(isinstance(bound, (int, float)) for bound in interval)
        )
        below.append(max(0.0, value - interval[0]) if known else 0.0)
        above.append(max(0.0, interval[1] - value) if known else 0.0)
    return [below, above]


def _bars(
    axes: Any,
    positions: Sequence[float],
    values: Sequence[Any],
    width: float,
    intervals: Sequence[Any] | None = None,
    **style: Any,
) -> None:
    """Bars with their values written on top (readable when a bar is tiny), error bars for
    their `intervals`; a missing value (None or text) is an empty bar labelled n/a."""
    heights = [v if isinstance(v, (int, float)) else 0.0 for v in values]
    bars = axes.bar(positions, heights, width, yerr=_error(values, intervals), capsize=3, **style)
    labels = [_label(v) if isinstance(v, (int, float)) else "n/a" for v in values]
    axes.bar_label(bars, labels, padding=2, fontsize=8)


def _column_intervals(columns: dict[str, list], key: str) -> list[tuple[Any, Any]] | None:
    if f"{key}_ci_low" not in columns:
        return None
    return list(zip(columns[f"{key}_ci_low"], columns[f"{key}_ci_high"]))


def plot_aspects(per_aspect: dict[str, list], score: float, interval: tuple[float, float] | None = None) -> Any:
    """Per-aspect F1 and R2 bars, values labelled, error bars where the table has intervals,
    the legend beside the plot."""
    figure, axes = _figure(7.0, 3.6)
    aspects = per_aspect["aspect"]
    positions = range(len(aspects))
    for offset, key, color, label in ((-0.2, "f1", _BLUE, "presence F1"), (0.2, "r2", _ORANGE, "rating R2")):
        intervals = _column_intervals(per_aspect, key)
        position = [p + offset for p in positions]
        _bars(axes, position, per_aspect[key], 0.4, intervals, color=color, label=label)
    axes.set_xticks(list(positions), aspects, rotation=20, ha="right")
    axes.set_ylim(0, 1.15)
    axes.set_xlabel("aspect")
    axes.set_ylabel("value")
    figure.legend(loc="outside right upper", frameon=False)
    shown = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval is not None else ""
    axes.set_title(f"aspect sentiment score {score:.3f}{shown}")
    return figure


def plot_differences(rows: Sequence[tuple[str, str, float]], intervals: Sequence[tuple[float, float]]) -> Any:
    """One horizontal bar per metric: the difference from the baseline, its interval as an error bar, and
    the line of no difference; a metric where lower is better (a negative difference is an
    improvement) says so."""
    figure, axes = _figure(7.0, 0.9 + 0.35 * len(rows))
    positions = list(range(len(rows)))
    values = [value for *_, value in rows]
    bars = axes.barh(positions, values, xerr=_error(values, intervals), capsize=3, color=_ORANGE)
    axes.bar_label(bars, [f"{value:+.3f}" for value in values], padding=4, fontsize=8)
    axes.axvline(0, color="grey", linewidth=1)
    from ..families.registry import output_for

    lower = [(output := output_for(f, m)) is not None and not output.higher_is_better for f, m, _ in rows]
    labels = [f"{metric} (lower is better)" if flag else metric for (_, metric, _), flag in zip(rows, lower)]
    axes.set_yticks(positions, labels, fontsize=8)
    axes.invert_yaxis()
    reach = max([abs(bound) for interval in intervals for bound in interval] + [abs(value) for value in values])
    axes.set_xlim(-1.3 * (reach or 1.0), 1.3 * (reach or 1.0))  # the differences' own scale, 0 in the middle
    axes.set_xlabel("difference from the baseline (error bar: its interval)")
    return figure


def plot_for(name: str, data: dict[str, Any], options: dict[str, Any], summary: dict, per_example: dict) -> Any:
    """The family's plot: per-aspect bars, the nDCG curve, or a per-example histogram."""
    summary, intervals = split_intervals(summary)
    if name == "aspect_sentiment_score":
        return plot_aspects(per_example, summary["score"], intervals.get("score"))
    if name == "weighted_keyword_prf":
        interval = intervals.get(f"ndcg@{int(options['k'])}")
        return plot_ndcg_by_rank(data, options, interval=interval)
    key = {
        "keyword_prf": "f1",
        "semantic_keyword_prf": "semantic_f1",
        "sentiment_appropriateness": "sas_from_keywords",
        "keyword_diversity": "unique_keyword_ratio",
        "sentiment_tuple_prf": "f1",
    }.get(name)
    if key not in per_example:
        key = next(iter(per_example), None)
    return plot_distribution(per_example.get(key, []), key or name, summary.get(key), intervals.get(key))


def plot_systems(results: dict[str, dict[str, dict[str, Any]]], title: str = "") -> Any:
    """Every system at once: a group of horizontal bars per (family, metric), a bar per system
    (error bars where the results have intervals), values labelled, a metric where lower is
    better said so, the systems in a legend."""
    from ..families.registry import output_for

    systems = list(results)
    rows = list(
        dict.fromkeys(
            (family, key)
            for by_family in results.values()
            for family, result in by_family.items()
            for key in split_intervals(result)[0]
        )
    )
    height = 0.8 / len(systems)
    figure, axes = _figure(7.0, 0.9 + (0.22 + 0.12 * len(systems)) * len(rows))
    palette = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]
    for number, system in enumerate(systems):
        values, intervals = [], []
        for family, key in rows:
            found, bounds = split_intervals(results[system].get(family, {}))
            values.append(found.get(key))
            intervals.append(bounds.get(key))
        positions = [index + number * height for index in range(len(rows))]
        heights = [value if isinstance(value, (int, float)) else 0.0 for value in values]
        errors = _error(values, intervals) if any(intervals) else None
        bars = axes.barh(positions, heights, height, xerr=errors, capsize=2, color=palette[number % len(palette)],
                         label=system or "value")  # fmt: skip
        axes.bar_label(bars, [f"{v:.3f}" if isinstance(v, (int, float)) else "n/a" for v in values], padding=2,
                       fontsize=7)  # fmt: skip
    labels = [
        f"{family}: {key}" + (" (lower is better)" if (o := output_for(family, key)) and not o.higher_is_better else "")
        for family, key in rows
    ]
    axes.set_yticks([index + 0.4 - height / 2 for index in range(len(rows))], labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 1.15)
    axes.set_xlabel("value (higher is better, unless the label says lower)")
    if len(systems) > 1:
        figure.legend(loc="outside right upper", frameon=False, fontsize=8)
    if title:
        axes.set_title(title, fontsize=10)
    return figure
