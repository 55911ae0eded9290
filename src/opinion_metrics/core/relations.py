"""The match relation of a prepared corpus as edges (example, prediction, gold position):
computed once between the distinct strings and kept across calls (`_KnownRelation`) where
few strings meet in many pairs, else found example by example (`example_edges`: each
example's pairs tested, or a long document's own strings searched); `edge_routes` chooses
per example.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain

import numpy as np

from .._native import helper
from ..io.rows import paused_gc, repeated_rows
from .containment import relation_pair_arrays
from .corpus_cache import clear_prepared_corpora
from .encoding import int64_arrays, number_strings, ragged_ranges, sort_with_payload
from .example_edges import (
    Edges,
    Rows,
    blocks,
    corpus_rows,
    merged_edges,
    occurrences,
    pair_edges,
    search_edges,
    searched,
)
from .normalization import clear_normalization_cache
from .preparation import PreparedCorpus
from .validation import check_match


def reference_groups(corpus: PreparedCorpus) -> tuple[list[tuple[int, ...]], list[list[int]]]:
    """Distinct reference lists and, for each, the examples that have it."""
    references = corpus.references.ids
    first, group = repeated_rows(references, key=lambda ids: ids)
    members: list[list[int]] = [[] for _ in first]
    for index, number in enumerate(group):
        members[number].append(index)
    return [references[i] for i in first], members


class _KnownRelation:
    """The match relation between the predicted and gold strings met so far under one match
    mode, kept across calls: a predicted string is related only to the gold strings it has
    not met yet, when a call has it. Corpora in chunks (`--workers`, engines, batches) and
    calls sharing most of a vocabulary compute each (prediction, gold) string pair once.

    A call's cost stays that of its own strings: a call with few gold strings beside those
    known (a small call after a large one) starts it again, and so does a call leaving more
    than `_LIMIT` strings and pairs held."""

    _LIMIT = 2_000_000  # strings plus related pairs held after a call
    _SPREAD, _FLOOR = 4, 10_000  # started again when more than _SPREAD x a call's gold strings + _FLOOR are known

    def __init__(self, match: str) -> None:
        self.match = match
        self.predicted: defaultdict[str, int] = defaultdict()  # numbered in order of arrival
        self.predicted.default_factory = self.predicted.__len__
        self.gold: dict[str, int] = {}
        self.gold_strings: list[str] = []
        self.neighbors: dict[int, list[int]] = {}  # per predicted string related to some: its gold strings
        self.met = np.zeros(1024, dtype=np.int64)  # per predicted string: how many of `gold_strings` it has met
        self.in_neighbors = np.zeros(1024, dtype=bool)  # per predicted string: whether `neighbors` has it
        self.size = 0

    def add(self, predicted: Sequence[str], gold: Sequence[str]) -> np.ndarray:
        """Relate the distinct `predicted` strings to every gold string met (`gold` included);
        returns their numbers, the keys of `neighbors`."""
        if len(self.gold_strings) > self._SPREAD * len(gold) + self._FLOOR:
            self.__init__(self.match)
        new_gold = [string for string in gold if string not in self.gold]
        self.gold.update(zip(new_gold, range(len(self.gold_strings), len(self.gold_strings) + len(new_gold))))
        self.gold_strings.extend(new_gold)
        known_predicted = len(self.predicted)
        numbers = number_strings(predicted, self.predicted)
        if len(self.predicted) > len(self.met):  # (new strings have met none)
            grown = max(len(self.predicted), len(self.met))
            self.met = np.concatenate([self.met, np.zeros(grown, dtype=np.int64)])
            self.in_neighbors = np.concatenate([self.in_neighbors, np.zeros(grown, dtype=bool)])
        total = len(self.gold_strings)
        met = self.met[numbers]
        stale = np.flatnonzero(met < total)
        # each group of the strings that met as many gold strings meets those it has not met
        groups = np.unique(met[stale]) if len(stale) and met[stale].min() < met[stale].max() else met[stale[:1]]
        for met_before in groups.tolist():
            positions = stale if len(groups) == 1 else stale[met[stale] == met_before]
            strings = predicted if len(positions) == len(predicted) else [predicted[k] for k in positions.tolist()]
            related, gold_strings = relation_pair_arrays(strings, self.gold_strings[met_before:], self.match)
            related_numbers = numbers[positions[related]]
            for number, gold_number in zip(related_numbers.tolist(), (gold_strings + met_before).tolist()):
                self.neighbors.setdefault(number, []).append(gold_number)
            self.in_neighbors[related_numbers] = True
            self.size += len(related)
        self.met[numbers[stale]] = total
        self.size += len(new_gold) + len(self.predicted) - known_predicted
        return numbers


_KNOWN: dict[str, _KnownRelation] = {}


_KNOWN_LOCK = threading.Lock()  # threads (a Space's concurrent events) read and grow one relation


def clear_lexical_caches() -> None:
    """Forget the relations, normalized forms and prepared corpora kept across calls."""
    with _KNOWN_LOCK:
        _KNOWN.clear()
    clear_normalization_cache()
    clear_prepared_corpora()


def related_positions(predicted: list[str], gold: list[str], match: str) -> tuple[np.ndarray, np.ndarray]:
    """The related pairs among the distinct `predicted` and distinct `gold` strings
    (`relation_pairs`) as two arrays of positions (by prediction, then gold string met
    first): each pair computed once across calls (`_KnownRelation`)."""
    with _KNOWN_LOCK:
        known = _KNOWN.get(match) or _KNOWN.setdefault(match, _KnownRelation(match))
        with paused_gc():  # pairs, sets and lists by the thousand
            numbers = known.add(predicted, gold)
        position = np.full(len(known.gold_strings), -1, dtype=np.int64)
        gold_numbers = np.fromiter(map(known.gold.__getitem__, gold), dtype=np.int64, count=len(gold))
        position[gold_numbers] = np.arange(len(gold))
        with_neighbors = np.flatnonzero(known.in_neighbors[numbers])
        neighbors = list(map(known.neighbors.__getitem__, numbers[with_neighbors].tolist()))
        counts = np.fromiter(map(len, neighbors), dtype=np.int64, count=len(neighbors))
        related = position[np.fromiter(chain.from_iterable(neighbors), dtype=np.int64, count=int(counts.sum()))]
        if known.size > known._LIMIT:
            del _KNOWN[match]
    owner = np.repeat(with_neighbors, counts)
    kept = related >= 0
    return owner[kept], related[kept]


def related_gold(predicted: list[str], gold: list[str], match: str) -> list[tuple[int, ...]]:
    """For each of the distinct `predicted` strings, the positions in the distinct `gold` of
    the strings it is related to (`relation_pairs`): each pair computed once across calls."""
    owner, related = related_positions(predicted, gold, match)
    owner, related = sort_with_payload(owner, related)
    bounds = np.searchsorted(owner, np.arange(len(predicted) + 1)).tolist()
    items = related.tolist()
    return [tuple(items[a:b]) for a, b in zip(bounds, bounds[1:])]


def relation_arrays(corpus: PreparedCorpus, match: str, predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Sorted keys `p * V + g` (V: vocabulary size) of the related pairs among the distinct
    prediction ids `predicted` and gold ids `gold`: the relation once per distinct string pair."""
    strings = corpus.strings
    size = max(len(strings), 1)
    owner, related = related_positions(
        list(map(strings.__getitem__, predicted.tolist())), list(map(strings.__getitem__, gold.tolist())), match
    )
    keys = predicted[owner] * size
    keys += gold[related]
    keys.sort()
    return keys


