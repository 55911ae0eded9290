"""The Spaces' plots (matplotlib, imported only when a plot is drawn)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .families import FAMILIES, keyword_options, split_intervals

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


def ndcg_by_rank(data: dict[str, Any], options: dict[str, Any], max_k: int) -> list[float]:
    """Mean nDCG@k for k = 1..max_k. The corpus is prepared and matched once; only the
    cut-off changes (with presence other than "all", the library is called per cut-off)."""
    from ..averaging import mean_or
    from ..matching import corpus_neighbors
    from ..preparation import prepare_corpus
    from ..weighted_keyword_prf import ranking_scores

    preparation = keyword_options({key: options[key] for key in ("normalize", "stemmer") if key in options})
    if options.get("presence", "all") != "all":
        from ..weighted_keyword_prf import ndcg_at_k

        chosen = {key: options[key] for key in ("match", "relevance", "zero_division", "presence") if key in options}
        return [
            ndcg_at_k(data["predictions"], data["references"], k=k, texts=data.get("texts"), **chosen, **preparation)
            for k in range(1, max_k + 1)
        ]
    corpus = prepare_corpus(data["predictions"], data["references"], **preparation)
    neighbors = corpus_neighbors(corpus, options.get("match", "substring"))
    n_gold = corpus.references.sizes.tolist()
    relevance, zero_division = options.get("relevance", "graded"), float(options.get("zero_division", 0.0))
    return [
        mean_or([v for v in ranking_scores(neighbors, n_gold, k, relevance)[0] if v is not None], zero_division)
        for k in range(1, max_k + 1)
    ]


def plot_ndcg_by_rank(
    data: dict[str, Any], options: dict[str, Any], max_k: int = 20, interval: tuple[float, float] | None = None
) -> Any:
    """Mean nDCG@k for k = 1..max_k (the k slider's range), the chosen k marked (with an
    error bar when its `interval` is given)."""
    ks = list(range(1, max_k + 1))
    values = ndcg_by_rank(data, options, max_k)
    figure, axes = _figure()
    axes.plot(ks, values, marker="o", color=_ORANGE)
    chosen = int(options.get("k", 5))
    if 1 <= chosen <= max_k:
        axes.axvline(chosen, color="grey", linestyle="--", linewidth=1)
        if interval is not None:
            value = values[chosen - 1]
            axes.errorbar([chosen], [value], yerr=_error([value], [interval]), color="black", capsize=4, linewidth=1.5)
        axes.annotate(
            f"nDCG@{chosen} = {values[chosen - 1]:.3f}",
            (chosen, values[chosen - 1]),
            xytext=(6, -14),
            textcoords="offset points",
        )
    axes.set_ylim(0, 1.05)
    axes.set_xlim(0.5, max_k + 0.5)
    _integer_axis(axes.xaxis)
    axes.set_xlabel("rank cut-off k")
    axes.set_ylabel("mean nDCG@k")
    axes.set_title("nDCG by rank cut-off (dashed: the chosen k)")
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


def plot_comparison(
    rows: Sequence[tuple[str, str, float]], intervals: Sequence[tuple[float, float] | None] | None = None
) -> Any:
    """One horizontal bar per (family, metric), values labelled, error bars for `intervals`."""
    figure, axes = _figure(7.0, 0.9 + 0.28 * len(rows))
    labels = [f"{family}: {metric}" for family, metric, _ in rows]
    positions = range(len(rows))
    values = [value for *_, value in rows]
    bars = axes.barh(list(positions), values, xerr=_error(values, intervals), capsize=3, color=_BLUE)
    axes.bar_label(bars, [f"{value:.3f}" for value in values], padding=2, fontsize=8)
    axes.set_yticks(list(positions), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 1.12)
    axes.set_xlabel("value")
    return figure


def plot_differences(rows: Sequence[tuple[str, str, float]], intervals: Sequence[tuple[float, float]]) -> Any:
    """One horizontal bar per metric: the difference b - a, its interval as an error bar, and
    the line of no difference."""
    figure, axes = _figure(7.0, 0.9 + 0.35 * len(rows))
    positions = list(range(len(rows)))
    values = [value for *_, value in rows]
    bars = axes.barh(positions, values, xerr=_error(values, intervals), capsize=3, color=_ORANGE)
    axes.bar_label(bars, [f"{value:+.3f}" for value in values], padding=4, fontsize=8)
    axes.axvline(0, color="grey", linewidth=1)
    axes.set_yticks(positions, [metric for _, metric, _ in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(-1.15, 1.15)
    axes.set_xlabel("difference b - a (error bar: its interval)")
    return figure


def plot_for(name: str, data: dict[str, Any], options: dict[str, Any], summary: dict, per_example: dict) -> Any:
    """The family's plot: per-aspect bars, the nDCG curve, or a per-example histogram."""
    summary, intervals = split_intervals(summary)
    if name == "aspect_sentiment_score":
        return plot_aspects(per_example, summary["score"], intervals.get("score"))
    if name == "weighted_keyword_prf":
        k_slider = next(option for option in FAMILIES[name].options if option.name == "k")
        interval = intervals.get(f"ndcg@{int(options['k'])}")
        return plot_ndcg_by_rank(data, options, max_k=int(k_slider.bounds[1]), interval=interval)
    key = {
        "keyword_prf": "f1",
        "semantic_keyword_prf": "semantic_f1",
        "sentiment_appropriateness": "sas_from_keywords",
        "keyword_diversity": "unique_keyword_ratio",
    }.get(name)
    if key not in per_example:
        key = next(iter(per_example), None)
    return plot_distribution(per_example.get(key, []), key or name, summary.get(key), intervals.get(key))
