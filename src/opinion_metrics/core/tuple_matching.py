"""Matched sentiment tuples per example (docs/definitions.md section 13), for the whole tuple and
each projection, from the prepared sides of `core.tuples`:

- exact: equal ids; each example's tuples compared pair by pair in C where the helper is built
  (`exact_tuple_counts`), else every (prediction, gold) and same-side pair of the corpus at once
  with numpy (an example with more pairs than `PAIR_LIMIT`, by hashing its tuples);
- overlap: compatible pairs found the same way, their credits from each distinct pair of spans,
  an example whose pairs conflict assigned exactly (`core.assignment`);
- membership (the field's counting): predicted tuples found in their example's gold list, each
  repeat counted, strings compared as given (stripped): in C where the helper is built.

The C functions are in `_native/tuple_matching.c`; their twins here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._native import helper
from .assignment import Edge, best_assignment
from .tuples import IMPLICIT, SPAN_ELEMENTS, Elements, Forms, Side, check_tuple_row, tuple_values, where
from .validation import describe

PAIR_LIMIT = 4096  # pairs of one example compared at once; more: its tuples hashed


@dataclass
class Counts:
    """Per example: matched predictions (credits), predictions, matched gold tuples, gold tuples."""

    matched: np.ndarray
    predicted: np.ndarray
    matched_gold: np.ndarray
    gold: np.ndarray


def _pairs(offsets_a: np.ndarray, offsets_b: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """(example, row of a, row of b) of every pair of rows of the same example, `counts[i]` of
    them for example i (all its pairs, or none)."""
    total = int(counts.sum())
    example = np.repeat(np.arange(len(counts)), counts)
    k = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    width = np.diff(offsets_b)[example]
    return example, offsets_a[:-1][example] + k // width, offsets_b[:-1][example] + k % width


class _Pairs:
    """The pairs of the examples small enough to compare at once, and each column's equality."""

    def __init__(self, a: Side, b: Side) -> None:
        self.a, self.b = a, b
        self.example, self.ia, self.ib = _pairs(a.offsets, b.offsets, a.sizes * b.sizes)
        if a is b:  # a tuple and an earlier one
            earlier = self.ib < self.ia
            self.example, self.ia, self.ib = self.example[earlier], self.ia[earlier], self.ib[earlier]
        self._equal: dict[int, np.ndarray] = {}

    def equal(self, column: int) -> np.ndarray:
        if column not in self._equal:
            self._equal[column] = self.a.ids[self.ia, column] == self.b.ids[self.ib, column]
        return self._equal[column]

    def all_equal(self, columns: Sequence[int]) -> np.ndarray:
        found = np.ones(len(self.ia), dtype=bool)
        for column in columns:
            found &= self.equal(column)
        return found


def _small(side: Side, limit: int) -> Side:
    """`side` with the examples over `limit` (a boolean mask) holding no tuples."""
    sizes = np.where(limit, 0, side.sizes)
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    keep = np.repeat(~limit, side.sizes)
    return Side(offsets, side.ids[keep], side.unparsed)


def _duplicates(pairs: _Pairs, columns: Sequence[int], count: int) -> np.ndarray:
    """Which rows repeat an earlier row of their example on `columns`."""
    repeated = np.zeros(count, dtype=bool)
    repeated[pairs.ia[pairs.all_equal(columns)]] = True
    return repeated


def pair_credit(
    first: Sequence[int], second: Sequence[int], spans: Sequence[bool], forms: Forms, cache: dict[Any, int]
) -> tuple[Fraction, Fraction] | None:
    """(precision credit, recall credit) of two compatible rows of ids, or None."""
    precision, recall = [], []
    for a, b, span in zip(first, second, spans):
        if not span or a == IMPLICIT or b == IMPLICIT:
            if a != b:
                return None
            continue
        shared = shared_tokens(a, b, forms, cache)
        if not shared:
            return None
        precision.append(Fraction(shared, len(forms.tokens[a])))
        recall.append(Fraction(shared, len(forms.tokens[b])))
    if not precision:
        return Fraction(1), Fraction(1)
    return sum(precision) / len(precision), sum(recall) / len(recall)


def shared_tokens(a: int, b: int, forms: Forms, cache: dict[Any, int]) -> int:
    """Tokens two spans share, counted as a multiset (positions: as a set)."""
    if (a, b) not in cache:
        x, y = forms.tokens[a], forms.tokens[b]
        cache[a, b] = len(x & y) if isinstance(x, frozenset) else sum((Counter(x) & Counter(y)).values())
    return cache[a, b]