def join_by_relation_cost(degrees: np.ndarray, gold_sizes: np.ndarray) -> np.ndarray:
    """Per prediction: True to expand its related gold ids (as many as its degree), False
    to test each gold keyword of its example (as many as the list's size)."""
    return degrees <= gold_sizes


def corpus_edges(corpus: PreparedCorpus, match: str) -> Edges:
    """Every matching (prediction, gold keyword) pair of every example (docs/definitions.md section 2).

    Equal ids are joined directly. For "substring" and "token", each example's relation is
    found the way `edge_routes` chooses for it: its pairs tested, its own strings searched
    (`example_edges`), or through the relation computed once per distinct (prediction, gold)
    string pair (`relation_arrays`), each prediction then joined with its example's gold list
    through it: by expanding the gold ids related to it, or by testing the list's keywords,
    whichever is fewer.
    """
    check_match(match)
    edges = corpus.memo.get(("edges", match))
    if edges is None:
        edges = _corpus_edges(corpus, match)
        keywords = len(corpus.predictions.flat[0]) + len(corpus.references.flat[0])
        if len(edges.examples) <= _KEPT_EDGES + 4 * keywords:  # (a kept corpus keeps its memo)
            corpus.memo[("edges", match)] = edges
    return edges


_KEPT_EDGES = 1 << 16  # edges memoized beyond 4 per keyword


