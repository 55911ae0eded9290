"""The Spaces' plots: nDCG and MAP at each cut-off of the slider (following presence), counts
in integers, small bars labelled, legends off the bars, intervals drawn as error bars."""

import pytest

pytest.importorskip("gradio")

from opinion_metrics import weighted_keyword_prf  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines, parse_rating_lines  # noqa: E402
from opinion_metrics.families.aspect_sentiment_score import aspect_sentiment_score  # noqa: E402


def test_ndcg_by_rank_plot_shows_ndcg_at_each_cut_off_of_the_slider_and_marks_k():
    from opinion_metrics import map_at_k, ndcg_at_k
    from opinion_metrics.demo.plots import plot_ndcg_by_rank

    data = {
        "predictions": [["scam", "family", "poverty", "cinematography", "fraud"], ["x"]],
        "references": [["fraud", "poverty", "scam"], ["x", "y"]],
    }
    options = {"match": "token", "normalize": "default", "stemmer": "none", "relevance": "binary", "k": 3}
    slider = next(option for option in FAMILIES["weighted_keyword_prf"].options if option.name == "k")
    axes = plot_ndcg_by_rank(data, options, max_k=int(slider.bounds[1])).axes[0]
    curve, marker, map_curve = axes.lines
    expected = [ndcg_at_k(**data, k=k, match="token", relevance="binary") for k in range(1, 21)]
    assert list(curve.get_xdata()) == list(range(1, 21))
    assert list(curve.get_ydata()) == pytest.approx(expected)
    expected = [map_at_k(**data, k=k, match="token") for k in range(1, 21)]
    assert list(map_curve.get_ydata()) == pytest.approx(expected)
    assert list(marker.get_xdata()) == [3, 3]  # the chosen k, dashed
    assert axes.get_xlabel() == "rank cut-off k" and axes.get_ylabel() == "mean (higher is better)"
    # by default, up to the longest prediction list (5 here)
    assert list(plot_ndcg_by_rank(data, options).axes[0].lines[0].get_xdata()) == [1, 2, 3, 4, 5]


def test_plots_count_in_integers_label_small_bars_and_keep_legends_off_the_bars():
    from matplotlib.ticker import MaxNLocator

    from opinion_metrics.demo.plots import plot_aspects, plot_distribution, plot_systems

    axes = plot_distribution([0.5, 0.55, 1.0], "f1").axes[0]
    assert isinstance(axes.yaxis.get_major_locator(), MaxNLocator)
    assert all(float(tick).is_integer() for tick in axes.yaxis.get_major_locator().tick_values(0, 2))
    assert axes.get_xlabel() == "per-example f1" and axes.get_ylabel() == "number of examples"
    per_aspect = {"aspect": ["food", "hotel"], "f1": [0.004, 1.0], "r2": [0.5, "n/a (no overlap)"]}
    figure = plot_aspects(per_aspect, 0.002)
    axes = figure.axes[0]
    assert axes.get_legend() is None and len(figure.legends) == 1  # beside the axes, not over the bars
    assert [text.get_text() for text in axes.texts] == ["0.004", "1.00", "0.50", "n/a"]
    axes = plot_systems({"": {"keyword_prf": {"f1": 0.001, "recall": 0.5}}}).axes[0]
    assert [text.get_text() for text in axes.texts] == ["0.001", "0.500"]


def test_the_ndcg_curve_follows_presence():
    from opinion_metrics import ndcg_at_k
    from opinion_metrics.demo.plots import ndcg_by_rank

    data = {
        "predictions": [["scam", "family", "poverty", "fraud"], ["x", "y"]],
        "references": [["fraud", "poverty", "scam"], ["x", "z"]],
        "texts": ["a family scam and a fraud", "x and z"],
    }
    options = {"match": "substring", "relevance": "graded", "zero_division": 0.0, "presence": "present"}
    expected = [ndcg_at_k(**data, k=k, presence="present") for k in range(1, 6)]
    assert ndcg_by_rank(data, options, 5) == pytest.approx(expected)
    assert expected != [ndcg_at_k(data["predictions"], data["references"], k=k) for k in range(1, 6)]


def _error_bars(axes):
    """(x, y) extents of each error bar line drawn on `axes`."""
    from matplotlib.collections import LineCollection

    return [
        segment
        for collection in axes.collections
        if isinstance(collection, LineCollection)
        for segment in collection.get_segments()
    ]


def test_the_plots_draw_the_intervals_as_error_bars():
    from opinion_metrics.demo.controls import evaluate_family, keyword_options
    from opinion_metrics.demo.plots import plot_for

    family = FAMILIES["aspect_sentiment_score"]
    options = {o.name: o.default for o in family.options} | {"confidence_level": True}
    data = {
        "predictions": parse_rating_lines(family.example[0]),
        "references": parse_rating_lines(family.example[1]),
        "aspects": family.example[2].split(", "),
    }
    summary, per_aspect = evaluate_family(family.name, data, options)
    axes = plot_for(family.name, data, options, summary, per_aspect).axes[0]
    expected = aspect_sentiment_score(data["predictions"], data["references"], confidence_level=0.95)
    vertical = sorted(
        (round(s[0][0], 6), round(s[0][1], 9), round(s[1][1], 9)) for s in _error_bars(axes) if s[0][0] == s[1][0]
    )
    f1_bars = [
        (round(j - 0.2, 6), round(expected[f"f1_{a}_ci_low"], 9), round(expected[f"f1_{a}_ci_high"], 9))
        for j, a in enumerate(data["aspects"])
    ]
    assert set(f1_bars) <= set(vertical)
    assert "[" in axes.get_title() and f"{expected['score_ci_low']:.3f}" in axes.get_title()
    # The nDCG curve: an error bar at the chosen k spanning the library's ndcg@k interval.
    family = FAMILIES["weighted_keyword_prf"]
    options = {o.name: o.default for o in family.options} | {"confidence_level": True, "k": 3}
    keywords, scores = parse_keyword_lines(family.example[0])
    data = {"predictions": keywords, "scores": scores, "references": parse_keyword_lines(family.example[1])[0]}
    summary, per_example = evaluate_family(family.name, data, options)
    axes = plot_for(family.name, data, options, summary, per_example).axes[0]
    expected = weighted_keyword_prf(keywords, scores, data["references"], k=3, confidence_level=0.95)
    ((low, high),) = [(s[0][1], s[1][1]) for s in _error_bars(axes)]
    assert (low, high) == pytest.approx((expected["ndcg@3_ci_low"], expected["ndcg@3_ci_high"]))
    assert keyword_options({"confidence_level": True}) == {"confidence_level": 0.95}
