"""The match relation of a prepared corpus found example by example, for the examples routed
to it (`relations.edge_routes`): each example's (prediction, gold keyword) pairs tested
(`pair_edges`), or a containment search over its own strings (`search_edges`) where its
pairs outnumber its keywords by far (`searched`: one long document). What both share with the
relation between distinct strings (`relations`): the edges, the rows of a subset of examples.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._native import helper
from .containment import relation_pair_arrays, token_form
from .encoding import int64_arrays, ragged_ranges
from .preparation import PreparedCorpus

MATCH_CODES = {"exact": 0, "substring": 1, "token": 2}


class Edges(NamedTuple):
    """Matching (prediction, gold keyword) pairs of a corpus, sorted by example, then
    prediction position, then gold position (positions within the example's lists)."""

    examples: np.ndarray
    predictions: np.ndarray
    gold: np.ndarray
    matching: bool = False  # known to share no prediction and no gold keyword (exact match)


def empty_edges() -> Edges:
    empty = np.zeros(0, dtype=np.int64)
    return Edges(empty, empty, empty)


# Where a containment search over a document's own strings costs less than testing its pairs
# one by one: when its pairs outnumber `per` times its size, plus `fixed` (the search's
# set-up); by path and implementation. The per-document path (`documents`) sizes a document
# by the bytes of its strings: in C a pair test there takes 1-4 ns (a 64-bit filter of the
# bytes first; up to 11 ns when it passes) and a search 5-65 ns per byte (automata or
# windows, both ways); a prepared corpus's examples (`examples`) by their keywords: a pair
# test there takes 5-15 ns in C, 0.1-0.5 µs in Python, a search 0.3-1.5 µs per keyword in C,
# 3-15 µs in Python. Near the line, either costs at most about twice the other.
SEARCH_COSTS = {
    "documents": {"c": (8.0, 4096.0), "python": (4.0, 1024.0)},
    "examples": {"c": (48.0, 4096.0), "python": (8.0, 512.0)},
}


def search_costs(path: str) -> tuple[float, float]:
    """`(per, fixed)` of `SEARCH_COSTS` for `path` ("documents", "examples") and the
    implementation in use."""
    return SEARCH_COSTS[path]["c" if helper() is not None else "python"]


def searched(pairs: Any, size: Any, path: str = "examples") -> Any:
    """Whether (per document, for arrays) a containment search costs less than testing the
    `pairs` (`SEARCH_COSTS`): `size` counts the keywords ("examples") or the bytes of their
    strings ("documents")."""
    per, fixed = search_costs(path)
    return pairs > per * size + fixed


class Rows(NamedTuple):
    """Examples of a prepared corpus as flat arrays: row r's prediction ids are
    `predicted[prediction_offsets[r]:prediction_offsets[r + 1]]`, its gold list is `lists[r]`,
    whose ids are `gold[gold_offsets[l]:gold_offsets[l + 1]]` (every list of the corpus);
    `examples[r]` is row r's example (None: row r is example r); `grouped`: lists shared."""

    predicted: np.ndarray
    prediction_offsets: np.ndarray
    gold: np.ndarray
    gold_offsets: np.ndarray
    lists: np.ndarray
    examples: np.ndarray | None
    grouped: bool

    def corpus_examples(self, rows: np.ndarray) -> np.ndarray:
        """The examples of the corpus that rows `rows` are."""
        return rows if self.examples is None else self.examples[rows]


def corpus_rows(corpus: PreparedCorpus, examples: np.ndarray | None = None) -> Rows:
    """The `Rows` of the corpus's examples `examples` (ascending; None: all)."""
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    lists = np.arange(len(prediction_offsets) - 1) if groups is None else groups
    if examples is None:
        return Rows(predicted, prediction_offsets, gold, gold_offsets, lists, None, groups is not None)
    sizes = np.diff(prediction_offsets)[examples]
    owner, k = ragged_ranges(sizes)
    offsets = np.zeros(len(examples) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    rows_predicted = predicted[prediction_offsets[examples][owner] + k]
    return Rows(rows_predicted, offsets, gold, gold_offsets, lists[examples], examples, groups is not None)


def occurrences(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each element of a flat ragged array: its row and its position in the row."""
    sizes = np.diff(offsets)
    rows = np.repeat(np.arange(len(sizes)), sizes)
    return rows, np.arange(len(rows)) - offsets[rows]


BLOCK = 1 << 22  # candidate pairs held at once by the joins


def blocks(costs: np.ndarray) -> list[slice]:
    """Consecutive slices whose summed cost stays under `BLOCK` (one item at least)."""
    ends = np.cumsum(costs)
    slices, start = [], 0
    while start < len(costs):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + BLOCK, side="right")))
        slices.append(slice(start, stop))
        start = stop
    return slices


def pair_edges(corpus: PreparedCorpus, match: str, examples: np.ndarray | None = None) -> Edges:
    """The edges (substring or token) of the corpus's examples `examples` (ascending; None:
    all) with the relation tested on each example's own (prediction, gold keyword) pairs: once
    per (prediction id, gold list), examples that share a list taken together. Time and memory
    linear in those pairs. In C when the helper is built (on the strings' UTF-8 bytes), else
    `_pair_edges_in_python`."""
    rows = corpus_rows(corpus, examples)
    speedups = helper()
    if speedups is not None and type(corpus.strings) is list:
        order = int64_arrays(np.argsort(rows.lists, kind="stable"))[0] if rows.grouped else None
        arrays = int64_arrays(rows.predicted, rows.prediction_offsets, rows.gold, rows.gold_offsets, rows.lists)
        found = speedups.pair_edges(corpus.strings, *arrays, order, MATCH_CODES[match])
        if found is not None:  # (None: a string without UTF-8, a lone surrogate)
            local, positions, gold_positions = (np.frombuffer(column, dtype=np.int64) for column in found)
            if order is not None:  # each example's edges in order, the examples in the order of their lists
                by_example = np.argsort(local, kind="stable")
                local, positions, gold_positions = local[by_example], positions[by_example], gold_positions[by_example]
            return Edges(rows.corpus_examples(local), positions, gold_positions)
    return _pair_edges_in_python(corpus, match, examples)


def _pair_edges_in_python(corpus: PreparedCorpus, match: str, examples: np.ndarray | None = None) -> Edges:
    """`pair_edges` in Python and numpy: the pairs of each block of examples, their distinct
    (prediction id, gold id) pairs tested with `in` (token forms padded with spaces)."""
    strings = corpus.strings
    size = max(len(strings), 1)
    rows = corpus_rows(corpus, examples)
    owners, positions = occurrences(rows.prediction_offsets)
    lists = rows.lists[owners]
    gold_sizes = np.diff(rows.gold_offsets)[lists]
    forms: dict[int, str] = {}
    if match == "token":
        form_of = lambda i: forms.get(i) or forms.setdefault(i, token_form(strings[i]))  # noqa: E731
    else:
        form_of = strings.__getitem__
    parts = []
    for block in blocks(gold_sizes):
        owner, k = ragged_ranges(gold_sizes[block])
        occurrence = owner + block.start
        keys = rows.predicted[occurrence] * size + rows.gold[rows.gold_offsets[lists[occurrence]] + k]
        distinct, inverse = np.unique(keys, return_inverse=True)
        pairs = zip(map(form_of, (distinct // size).tolist()), map(form_of, (distinct % size).tolist()))
        related = np.fromiter((a in b or b in a for a, b in pairs), dtype=bool, count=len(distinct))
        hit = related[inverse.reshape(-1)]
        parts.append((occurrence[hit], k[hit]))
    occurrence = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    gold_position = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    return Edges(rows.corpus_examples(owners[occurrence]), positions[occurrence], gold_position)


def search_edges(corpus: PreparedCorpus, match: str, examples: np.ndarray | None = None) -> Edges:
    """The edges (substring or token) of the corpus's examples `examples` (ascending; None:
    all), each example's relation found by a containment search over its own strings
    (`relation_pair_arrays`: the C helper's automata, or the cheapest Python search): time
    linear in its strings and edges, not in its pairs. For long documents."""
    strings = corpus.strings
    rows = corpus_rows(corpus, examples)
    parts = []
    for row, list_number in enumerate(rows.lists.tolist()):
        predicted = rows.predicted[rows.prediction_offsets[row] : rows.prediction_offsets[row + 1]]
        gold = rows.gold[rows.gold_offsets[list_number] : rows.gold_offsets[list_number + 1]]
        if not len(predicted) or not len(gold):
            continue
        if predicted.min() < 0 or gold.min() < 0:  # (-1: no keyword) positions of the others
            kept = [np.flatnonzero(ids >= 0) for ids in (predicted, gold)]
            predicted, gold = predicted[kept[0]], gold[kept[1]]
        else:
            kept = None
        related, around = relation_pair_arrays(
            list(map(strings.__getitem__, predicted.tolist())), list(map(strings.__getitem__, gold.tolist())), match
        )  # sorted by prediction, then gold keyword
        if kept is not None:
            related, around = kept[0][related], kept[1][around]
        parts.append((np.full(len(related), row), related, around))
    if not parts:
        return empty_edges()
    local, positions, gold_positions = (np.concatenate([part[k] for part in parts]) for k in range(3))
    return Edges(rows.corpus_examples(local), positions, gold_positions)


def merged_edges(parts: list[Edges]) -> Edges:
    """The edges of disjoint sets of examples as one `Edges` (each part sorted)."""
    parts = [part for part in parts if len(part.examples)]
    if len(parts) <= 1:
        return parts[0] if parts else empty_edges()
    examples, predictions, gold = (np.concatenate([part[k] for part in parts]) for k in range(3))
    order = np.argsort(examples, kind="stable")  # (sorted runs: merged)
    return Edges(examples[order], predictions[order], gold[order])
