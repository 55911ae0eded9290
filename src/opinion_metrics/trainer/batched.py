"""The one mechanism behind every helper: a `convert` function turns what Trainer passes into
family inputs, and `StateMetrics` scores them with one or more families, on the whole
evaluation set at once or batch by batch on `MetricState`s (`batch_eval_metrics=True`).

A helper for another family is a converter and one line:

    def convert(evaluated: Evaluated) -> dict[str, Any]:
        return {"predictions": ..., "references": ...}  # the family's inputs, from evaluated's arrays

    compute_metrics = StateMetrics(convert, [FamilyScore("sentiment_tuple_prf", options)])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..families.registry import check_options, get_family
from ..state.metric_state import MetricState
from .inputs import Evaluated, unpack

Columns = Mapping[str, Any]


@dataclass(frozen=True)
class FamilyScore:
    """One family a helper scores.

    Args:
        family: the family's name in the registry.
        options: its options (checked when the helper is made).
        inputs: the family's inputs from the converter's columns; by default the columns
            named as the family's inputs (None values left out).
        keys: which of the family's values to return (default: all, intervals included).
    """

    family: str
    options: Mapping[str, Any] = field(default_factory=dict)
    inputs: Callable[[Columns], dict[str, Any]] | None = None
    keys: Callable[[str], bool] | None = None

    def columns(self, columns: Columns) -> dict[str, Any]:
        if self.inputs is not None:
            return self.inputs(columns)
        names = {item.name for item in get_family(self.family).inputs}
        return {name: value for name, value in columns.items() if name in names and value is not None}

    def kept(self, values: Mapping[str, Any]) -> dict[str, float]:
        return {key: value for key, value in values.items() if self.keys is None or self.keys(key)}


class StateMetrics:
    """A Trainer `compute_metrics`: `convert` turns each call's arrays (`inputs.Evaluated`)
    into columns (at least "predictions", one entry per example), and each `FamilyScore`
    scores them.

    Called as Trainer calls it by default (`compute_metrics(eval_prediction)`), it scores the
    whole evaluation set with the family functions. With `batch_eval_metrics=True`, Trainer
    calls `compute_metrics(batch, compute_result=False)` per batch and `compute_result=True`
    on the last: each batch is added to one `MetricState` per family (an example's key is its
    global position, the batch's first at the number of examples seen before), and the last
    call returns what the unbatched call returns on the same examples (up to float rounding;
    intervals too, with `bootstrap="poisson"` or the default multinomial one), then starts a
    fresh state for the next evaluation. Memory is the states': a fixed size without
    intervals or with `bootstrap="poisson"`; the multinomial bootstrap keeps one row of
    statistics (a few floats) per example. A call that fails also starts afresh.
    """

    def __init__(self, convert: Callable[[Evaluated], Columns], scores: Sequence[FamilyScore]) -> None:
        for score in scores:
            if "return_per_example" in score.options:
                raise ValueError("Trainer logs numbers: leave out return_per_example (use the family function)")
            check_options(score.family, score.options)  # a bad option fails now, not after training
        self._convert = convert
        self._scores = tuple(scores)
        self._states: list[MetricState] | None = None
        self._seen = 0

    def inputs(self, eval_prediction: Any) -> dict[str, Any]:
        """What the helper scores for `eval_prediction` (the family's inputs: decoded
        keyphrases, ratings, ...), to look at; changes no state."""
        return dict(self._convert(unpack(eval_prediction)))

    def reset(self) -> None:
        """Forget the batches added so far (the next batch starts a new evaluation)."""
        self._states, self._seen = None, 0

    def __call__(self, eval_prediction: Any, compute_result: bool | None = None) -> dict[str, float]:
        if compute_result is None:
            columns = self._convert(unpack(eval_prediction))
            results: dict[str, float] = {}
            for score in self._scores:
                function = get_family(score.family).function
                results.update(score.kept(function(**score.columns(columns), **score.options)))
            return results
        try:
            columns = self._convert(unpack(eval_prediction, self._seen, bool(compute_result)))
            if self._states is None:
                self._states = [MetricState(score.family, **score.options) for score in self._scores]
            for score, state in zip(self._scores, self._states):
                state.update(start=self._seen, **score.columns(columns))
            self._seen += len(columns["predictions"])
            if not compute_result:
                return {}
            results = {}
            for score, state in zip(self._scores, self._states):
                results.update(score.kept(state.compute()))
        except BaseException:
            self.reset()
            raise
        self.reset()
        return results