PAIRS, SEARCH, RELATION = 0, 1, 2  # the routes of `edge_routes`


def _corpus_edges(corpus: PreparedCorpus, match: str) -> Edges:
    if match == "exact":
        return relation_edges(corpus, match)
    routes = edge_routes(corpus)
    find = {PAIRS: pair_edges, SEARCH: search_edges, RELATION: relation_edges}
    if not len(routes) or routes.min() == routes.max():  # (an empty corpus: by its pairs)
        return find[int(routes[0]) if len(routes) else PAIRS](corpus, match)
    taken = np.flatnonzero(np.bincount(routes, minlength=3)).tolist()
    return merged_edges([find[route](corpus, match, np.flatnonzero(routes == route)) for route in taken])


def edge_routes(corpus: PreparedCorpus) -> np.ndarray:
    """Per example, how its relation is found (PAIRS, SEARCH or RELATION), by cost: a long
    document (`searched`: many more pairs than keywords) by a search over its own strings, or
    by the relation between distinct strings where the long documents' strings repeat; the
    others by their pairs or by that relation, whichever `relation_by_pairs` says costs less
    for them."""
    _, prediction_offsets, _ = corpus.predictions.flat
    _, gold_offsets, groups = corpus.references.flat
    predicted_sizes = np.diff(prediction_offsets)
    gold_sizes = np.diff(gold_offsets) if groups is None else np.diff(gold_offsets)[groups]
    long = searched(predicted_sizes * gold_sizes, predicted_sizes + gold_sizes)
    if not long.any():
        return np.full(len(long), PAIRS if relation_by_pairs(corpus) else RELATION, dtype=np.int8)
    routes = np.full(len(long), PAIRS, dtype=np.int8)
    short = np.flatnonzero(~long)
    if len(short):
        pairs = int(predicted_sizes[short] @ gold_sizes[short])
        routes[short] = PAIRS if pairs < _PAIRS_PER_STRING * _distinct_strings(corpus, short) else RELATION
    longs = np.flatnonzero(long)
    keywords = int(predicted_sizes[longs].sum() + gold_sizes[longs].sum())
    routes[longs] = RELATION if keywords > _REPEATED * _distinct_strings(corpus, longs) else SEARCH
    return routes


# Keywords per distinct string of the long documents above which their relation is found once
# between their distinct strings (documents sharing a gold list or a vocabulary), not searched
# document by document.
_REPEATED = 2


def _distinct_strings(corpus: PreparedCorpus, examples: np.ndarray) -> int:
    """How many distinct strings the examples hold (predicted or gold)."""
    counts = _id_counts(corpus_rows(corpus, examples), max(len(corpus.strings), 1))
    return int(np.count_nonzero(counts[0] + counts[1]))


