"""The command line's intervals and plots: --ci prints each value with its interval, keeps the
flat keys in --output and draws error bars; the plot names the file and the models, labels
tiny values, and draws no bar for an undefined value (printed as n/a)."""

import json
import re

import pytest
from cli_cases import EXAMPLE, _assert_close, _row_of

from opinion_metrics import keyword_prf, weighted_keyword_prf
from opinion_metrics.cli import main
from opinion_metrics.io.read import load_table


def test_the_plot_names_the_file_and_models_and_labels_tiny_values():
    from opinion_metrics.view.figures import results_figure

    results = {
        "base": {"keyword_prf": {"precision": 0.4, "recall": 0.0035}},
        "sentiment": {"keyword_prf": {"precision": 0.2}},
    }
    figure = results_figure(results, "SW_Episode4.jsonl.gz (model: base, sentiment)")
    assert figure.get_suptitle() == "SW_Episode4.jsonl.gz (model: base, sentiment)"
    (axis,) = figure.axes
    labels = [text.get_text() for text in axis.texts]
    assert "0.0035" in labels and "0.4000" in labels and "0.2000" in labels
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["base", "sentiment"]
    # the missing recall of "sentiment" is no bar, not a bar of 0
    assert len([patch for patch in axis.patches if patch.get_height() == patch.get_height()]) == 3


def test_an_undefined_value_prints_as_n_a_and_draws_no_bar():
    from opinion_metrics.view.figures import results_figure
    from opinion_metrics.view.text import format_tables

    results = {"m1": {"aspect_sentiment_score": {"score": 0.5, "r2_x": None}}, "m2": {"keyword_prf": {"f1": 0.25}}}
    assert format_tables(results, "model").splitlines() == [
        "aspect_sentiment_score",
        "model  score ↑",
        "m1     0.5000",
        "",
        "aspect_sentiment_score: x",
        "model  r2 ↑",
        "m1     n/a",
        "↑ higher is better",
        "",
        "keyword_prf",
        "model     f1 ↑",
        "m2     0.2500",
        "↑ higher is better",
    ]
    axis = results_figure(results).axes[0]
    assert [text.get_text() for text in axis.texts] == ["0.5000", "", "", ""]


def test_ci_prints_intervals_keeps_flat_keys_and_draws_error_bars(tmp_path, capsys):
    table = load_table(EXAMPLE, [], [])
    rows = [i for i, model in enumerate(table["model"]) if model == "sentiment"]
    predictions, references = [table["predictions"][i] for i in rows], [table["references"][i] for i in rows]
    scores = [table["scores"][i] for i in rows]
    output = tmp_path / "out.json"
    interval = ["--ci", "0.9", "--n-resamples", "200", "--random-state", "5"]
    assert main([str(EXAMPLE), "--by", "model", *interval, "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    options = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 5}
    expected = {
        "keyword_prf": keyword_prf(predictions, references, **options),
        "weighted_keyword_prf": weighted_keyword_prf(predictions, scores, references, **options),
    }
    _assert_close(json.loads(output.read_text())["sentiment"], expected)  # the flat keys
    for family, values in expected.items():
        keys = [key for key in values if "_ci_" not in key]
        cells = [f"{values[k]:.4f} [{values[k + '_ci_low']:.4f}, {values[k + '_ci_high']:.4f}]" for k in keys]
        row = re.sub(r"(\d)[* ] \[", r"\1 [", _row_of(printed, family, "sentiment"))  # the best mark's place
        assert re.split(r"\s{2,}", row) == ["sentiment", *cells]
        header = printed.split(family + "\n", 1)[1].splitlines()[0].split()
        assert header == ["model", *(word for key in keys for word in (key, "↑"))]  # no separate _ci_ columns
    from opinion_metrics.view.figures import results_figure

    figure = results_figure(json.loads(output.read_text()))
    axis = figure.axes[0]  # keyword_prf: precision, recall, f1 for baseline and sentiment
    assert [label.get_text() for label in axis.get_xticklabels()] == ["precision", "recall", "f1"]
    bars = [container for container in axis.containers if hasattr(container, "errorbar")]
    segments = bars[1].errorbar.lines[2][0].get_segments()  # the sentiment bars' error bars
    f1 = expected["keyword_prf"]
    assert segments[2][:, 1] == pytest.approx([f1["f1_ci_low"], f1["f1_ci_high"]])