def assign_example(
    predicted: list[tuple[int, ...]],
    gold: list[tuple[int, ...]],
    spans: Sequence[bool],
    forms: Forms,
    match: str,
    cache: dict[Any, int] | None = None,
) -> tuple[list[int], list[int], list[Edge]]:
    """One example: the rows kept (first occurrences) on each side and the assigned pairs."""
    kept = [sorted({row: i for i, row in reversed(list(enumerate(side)))}.values()) for side in (predicted, gold)]
    if match == "exact":
        position = {gold[j]: j for j in kept[1]}
        return kept[0], kept[1], [(i, position[predicted[i]], Fraction(1), Fraction(1)) for i in kept[0]
                                  if predicted[i] in position]  # fmt: skip
    cache = {} if cache is None else cache
    edges = []
    for i in kept[0]:
        for j in kept[1]:
            credit = pair_credit(predicted[i], gold[j], spans, forms, cache)
            if credit is not None:
                edges.append((i, j, *credit))
    return kept[0], kept[1], best_assignment(edges)


def tuple_counts(
    pred: Side, gold: Side, projections: Sequence[Sequence[int]], spans: Sequence[bool], forms: Forms, match: str
) -> list[Counts]:
    """The counts of each projection (column indices; the whole tuple is one). Exact counts in C
    where the helper is built (`exact_tuple_counts`), else with numpy on every pair of an example."""
    n = len(pred.sizes)
    speedups = helper()
    if match == "exact" and speedups is not None:
        return _exact_in_c(speedups, pred, gold, projections, spans, forms)
    limit = (pred.sizes * gold.sizes > PAIR_LIMIT) | (pred.sizes**2 > PAIR_LIMIT) | (gold.sizes**2 > PAIR_LIMIT)
    small_pred, small_gold = (_small(side, limit) if limit.any() else side for side in (pred, gold))
    across, within_pred, within_gold = (
        _Pairs(small_pred, small_gold),
        _Pairs(small_pred, small_pred),
        _Pairs(small_gold, small_gold),
    )
    example_pred = np.repeat(np.arange(n), small_pred.sizes)
    example_gold = np.repeat(np.arange(n), small_gold.sizes)
    cache: dict[Any, int] = {}
    found = []
    for columns in projections:
        repeated_pred = _duplicates(within_pred, columns, len(small_pred.ids))
        repeated_gold = _duplicates(within_gold, columns, len(small_gold.ids))
        kept = ~repeated_pred[across.ia] & ~repeated_gold[across.ib]
        predicted = np.bincount(example_pred[~repeated_pred], minlength=n).astype(np.float64)
        gold_count = np.bincount(example_gold[~repeated_gold], minlength=n).astype(np.float64)
        if match == "exact":
            hit = np.zeros(len(small_pred.ids), dtype=bool)
            hit[across.ia[across.all_equal(columns) & kept]] = True
            matched = np.bincount(example_pred[hit], minlength=n).astype(np.float64)
            matched_gold = matched.copy()
        else:
            matched, matched_gold = _overlap(across, columns, kept, spans, forms, cache, n)
        counts = Counts(matched, predicted, matched_gold, gold_count)
        for example in np.flatnonzero(limit).tolist():
            _count_one(counts, example, pred, gold, columns, spans, forms, match, cache)
        counts.predicted += pred.unparsed
        found.append(counts)
    return found


def _exact_in_c(
    speedups: Any, pred: Side, gold: Side, projections: Sequence[Sequence[int]], spans: Sequence[bool], forms: Forms
) -> list[Counts]:
    masks = [sum(1 << column for column in columns) for columns in projections]
    width = pred.ids.shape[1]
    arrays = [np.ascontiguousarray(array, dtype=np.int64) for array in (pred.offsets, pred.ids, gold.offsets, gold.ids)]
    counts = np.frombuffer(speedups.exact_tuple_counts(*arrays, width, masks, PAIR_LIMIT), dtype=np.int64)
    counts = counts.reshape(len(pred.sizes), len(masks), 3)
    large = np.flatnonzero(counts[:, 0, 0] < 0).tolist()  # counted by hashing
    found = []
    for number, columns in enumerate(projections):
        kept_pred, kept_gold, matched = (counts[:, number, k].astype(np.float64) for k in range(3))
        counted = Counts(matched, kept_pred, matched, kept_gold)  # exact: as many gold tuples matched
        for example in large:
            _count_one(counted, example, pred, gold, columns, spans, forms, "exact", {})
        counted.predicted += pred.unparsed
        found.append(counted)
    return found


