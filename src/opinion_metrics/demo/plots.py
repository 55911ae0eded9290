"""The Spaces' plots (matplotlib, imported only when a plot is drawn)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .families import FAMILIES, keyword_options

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


def plot_distribution(values: Sequence[Any], label: str) -> Any:
    """Histogram of per-example values in [0, 1]; the count axis has integer ticks."""
    figure, axes = _figure()
    present = [v for v in values if isinstance(v, (int, float))]
    axes.hist(present, bins=[i / 10 for i in range(11)], color=_BLUE, edgecolor="white")
    axes.set_xlim(0, 1)
    _integer_axis(axes.yaxis)
    axes.set_xlabel(f"per-example {label}")
    axes.set_ylabel("number of examples")
    axes.set_title(
        f"{label}: mean {sum(present) / len(present):.3f} over {len(present)} examples" if present else label
    )
    return figure


def ndcg_by_rank(data: dict[str, Any], options: dict[str, Any], max_k: int) -> list[float]:
    """Mean nDCG@k for k = 1..max_k. The corpus is prepared and matched once; only the
    cut-off changes."""
    from ..averaging import mean_or
    from ..matching import corpus_neighbors
    from ..preparation import prepare_corpus
    from ..weighted_keyword_prf import ranking_scores

    preparation = keyword_options({key: options[key] for key in ("normalize", "stemmer") if key in options})
    corpus = prepare_corpus(data["predictions"], data["references"], **preparation)
    neighbors = corpus_neighbors(corpus, options.get("match", "substring"))
    n_gold = corpus.references.sizes.tolist()
    relevance, zero_division = options.get("relevance", "graded"), float(options.get("zero_division", 0.0))
    return [
        mean_or([v for v in ranking_scores(neighbors, n_gold, k, relevance)[0] if v is not None], zero_division)
        for k in range(1, max_k + 1)
    ]


def plot_ndcg_by_rank(data: dict[str, Any], options: dict[str, Any], max_k: int = 20) -> Any:
    """Mean nDCG@k for k = 1..max_k (the k slider's range), the chosen k marked."""
    ks = list(range(1, max_k + 1))
    values = ndcg_by_rank(data, options, max_k)
    figure, axes = _figure()
    axes.plot(ks, values, marker="o", color=_ORANGE)
    chosen = int(options.get("k", 5))
    if 1 <= chosen <= max_k:
        axes.axvline(chosen, color="grey", linestyle="--", linewidth=1)
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


def _bars(axes: Any, positions: Sequence[float], values: Sequence[Any], width: float, **style: Any) -> None:
    """Bars with their values written on top (readable when a bar is tiny); a missing
    value (None or text) is an empty bar labelled n/a."""
    heights = [v if isinstance(v, (int, float)) else 0.0 for v in values]
    bars = axes.bar(positions, heights, width, **style)
    labels = [_label(v) if isinstance(v, (int, float)) else "n/a" for v in values]
    axes.bar_label(bars, labels, padding=2, fontsize=8)


def plot_aspects(per_aspect: dict[str, list], score: float) -> Any:
    """Per-aspect F1 and R2 bars, values labelled, the legend above the plot."""
    figure, axes = _figure(7.0, 3.6)
    aspects = per_aspect["aspect"]
    positions = range(len(aspects))
    _bars(axes, [p - 0.2 for p in positions], per_aspect["f1"], 0.4, color=_BLUE, label="presence F1")
    _bars(axes, [p + 0.2 for p in positions], per_aspect["r2"], 0.4, color=_ORANGE, label="rating R2")
    axes.set_xticks(list(positions), aspects, rotation=20, ha="right")
    axes.set_ylim(0, 1.15)
    axes.set_xlabel("aspect")
    axes.set_ylabel("value")
    figure.legend(loc="outside right upper", frameon=False)
    axes.set_title(f"aspect sentiment score {score:.3f}")
    return figure


def plot_comparison(rows: Sequence[tuple[str, str, float]]) -> Any:
    """One horizontal bar per (family, metric), values labelled."""
    figure, axes = _figure(7.0, 0.9 + 0.28 * len(rows))
    labels = [f"{family}: {metric}" for family, metric, _ in rows]
    positions = range(len(rows))
    bars = axes.barh(list(positions), [value for *_, value in rows], color=_BLUE)
    axes.bar_label(bars, [f"{value:.3f}" for *_, value in rows], padding=2, fontsize=8)
    axes.set_yticks(list(positions), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 1.12)
    axes.set_xlabel("value")
    return figure


def plot_for(name: str, data: dict[str, Any], options: dict[str, Any], summary: dict, per_example: dict) -> Any:
    """The family's plot: per-aspect bars, the nDCG curve, or a per-example histogram."""
    if name == "aspect_sentiment_score":
        return plot_aspects(per_example, summary["score"])
    if name == "weighted_keyword_prf":
        k_slider = next(option for option in FAMILIES[name].options if option.name == "k")
        return plot_ndcg_by_rank(data, options, max_k=int(k_slider.bounds[1]))
    key = {
        "keyword_prf": "f1",
        "semantic_keyword_prf": "semantic_f1",
        "sentiment_appropriateness": "sas_from_keywords",
        "keyword_diversity": "unique_keyword_ratio",
    }.get(name)
    if key not in per_example:
        key = next(iter(per_example), None)
    return plot_distribution(per_example.get(key, []), key or name)
