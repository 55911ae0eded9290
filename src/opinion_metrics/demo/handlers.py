"""The run behind a Space's Compute: read the systems from the boxes or the upload, compute
each, tabulate with the shared view (`opinion_metrics.view`), plot; errors in the Space's
words. Gradio is imported only to raise its errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..view.figures import results_figure
from .comparing import _against_baseline
from .controls import (
    FAMILIES,
    evaluate_family,
)
from .parsing import PREDICTION_PREFIX
from .plots import plot_for
from .results import (
    NO_BASELINE,
    Outcome,
    _counted,
    _read_systems,
    _rows_table,
    _status,
    error,
    legend,
    options_line,
    results_frame,
    space_message,
)


def _evaluate(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | None,
    values: Sequence[Any],
    prediction_prefix: str = PREDICTION_PREFIX,
    mapping: Mapping[str, str] | None = None,
    baseline: str = NO_BASELINE,
) -> Outcome:
    """Parse, compute, tabulate, plot: one system, or a column per system (typed "[name]" lines,
    a file's system column or side-by-side columns), with the differences from `baseline`."""
    family = FAMILIES[name]
    options = {option.name: value for option, value in zip(family.options, values)}
    systems = _read_systems(name, predictions, references, extra, upload, mapping, prediction_prefix)
    results: dict[str, dict[str, Any]] = {}
    per_examples: dict[str, dict[str, list]] = {}
    for system, inputs in systems.inputs.items():
        try:
            summary, per_example = evaluate_family(name, inputs.data, options)
        except (ValueError, ImportError) as problem:
            message = space_message(problem, inputs.where)
            raise error(f"system {system!r}: {message}" if system else message) from None
        if not summary:
            raise error("nothing to compute: no example has both predictions and something to compare them with")
        results[system], per_examples[system] = {name: summary}, per_example
    if name == "aspect_sentiment_score" and len(results) == 1:  # one system: its aspects in the per-aspect table
        for result in results.values():
            result[name] = {key: value for key, value in result[name].items() if key.split("_ci_")[0] == "score"}
    first = next(iter(results))
    if name == "aspect_sentiment_score":  # per aspect, not per example: every example counts
        counts = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    else:
        counts = {system: _counted(per_example) for system, per_example in per_examples.items()}
    differences, report, notes = None, None, ""
    chosen = baseline if baseline in results and len(results) > 1 else None
    if chosen is not None:
        differences, report, notes = _against_baseline(name, systems, chosen, options)
    totals = {system: len(inputs.data["predictions"]) for system, inputs in systems.inputs.items()}
    frame = results_frame([name], results, counts, differences, chosen, totals=totals)
    if len(results) == 1:
        inputs = systems.inputs[first]
        figure = plot_for(name, inputs.data, options, results[first][name], per_examples[first])
    else:
        keys = _plotted(name, results)
        figure = results_figure(results, keys=keys)  # a bar per system, the legend naming them
    status = _status(systems, counts, options_line(family, options), options.get("presence", "all"))
    rows = _rows_table(per_examples[first], systems.parts[first])
    parts = {system: (inputs, systems.parts[system]) for system, inputs in systems.inputs.items()}
    label = legend(len(results) > 1, chosen, bool(options.get("confidence_level")))
    return Outcome(status, frame, rows, figure, options, parts, report, notes, label, chosen)


def _plotted(name: str, results: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str] | None:
    """The keys drawn for several systems: all, or for the aspect score its score per aspect."""
    if name != "aspect_sentiment_score":
        return None
    keys = next(iter(results.values()))[name]
    return [key for key in keys if key == "score" or key.startswith("score_") and not key.endswith(("_low", "_high"))]


def run(
    name: str,
    predictions: str,
    references: str,
    extra: str,
    upload: str | None,
    *values: Any,
    prediction_prefix: str = PREDICTION_PREFIX,
    mapping: Mapping[str, str] | None = None,
    baseline: str = NO_BASELINE,
) -> tuple[str, Any, Any, Any]:
    """A family app's event handler: parse, compute, tabulate, plot. Returns the status
    line, the results (a column per system), the per-example (per-aspect) table of the first
    system and the plot."""
    outcome = _evaluate(name, predictions, references, extra, upload, values, prediction_prefix, mapping, baseline)
    return outcome.status, outcome.summary, outcome.rows, outcome.figure