def _count_one(
    counts: Counts, example: int, pred: Side, gold: Side, columns: Sequence[int], spans: Sequence[bool],
    forms: Forms, match: str, cache: dict[Any, int],
) -> None:  # fmt: skip
    """Fill in one (large) example's counts by hashing its projected tuples."""
    rows = [[tuple(row) for row in side.ids[side.offsets[example] : side.offsets[example + 1], list(columns)].tolist()]
            for side in (pred, gold)]  # fmt: skip
    kept_pred, kept_gold, edges = assign_example(*rows, [spans[c] for c in columns], forms, match, cache)
    counts.predicted[example], counts.gold[example] = len(kept_pred), len(kept_gold)
    counts.matched[example] = float(sum(edge[2] for edge in edges))
    counts.matched_gold[example] = float(sum(edge[3] for edge in edges))


def _overlap(
    across: _Pairs, columns: Sequence[int], kept: np.ndarray, spans: Sequence[bool], forms: Forms,
    cache: dict[Any, int], n: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Matched credits of the small examples under overlap: compatible pairs, assigned."""
    compatible = kept.copy()
    span_columns = [column for column in columns if spans[column]]
    for column in columns:
        if not spans[column]:
            compatible &= across.equal(column)
    for column in span_columns:
        a, b = across.a.ids[across.ia, column], across.b.ids[across.ib, column]
        compatible &= (a == IMPLICIT) == (b == IMPLICIT)
    index = np.flatnonzero(compatible)
    shared = {}
    lengths = np.array([0 if tokens is None else len(tokens) for tokens in forms.tokens], dtype=np.int64)
    for column in span_columns:
        a, b = across.a.ids[across.ia[index], column], across.b.ids[across.ib[index], column]
        explicit = a != IMPLICIT
        counts = np.where(explicit & (a == b), lengths[a], 0)  # the same span: every token shared
        other = explicit & (a != b)
        if other.any():  # each distinct pair of spans once
            keys = a[other] * len(lengths) + b[other]
            distinct, inverse = np.unique(keys, return_inverse=True)
            pairs = divmod(distinct, len(lengths))
            found = [shared_tokens(x, y, forms, cache) for x, y in zip(pairs[0].tolist(), pairs[1].tolist())]
            counts[other] = np.asarray(found, dtype=np.int64)[inverse]
        shared[column] = (counts, explicit, a, b)
    good = np.ones(len(index), dtype=bool)
    for counts, explicit, _, _ in shared.values():
        good &= ~explicit | (counts > 0)
    index = index[good]
    precision, recall, explicit_count = np.zeros(len(index)), np.zeros(len(index)), np.zeros(len(index))
    lengths = lengths.astype(np.float64)
    for counts, explicit, a, b in shared.values():
        counts, explicit, a, b = counts[good], explicit[good], a[good], b[good]
        with np.errstate(invalid="ignore", divide="ignore"):
            precision += np.where(explicit, counts / lengths[a], 0.0)
            recall += np.where(explicit, counts / lengths[b], 0.0)
        explicit_count += explicit
    none = explicit_count == 0
    precision = np.where(none, 1.0, precision / np.maximum(explicit_count, 1))
    recall = np.where(none, 1.0, recall / np.maximum(explicit_count, 1))
    ia, ib, example = across.ia[index], across.ib[index], across.example[index]
    per_pred = np.bincount(ia, minlength=len(across.a.ids))
    per_gold = np.bincount(ib, minlength=len(across.b.ids))
    conflict = np.zeros(n, dtype=bool)
    conflict[example[(per_pred[ia] > 1) | (per_gold[ib] > 1)]] = True
    simple = ~conflict[example]
    # (float64 even without weights: bincount of nothing is an int array)
    matched = np.bincount(example[simple], weights=precision[simple], minlength=n).astype(np.float64)
    matched_gold = np.bincount(example[simple], weights=recall[simple], minlength=n).astype(np.float64)
    projected = [spans[column] for column in columns]
    for number in np.flatnonzero(conflict).tolist():
        chosen = index[example == number]
        edges = []
        for i, j in zip(across.ia[chosen].tolist(), across.ib[chosen].tolist()):
            first, second = across.a.ids[i, list(columns)].tolist(), across.b.ids[j, list(columns)].tolist()
            edges.append((i, j, *pair_credit(first, second, projected, forms, cache)))
        assigned = best_assignment(edges)
        matched[number] = float(sum(edge[2] for edge in assigned))
        matched_gold[number] = float(sum(edge[3] for edge in assigned))
    return matched, matched_gold


# --- membership: the field's counting ---------------------------------------------------------------------------


def _stripped(value: Any, span: bool, place: str) -> Any:
    """An element as the field compares it: a str stripped, None, token positions as given."""
    if isinstance(value, str):
        value = str.__str__(value).strip()
        if not value:
            raise ValueError(f"{place} is empty: {value!r}")
        return value
    if span and value is None:
        return None
    if span and isinstance(value, (list, tuple, np.ndarray)):
        return _positions(value, place)
    kind = "a text span, token positions or None" if span else "a label (str)"
    raise ValueError(f"{place} must be {kind}, got {describe(value)}")


def _positions(value: Any, place: str) -> tuple[int, ...]:
    listed = value.tolist() if isinstance(value, np.ndarray) else list(value)
    if not listed or any(
        isinstance(item, bool) or not isinstance(item, (int, np.integer)) or item < 0 for item in listed
    ):
        raise ValueError(f"{place}: token positions are a non-empty list of integers >= 0, got {value!r}")
    return tuple(int(item) for item in listed)


def stripped_key(item: Any, elements: Elements) -> tuple[Any, ...]:
    """A tuple as the field compares it (strings stripped, positions as given), for explanations."""
    return tuple(
        value.strip() if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else value
        for value in tuple_values(item, elements, "")
    )


def _same_kind(kinds: dict[str, tuple[str, str]], element: str, kind: str, place: str) -> None:
    first = kinds.setdefault(element, (kind, f"{place}, {element}"))
    if first[0] != kind:
        raise ValueError(
            f"{place}, {element} is given as {kind}, but as {first[0]} at {first[1]}: an element is text spans or "
            "token positions throughout a corpus"
        )


def membership_hits(
    predictions: Sequence[Any], references: Sequence[Any], elements: Elements, projections: Sequence[Sequence[int]]
) -> np.ndarray:
    """Per example and projection, the predicted tuples whose projection is that of some gold
    tuple of the example (each repeat counted), then the example's numbers of predicted and gold
    tuples: an int64 (examples x (projections + 2)) array. In C when the helper is built and
    every tuple is a list or tuple of str (or None spans)."""
    masks = [sum(1 << column for column in columns) for columns in projections]
    labels = sum(1 << column for column, name in enumerate(elements) if name not in SPAN_ELEMENTS)
    speedups = helper()
    found = (
        None if speedups is None else speedups.membership_hits(predictions, references, len(elements), masks, labels)
    )
    if found is not None:
        return np.frombuffer(found, dtype=np.int64).reshape(len(predictions), len(masks) + 2)
    return _membership_in_python(predictions, references, elements, projections)


def _membership_in_python(
    predictions: Sequence[Any], references: Sequence[Any], elements: Elements, projections: Sequence[Sequence[int]]
) -> np.ndarray:
    spans = [name in SPAN_ELEMENTS for name in elements]
    kinds: dict[str, tuple[str, str]] = {}
    hits = np.zeros((len(predictions), len(projections) + 2), dtype=np.int64)
    for example, (predicted, gold) in enumerate(zip(predictions, references)):
        sides = []
        for name, row in (("predictions", predicted), ("references", gold)):
            tuples = []
            for position, item in enumerate(check_tuple_row(row, name, example)):
                place = where(name, example, position)
                values = tuple(
                    _stripped(value, span, f"{place}, {element}")
                    for value, span, element in zip(tuple_values(item, elements, place), spans, elements)
                )
                for value, span, element in zip(values, spans, elements):
                    if span and value is not None:
                        _same_kind(kinds, element, "text" if isinstance(value, str) else "positions", place)
                tuples.append(values)
            sides.append(tuples)
        for number, columns in enumerate(projections):
            gold_keys = {tuple(row[c] for c in columns) for row in sides[1]}
            hits[example, number] = sum(tuple(row[c] for c in columns) in gold_keys for row in sides[0])
        hits[example, -2:] = len(sides[0]), len(sides[1])
    return hits
