"""What a family's per-example statistics can be, from the family and its options alone: the
width of a row, which columns are counts, which lie in [0, 1] or within another column, so
that a state read from bytes is refused when no examples could have given its sums.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..families.registry import Family
from ..families.sentiment_tuple_prf import WIDTH, block_names


def _value_names(family: Family) -> list[str]:
    """The options that decide a family's values: all but `return_per_example` and resources."""
    return [o.name for o in family.options if o.name != "return_per_example" and not o.resource]


class _Layout:
    """What every row of a family's statistics (docs/definitions.md section 11) satisfies,
    from the family and its options alone: the width; the columns that are whole numbers;
    `units`, combinations of columns that are 0 or 1 per example (an example counted, an
    aspect's outcome); and linear bounds `bounds @ row >= 0`. Non-negative whole-number
    weights keep the bounds, so Poisson-weighted and swap-sign sums satisfy them too."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.whole: list[int] = []
        self.units: list[np.ndarray] = []
        self._bounds: list[np.ndarray] = []

    def _row(self, *terms: tuple[int, float]) -> np.ndarray:
        row = np.zeros(self.width)
        for column, coefficient in terms:
            row[column] += coefficient
        return row

    def count(self, *columns: int) -> None:
        """Whole numbers >= 0."""
        self.whole += columns
        self.within(*columns)

    def unit(self, *columns: int) -> None:
        """Their sum is 0 or 1 per example."""
        self.units.append(self._row(*((column, 1.0) for column in columns)))

    def within(self, *columns: int, by: int | None = None, low: float = 0.0, high: float = 1.0) -> None:
        """`low * row[by] <= row[column] <= high * row[by]` (`by` None: `row[column] >= 0`)."""
        for column in columns:
            if by is None:
                self._bounds.append(self._row((column, 1.0)))
                continue
            self._bounds.append(self._row((column, 1.0), (by, -low)))
            if high != math.inf:
                self._bounds.append(self._row((by, high), (column, -1.0)))

    def prf(self, offset: int, *, whole_matches: bool, whole_predicted: bool = True, bounded: bool = True) -> None:
        """The 8 columns of `averaging.prf_statistics` from `offset`: examples, P, R, F1,
        matched / predicted, matched gold / gold (`bounded`: matched gold at most gold)."""
        examples, precision, recall, f1, matched, predicted, matched_gold, gold = range(offset, offset + 8)
        self.count(examples, gold)
        self.unit(examples)
        self.within(precision, by=examples)
        self.within(recall, by=examples, high=1.0 if bounded else math.inf)
        self.within(f1, by=examples, high=1.0 if bounded else 2.0)  # 2PR / (P + R) < 2P
        for column, whole in ((matched, whole_matches), (matched_gold, whole_matches), (predicted, whole_predicted)):
            (self.count if whole else self.within)(column)
        self.within(matched, by=predicted)
        if bounded:
            self.within(matched_gold, by=gold)

    def means(self, count: int, signed: tuple[int, ...] = ()) -> None:
        """`averaging.optional_mean_statistics` of `count` keys: (has a value, value) pairs,
        values in [0, 1] ([-1, 1] for the `signed` keys)."""
        for key in range(count):
            self.count(2 * key)
            self.unit(2 * key)
            self.within(2 * key + 1, by=2 * key, low=-1.0 if key in signed else 0.0)

    def problem(
        self, array: np.ndarray, examples: float | None, summed: int = 1, magnitude: np.ndarray | None = None
    ) -> str | None:
        """Why `array` (rows of statistics, or their sums: shape (..., width)) cannot hold
        statistics of this family, or None; `examples`: how many examples each row sums at
        most (None: weighted sums, unbounded); `summed`: how many examples' statistics each row
        adds up (1 for a row of statistics), whose rounding is all a bound may miss by
        (`rounding`), relative to `magnitude` (default: the array's own; for a difference of
        sums, those of the sums)."""
        bounds = np.array(self._bounds).reshape(-1, self.width)
        units = np.array(self.units).reshape(-1, self.width)
        all_rows = array.reshape(-1, self.width)
        sizes = np.abs(all_rows if magnitude is None else magnitude.reshape(-1, self.width))
        for start in range(0, len(all_rows), 1 << 16):  # bounded temporary memory
            rows = all_rows[start : start + (1 << 16)]
            if self.whole and not (np.floor(rows[:, self.whole]) == rows[:, self.whole]).all():
                return "a count is not a whole number"
            slack = rounding(summed) * (sizes[start : start + (1 << 16)] @ np.abs(bounds).T)
            if ((rows @ bounds.T) < -slack).any():
                return "a value is out of its range (a negative sum, a ratio above 1, more matched than counted)"
            if examples is not None and ((rows @ units.T) > examples).any():  # (whole numbers: exact)
                return f"it counts more examples than the {examples:g} it holds"
        return None


# Units in the last place a per-example statistic (a ratio, an F1, a mean of cosines capped
# at 1) and each term of a sum may be off by.
_ROUNDING_UNITS = 4


def rounding(summed: int) -> float:
    """How far, relative to the magnitudes involved, float64 sums of `summed` examples'
    statistics can stray from what exact arithmetic gives: any order of additions (numpy's,
    merges of states, Poisson weights) is off by at most `summed` - 1 roundings, each example's
    own statistics by a few (`_ROUNDING_UNITS` per term, machine epsilon each). Nothing else
    is tolerated: a state that needs more was not computed by this library."""
    return _ROUNDING_UNITS * (max(summed, 1) + 1) * float(np.finfo(np.float64).eps)


def _layout(family: str, options: Mapping[str, Any]) -> _Layout:
    """The `_Layout` of `family`'s statistics under its canonical options."""
    if family == "keyword_prf":
        layout = _Layout(8)
        layout.prf(0, whole_matches=True)
    elif family == "weighted_keyword_prf":
        layout = _Layout(11)  # matched scores / their total; nDCG, AP of examples with gold
        layout.prf(0, whole_matches=False, whole_predicted=False, bounded=bool(options["one_to_one"]))
        layout.count(8)
        layout.unit(8)
        layout.within(9, 10, by=8)
    elif family == "semantic_keyword_prf":
        layout = _Layout(16)  # thresholded counts, then soft sums of similarities in [0, 1]
        layout.prf(0, whole_matches=True)
        layout.prf(8, whole_matches=False)
    elif family == "sentiment_appropriateness":
        layout = _Layout(4)
        layout.means(2)
    elif family == "aspect_sentiment_score":
        count, span = len(options["aspects"]), options["max_rating"] - options["min_rating"]
        layout = _Layout(4 * count)  # per aspect: TP, FP, FN, squared rating error where both rate it
        for aspect in range(count):
            true_positive, false_positive, false_negative, error = range(aspect, 4 * count, count)
            layout.count(true_positive, false_positive, false_negative)
            layout.unit(true_positive, false_positive, false_negative)
            layout.within(error, by=true_positive, high=float(span**2))
    elif family == "sentiment_tuple_prf":
        blocks = len(block_names(options["elements"], options["projections"]))
        unparsed = options["format"] is not None
        layout = _Layout(WIDTH * blocks + unparsed)  # P/R/F1 columns per block (the tuple, each projection)
        for block in range(blocks):  # partial credit under overlap; the field's recall can exceed 1
            layout.prf(
                WIDTH * block, whole_matches=options["match"] == "exact", bounded=options["counting"] != "membership"
            )
        if unparsed:  # unreadable segments, each one of the predicted tuples
            layout.count(WIDTH * blocks)
            layout.within(WIDTH * blocks, by=5)
    else:
        with_model = options["model"] is not None
        layout = _Layout(6 if with_model else 4)  # unique keyword and token ratios, self-similarity
        layout.means(3 if with_model else 2, signed=(2,))
    return layout