def _id_counts(rows: Rows, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per id, how often the rows' predictions and their gold lists (each list once) hold it."""
    gold = rows.gold
    if rows.examples is not None:  # the ids of the lists the rows have
        used = np.flatnonzero(np.bincount(rows.lists, minlength=len(rows.gold_offsets) - 1))
        owner, k = ragged_ranges(np.diff(rows.gold_offsets)[used])
        gold = rows.gold[rows.gold_offsets[used][owner] + k]
    sides = (rows.predicted, gold)
    return tuple(np.bincount(ids if not len(ids) or ids.min() >= 0 else ids[ids >= 0], minlength=size) for ids in sides)


def _distinct_ids(rows: Rows, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct prediction ids and gold ids of the rows (their lists only)."""
    predicted, gold = _id_counts(rows, size)
    return np.flatnonzero(predicted), np.flatnonzero(gold)


def relation_edges(corpus: PreparedCorpus, match: str, examples: np.ndarray | None = None) -> Edges:
    """The edges of the corpus's examples `examples` (ascending; None: all) through the
    relation between distinct strings: by the C helper (`_corpus_edges_in_c`), else joined
    in numpy."""
    if helper() is not None:
        return _corpus_edges_in_c(corpus, match, examples=examples)
    size = max(len(corpus.strings), 1)
    rows = corpus_rows(corpus, examples)
    predicted, gold, gold_offsets = rows.predicted, rows.gold, rows.gold_offsets
    owners, positions = occurrences(rows.prediction_offsets)
    lists = rows.lists[owners]
    gold_keys, gold_positions = occurrences(gold_offsets)
    gold_keys *= size
    gold_keys += gold
    gold_keys, gold_positions = sort_with_payload(gold_keys, gold_positions)
    signatures = list_signatures(gold, gold_offsets)

    def lookup(occurrence: np.ndarray, in_list: np.ndarray, gold_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (occurrence, gold position) pairs where `gold_id` is in list `in_list`."""
        maybe = np.flatnonzero(signature_holds(signatures, in_list, gold_id))
        keys, occurrence = sort_with_payload(in_list[maybe] * size + gold_id[maybe], occurrence[maybe])
        found, hit = sorted_lookup(gold_keys, keys)  # sorted needles: a cache-friendly search
        return occurrence[hit], gold_positions[found[hit]]

    if match == "exact" or not len(predicted) or not len(gold):
        parts = [lookup(np.arange(len(predicted)), lists, predicted)]
    else:
        unique_predicted, unique_gold = _distinct_ids(rows, size)
        related = relation_arrays(corpus, match, unique_predicted, unique_gold)
        degree_of = np.bincount(related // size, minlength=size)
        related_ids = related % size
        degrees = degree_of[predicted]
        starts = (np.cumsum(degree_of) - degree_of)[predicted]
        gold_sizes = np.diff(gold_offsets)[lists]
        expand = join_by_relation_cost(degrees, gold_sizes)
        parts = []
        by_relation = np.flatnonzero(expand & (degrees > 0))
        for block in blocks(degrees[by_relation]):
            chosen = by_relation[block]
            occurrence, k = ragged_ranges(degrees[chosen])
            occurrence = chosen[occurrence]
            k += starts[occurrence]
            parts.append(lookup(occurrence, lists[occurrence], related_ids[k]))
            del occurrence, k
        by_list = np.flatnonzero(~expand)
        for block in blocks(gold_sizes[by_list]):
            chosen = by_list[block]
            owner, k = ragged_ranges(gold_sizes[chosen])
            occurrence = chosen[owner]
            candidates = gold[gold_offsets[lists[occurrence]] + k]
            keys = predicted[occurrence] * size + candidates
            _, hit = sorted_lookup(related, keys)
            parts.append((occurrence[hit], k[hit]))
    occurrence = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    gold_position = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    occurrence, gold_position = sort_with_payload(occurrence, gold_position)  # the pairs are distinct
    return Edges(rows.corpus_examples(owners[occurrence]), positions[occurrence], gold_position, match == "exact")


# Pairs per distinct string below which testing each example's pairs costs less than the
# relation between the distinct strings: a pair test takes about 10 ns in C, the relation
# 0.5-4 µs per distinct string computed afresh (its containment searches and its pairs,
# which short strings in a diverse vocabulary make many), and nothing once known from
# earlier calls (kept across calls: a session's later corpora, a corpus's later chunks).
_PAIRS_PER_STRING = 64


def meeting_pairs(corpus: PreparedCorpus) -> int:
    """How many (prediction, gold keyword) pairs meet in the corpus's examples."""
    _, prediction_offsets, _ = corpus.predictions.flat
    _, gold_offsets, groups = corpus.references.flat
    gold_sizes = np.diff(gold_offsets)
    return int(np.diff(prediction_offsets) @ (gold_sizes if groups is None else gold_sizes[groups]))


def relation_by_pairs(corpus: PreparedCorpus) -> bool:
    """Whether to test the relation on the pairs that meet (`pair_edges`) rather than compute
    it between the distinct strings (`relation_arrays`): when there are fewer than
    `_PAIRS_PER_STRING` pairs per distinct string (documents of their own phrases)."""
    return meeting_pairs(corpus) < _PAIRS_PER_STRING * len(corpus.strings)


_EDGES_BY = {"cost": 0, "relation": 1, "list": 2}


def _corpus_edges_in_c(
    corpus: PreparedCorpus, match: str, by: str = "cost", examples: np.ndarray | None = None
) -> Edges:
    """`relation_edges` by the C helper: each example's gold ids marked with their positions,
    then each prediction's related ids (its row of the relation) looked up among them, or
    the list's ids searched among those, whichever is fewer (`by` "cost"; "relation" and
    "list" force one). One pass over the corpus, no sort of it."""
    size = max(len(corpus.strings), 1)
    rows = corpus_rows(corpus, examples)
    if match == "exact" or not len(rows.predicted) or not len(rows.gold):  # (no pairs at all without one side)
        starts, related_ids = np.arange(size + 1), np.arange(size)  # each id related to itself
    else:
        unique_predicted, unique_gold = _distinct_ids(rows, size)
        related = relation_arrays(corpus, match, unique_predicted, unique_gold)
        starts = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(related // size, minlength=size), out=starts[1:])
        related_ids = related % size
    arrays = int64_arrays(
        rows.predicted, rows.prediction_offsets, rows.gold, rows.gold_offsets, rows.lists, starts, related_ids
    )
    columns = helper().related_edges(*arrays, size, _EDGES_BY[by])
    local, predictions, gold_positions = (np.frombuffer(column, dtype=np.int64) for column in columns)
    return Edges(rows.corpus_examples(local), predictions, gold_positions, match == "exact")


def sorted_lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each of `keys` is or would go in `sorted_keys`, 0 past the end; whether it is there)."""
    found = np.searchsorted(sorted_keys, keys)
    found[found == len(sorted_keys)] = 0
    hit = sorted_keys[found] == keys if len(sorted_keys) else np.zeros(len(keys), dtype=bool)
    return found, hit


def list_signatures(ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per list `ids[offsets[l]:offsets[l + 1]]`: a 64-bit set of `id % 64` over its ids."""
    bits = np.left_shift(np.uint64(1), (ids & 63).astype(np.uint64))
    sizes = np.diff(offsets)
    signatures = np.zeros(len(sizes), dtype=np.uint64)
    nonempty = np.flatnonzero(sizes)
    if len(nonempty):
        signatures[nonempty] = np.bitwise_or.reduceat(bits, offsets[nonempty])
    return signatures


def signature_holds(signatures: np.ndarray, lists: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Whether id `ids[i]` may be in list `lists[i]` (`list_signatures`): False only when it is not."""
    held = signatures[lists]
    held >>= (ids & 63).view(np.uint64)  # non-negative: the same bits
    held &= np.uint64(1)
    return held.astype(bool)
