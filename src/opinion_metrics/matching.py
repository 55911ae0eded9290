"""Match relations (docs/definitions.md section 2) and one-to-one matchings.

The relation is tested on the (prediction, gold keyword) pairs that meet in an example,
once per (prediction, gold list) (`pair_edges`), so that its cost follows each example's
own pairs; where few distinct strings meet in many pairs (a movie's keywords broadcast to
each of its reviews, a small vocabulary) it is computed once between the distinct strings
instead (`relation_by_pairs` chooses), by containment searches over the joined strings.
Corpora of built-in normalizations whose examples each have their own gold list are
normalized and related document by document, without a vocabulary (`document_edges`).
"""

from __future__ import annotations

import operator
import threading
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from itertools import chain, islice
from typing import Any, NamedTuple

import numpy as np

from . import preparation
from .columnar import paused_gc
from .preparation import (
    PreparedCorpus,
    clear_normalization_cache,
    int64_arrays,
    list_keys,
    number_strings,
    repeated_rows,
    sort_with_payload,
)
from .validation import check_match

_SEPARATOR = "\x00"


def containment_pairs(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """All pairs `(i, j)` such that `needles[i]` is a substring of `haystacks[j]`
    (`containment_arrays` as a set)."""
    needle, haystack = containment_arrays(needles, haystacks)
    return set(zip(needle.tolist(), haystack.tolist()))


def _containment_in_python(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """`containment_pairs` by the cheapest of the three Python strategies."""
    positions: dict[str, list[int]] = {}
    for i, needle in enumerate(needles):
        positions.setdefault(needle, []).append(i)
    distinct = list(positions)
    costs = {
        _containment_by_lookup: lookup_cost(distinct, haystacks),
        _containment_by_find: find_cost(distinct, haystacks),
        _containment_by_hash: hash_cost(distinct, haystacks),
    }
    pairs = min(costs, key=costs.__getitem__)(distinct, haystacks)
    if len(distinct) == len(needles):
        return pairs
    return {(i, j) for d, j in pairs for i in positions[distinct[d]]}


# Needle bytes per automaton of the C helper at most; it also keeps each automaton's table of
# moves under 16 MiB (4 bytes per needle byte and byte class: fewer bytes for more classes).
_NEEDLE_BLOCK = 1 << 22


_CONTAINMENT_BY = {"cost": 0, "automata": 1, "windows": 2}


def _contained_in_c(
    needles: Sequence[str], haystacks: Sequence[str], by: str = "cost", block: int = _NEEDLE_BLOCK
) -> tuple[np.ndarray, np.ndarray] | None:
    """`containment_pairs` as two arrays (needle, haystack) by the C helper, or None without
    it (or for a str subclass or a lone surrogate): by Aho-Corasick automata over blocks of
    `block` needle bytes, or by the haystacks' windows looked up, whichever is cheaper (`by`
    "cost"; "automata" and "windows" force one)."""
    if preparation._speedups is None:
        return None
    found = preparation._speedups.contained_pairs(needles, haystacks, block, _CONTAINMENT_BY[by])
    return None if found is None else (np.frombuffer(found[0], np.int64), np.frombuffer(found[1], np.int64))


def containment_arrays(needles: Sequence[str], haystacks: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (needle position, haystack position) with the needle a substring of the
    haystack, as two int64 arrays.

    With the C helper (`_contained_in_c`): Aho-Corasick automata of the needles run over the
    haystacks, or the haystacks' windows looked up among the needles' hashes, whichever is
    cheaper. Without it, equal needles (token forms of keywords that differ only in white
    space) are searched once and each gets the pairs, by the cheapest of three strategies
    that give the same pairs: every substring of the haystacks (of a needle's length) looked
    up in a set, `str.find` of each needle in the joined haystacks, or the same lookup with
    the substrings' rolling hashes computed as arrays (candidates then checked with `in`).
    """
    if not needles or not haystacks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    found = _contained_in_c(needles, haystacks)
    if found is None:
        found = _pair_arrays(_containment_in_python(needles, haystacks))
    return found


def _pair_arrays(pairs: Collection[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs' first and second members as two int64 arrays."""
    return tuple(np.fromiter((pair[k] for pair in pairs), np.int64, count=len(pairs)) for k in (0, 1))


def lookup_cost(needles: Sequence[str], haystacks: Sequence[str]) -> int:
    """Characters hashed (and held at once, per haystack) by `_containment_by_lookup`:
    every substring of a haystack whose length is a needle length."""
    widths = sorted(set(map(len, needles)))
    sizes = Counter(map(len, haystacks))
    if len(widths) * len(sizes) <= 4096:  # small inputs: numpy's set-up would cost more
        return sum(
            count * sum((size - width + 1) * width for width in widths if width <= size)
            for size, count in sizes.items()
        )
    width_array = np.asarray(widths, dtype=np.int64)
    size_array = np.fromiter(sizes, dtype=np.int64, count=len(sizes))
    per_size = np.clip(size_array[:, None] - width_array[None, :] + 1, 0, None) * width_array[None, :]
    return int(per_size.sum(axis=1) @ np.fromiter(sizes.values(), dtype=np.int64, count=len(sizes)))


def find_cost(needles: Sequence[str], haystacks: Sequence[str]) -> int:
    """Comparable cost of `_containment_by_find`: one fast scan of the joined haystacks per needle."""
    return len(needles) * (sum(map(len, haystacks)) // 50 + 1)


def hash_cost(needles: Sequence[str], haystacks: Sequence[str]) -> int:
    """Comparable cost of `_containment_by_hash`: a few array operations per substring of a
    haystack whose length is a needle length (cheaper than hashing it in Python), plus set-up."""
    widths = sorted(set(map(len, needles)))
    sizes = Counter(map(len, haystacks))
    size_array = np.fromiter(sizes, dtype=np.int64, count=len(sizes))
    counts = np.fromiter(sizes.values(), dtype=np.int64, count=len(sizes))
    width_array = np.asarray(widths, dtype=np.int64)
    windows = np.clip(size_array[:, None] - width_array[None, :] + 1, 0, None).sum(axis=1) @ counts
    return 2 * int(windows) + 10_000


_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd: invertible modulo 2**64
_HASH_BASE_INVERSE = np.uint64(pow(int(_HASH_BASE), -1, 2**64))
_FILTER_BITS = 20


def _code_points(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The code points of the concatenated strings, and each string's start (plus the end)."""
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    starts = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    # surrogatepass: a lone surrogate (a truncated emoji) is a code point like any other here
    points = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return points.astype(np.uint64), starts


def _prefix_hashes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`prefix[i] = sum(points[k] * B**k for k < i)` and `B**-i`, modulo 2**64: the hash of
    `points[s:s + w]` is `(prefix[s + w] - prefix[s]) * B**-s`."""
    n = len(points)
    powers = np.full(n + 1, _HASH_BASE, dtype=np.uint64)
    powers[0] = 1
    inverse = np.full(n + 1, _HASH_BASE_INVERSE, dtype=np.uint64)
    inverse[0] = 1
    with np.errstate(over="ignore"):
        np.cumprod(powers, out=powers)
        np.cumprod(inverse, out=inverse)
        prefix = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(points * powers[:n], out=prefix[1:])
    return prefix, inverse


def _containment_by_hash(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """`containment_pairs` for distinct needles by rolling hashes of the haystacks'
    substrings (of every needle width) looked up among the needles' hashes, as arrays; each
    candidate pair is confirmed with `in`, so a hash collision costs time, never a wrong pair."""
    needle_points, needle_starts = _code_points(needles)
    needle_prefix, needle_inverse = _prefix_hashes(needle_points)
    with np.errstate(over="ignore"):
        needle_hashes = (needle_prefix[needle_starts[1:]] - needle_prefix[needle_starts[:-1]]) * needle_inverse[
            needle_starts[:-1]
        ]
    pairs: set[tuple[int, int]] = set()
    widths = np.unique(np.diff(needle_starts))
    if len(widths) and widths[0] == 0:  # the empty string is in every haystack
        empty = np.flatnonzero(np.diff(needle_starts) == 0).tolist()
        pairs.update((i, j) for i in empty for j in range(len(haystacks)))
        widths = widths[1:]
    points, starts = _code_points(haystacks)
    prefix, inverse = _prefix_hashes(points)
    owner = np.repeat(np.arange(len(haystacks)), np.diff(starts))
    # Every window (start, width) inside its haystack: the widths fitting at each start.
    fitting = np.searchsorted(widths, starts[1:][owner] - np.arange(len(points)), side="right")
    window_start, which = _expand(fitting)
    window_end = window_start + widths[which]
    with np.errstate(over="ignore"):
        window_hashes = (prefix[window_end] - prefix[window_start]) * inverse[window_start]
    # A filter on the top bits of the needles' hashes drops most windows with one gather.
    possible = np.zeros(1 << _FILTER_BITS, dtype=bool)
    possible[needle_hashes >> np.uint64(64 - _FILTER_BITS)] = True
    kept = np.flatnonzero(possible[window_hashes >> np.uint64(64 - _FILTER_BITS)])
    window_hashes, window_start = window_hashes[kept], window_start[kept]
    order = np.argsort(needle_hashes, kind="stable")
    sorted_hashes = needle_hashes[order]
    first = np.searchsorted(sorted_hashes, window_hashes)
    counts = np.searchsorted(sorted_hashes, window_hashes, side="right") - first
    hit = np.flatnonzero(counts)
    window, k = _expand(counts[hit])
    needle = order[first[hit][window] + k]
    haystack = owner[window_start[hit][window]]
    candidates = set(zip(needle.tolist(), haystack.tolist()))
    pairs.update((i, j) for i, j in candidates if needles[i] in haystacks[j])
    return pairs


def _containment_by_lookup(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """`containment_pairs` for distinct needles by set lookups of the haystacks' substrings."""
    position = {needle: i for i, needle in enumerate(needles)}
    lengths = sorted(set(map(len, needles)))
    pairs = set()
    for j, haystack in enumerate(haystacks):
        size = len(haystack)
        substrings = {
            haystack[start : start + width] for width in lengths if width <= size for start in range(size - width + 1)
        }
        pairs.update((position[needle], j) for needle in substrings & position.keys())
    return pairs


def _containment_by_find(needles: Sequence[str], haystacks: Sequence[str]) -> set[tuple[int, int]]:
    """`containment_pairs` for distinct needles by `str.find` in the joined haystacks."""
    joined = _SEPARATOR.join(haystacks)
    starts = []
    ends = []
    offset = 0
    for haystack in haystacks:
        starts.append(offset)
        offset += len(haystack)
        ends.append(offset)
        offset += 1
    find = joined.find
    pairs = set()
    for i, needle in enumerate(needles):
        width = len(needle)
        position = find(needle)
        while position != -1:
            j = bisect_right(starts, position) - 1
            if position + width <= ends[j]:
                pairs.add((i, j))
                position = find(needle, ends[j] + 1)
            else:  # the hit spans a separator (only if the needle contains one)
                position = find(needle, position + 1)
    return pairs


def _token_form(keyword: str) -> str:
    """The tokens padded with spaces; " " when there are none (it occurs in every token form)."""
    return " ".join(("", *keyword.split(), ""))


def relation_pairs(predicted: Sequence[str], gold: Sequence[str], match: str) -> set[tuple[int, int]]:
    """Pairs `(i, j)` with `predicted[i] ~ gold[j]` under the match relation `match`.

    `"exact"`: equal strings; `"substring"`: equal or either contains the other;
    `"token"`: the token sequence of either is a contiguous sub-sequence of the other's.
    """
    related_predicted, related_gold = relation_pair_arrays(predicted, gold, match)
    return set(zip(related_predicted.tolist(), related_gold.tolist()))


def relation_pair_arrays(predicted: Sequence[str], gold: Sequence[str], match: str) -> tuple[np.ndarray, np.ndarray]:
    """`relation_pairs` as two int64 arrays (prediction positions, gold positions), sorted."""
    if match == "exact":
        position = {keyword: j for j, keyword in enumerate(gold)}
        return _pair_arrays([(i, position[keyword]) for i, keyword in enumerate(predicted) if keyword in position])
    if match == "token":
        predicted = [_token_form(keyword) for keyword in predicted]
        gold = [_token_form(keyword) for keyword in gold]
    elif match != "substring":
        check_match(match)
    predicted_in, gold_around = containment_arrays(predicted, gold)
    gold_in, predicted_around = containment_arrays(gold, predicted)
    keys = np.unique(np.concatenate([predicted_in * len(gold) + gold_around, predicted_around * len(gold) + gold_in]))
    return keys // max(len(gold), 1), keys % max(len(gold), 1)


def reference_groups(corpus: PreparedCorpus) -> tuple[list[tuple[int, ...]], list[list[int]]]:
    """Distinct reference lists and, for each, the examples that have it."""
    references = corpus.references.ids
    first, group = repeated_rows(references, key=lambda ids: ids)
    members: list[list[int]] = [[] for _ in first]
    for index, number in enumerate(group):
        members[number].append(index)
    return [references[i] for i in first], members


class Edges(NamedTuple):
    """Matching (prediction, gold keyword) pairs of a corpus, sorted by example, then
    prediction position, then gold position (positions within the example's lists)."""

    examples: np.ndarray
    predictions: np.ndarray
    gold: np.ndarray
    matching: bool = False  # known to share no prediction and no gold keyword (exact match)


_BLOCK = 1 << 22  # candidate pairs held at once by `_join`


def _occurrences(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each element of a flat ragged array: its row and its position in the row."""
    sizes = np.diff(offsets)
    rows = np.repeat(np.arange(len(sizes)), sizes)
    return rows, np.arange(len(rows)) - offsets[rows]


def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(owner, k)` for k in range(counts[owner]), for every owner: a ragged range."""
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - starts[owner]


def _blocks(costs: np.ndarray) -> list[slice]:
    """Consecutive slices whose summed cost stays under `_BLOCK` (one item at least)."""
    ends = np.cumsum(costs)
    slices, start = [], 0
    while start < len(costs):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + _BLOCK, side="right")))
        slices.append(slice(start, stop))
        start = stop
    return slices


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
    """Forget the relations and normalized forms kept across calls."""
    with _KNOWN_LOCK:
        _KNOWN.clear()
    clear_normalization_cache()


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

    Equal ids are joined directly; for "substring" and "token", the relation is computed
    once per distinct (prediction, gold) string pair (`relation_arrays`), then each
    prediction is joined with its example's gold list through it: by expanding the gold
    ids related to it, or by testing the list's keywords, whichever is fewer.
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


def _corpus_edges(corpus: PreparedCorpus, match: str) -> Edges:
    if match != "exact" and relation_by_pairs(corpus):
        return pair_edges(corpus, match)
    if preparation._speedups is not None:
        return _corpus_edges_in_c(corpus, match)
    size = max(len(corpus.strings), 1)
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    examples, positions = _occurrences(prediction_offsets)
    lists = examples if groups is None else groups[examples]
    gold_keys, gold_positions = _occurrences(gold_offsets)
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
        unique_predicted = np.flatnonzero(np.bincount(predicted, minlength=size))
        unique_gold = np.flatnonzero(np.bincount(gold, minlength=size))
        related = relation_arrays(corpus, match, unique_predicted, unique_gold)
        degree_of = np.bincount(related // size, minlength=size)
        related_ids = related % size
        degrees = degree_of[predicted]
        starts = (np.cumsum(degree_of) - degree_of)[predicted]
        gold_sizes = np.diff(gold_offsets)[lists]
        expand = join_by_relation_cost(degrees, gold_sizes)
        parts = []
        by_relation = np.flatnonzero(expand & (degrees > 0))
        for block in _blocks(degrees[by_relation]):
            chosen = by_relation[block]
            occurrence, k = _expand(degrees[chosen])
            occurrence = chosen[occurrence]
            k += starts[occurrence]
            parts.append(lookup(occurrence, lists[occurrence], related_ids[k]))
            del occurrence, k
        by_list = np.flatnonzero(~expand)
        for block in _blocks(gold_sizes[by_list]):
            chosen = by_list[block]
            owner, k = _expand(gold_sizes[chosen])
            occurrence = chosen[owner]
            candidates = gold[gold_offsets[lists[occurrence]] + k]
            keys = predicted[occurrence] * size + candidates
            _, hit = sorted_lookup(related, keys)
            parts.append((occurrence[hit], k[hit]))
    occurrence = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    gold_position = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    occurrence, gold_position = sort_with_payload(occurrence, gold_position)  # the pairs are distinct
    return Edges(examples[occurrence], positions[occurrence], gold_position, match == "exact")


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


_MATCH_CODES = {"exact": 0, "substring": 1, "token": 2}


def pair_edges(corpus: PreparedCorpus, match: str) -> Edges:
    """`corpus_edges` (substring or token) with the relation tested on each example's own
    (prediction, gold keyword) pairs: once per (prediction id, gold list), examples that
    share a list taken together. Time and memory linear in those pairs. In C when the helper
    is built (on the strings' UTF-8 bytes), else `_pair_edges_in_python`."""
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    speedups = preparation._speedups
    if speedups is not None and type(corpus.strings) is list:
        lists = np.arange(len(prediction_offsets) - 1) if groups is None else groups
        order = None if groups is None else np.argsort(groups, kind="stable")
        arrays = int64_arrays(predicted, prediction_offsets, gold, gold_offsets, lists)
        order = None if order is None else int64_arrays(order)[0]
        found = speedups.pair_edges(corpus.strings, *arrays, order, _MATCH_CODES[match])
        if found is not None:  # (None: a string without UTF-8, a lone surrogate)
            examples, positions, gold_positions = (np.frombuffer(column, dtype=np.int64) for column in found)
            if order is not None:  # each example's edges in order, the examples in the order of their lists
                by_example = np.argsort(examples, kind="stable")
                examples, positions, gold_positions = (
                    examples[by_example],
                    positions[by_example],
                    gold_positions[by_example],
                )
            return Edges(examples, positions, gold_positions)
    return _pair_edges_in_python(corpus, match)


def _pair_edges_in_python(corpus: PreparedCorpus, match: str) -> Edges:
    """`pair_edges` in Python and numpy: the pairs of each block of examples, their distinct
    (prediction id, gold id) pairs tested with `in` (token forms padded with spaces)."""
    strings = corpus.strings
    size = max(len(strings), 1)
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    examples, positions = _occurrences(prediction_offsets)
    lists = examples if groups is None else groups[examples]
    gold_sizes = np.diff(gold_offsets)[lists]
    forms: dict[int, str] = {}
    if match == "token":
        form_of = lambda i: forms.get(i) or forms.setdefault(i, _token_form(strings[i]))  # noqa: E731
    else:
        form_of = strings.__getitem__
    parts = []
    for block in _blocks(gold_sizes):
        owner, k = _expand(gold_sizes[block])
        occurrence = owner + block.start
        keys = predicted[occurrence] * size + gold[gold_offsets[lists[occurrence]] + k]
        distinct, inverse = np.unique(keys, return_inverse=True)
        pairs = zip(map(form_of, (distinct // size).tolist()), map(form_of, (distinct % size).tolist()))
        related = np.fromiter((a in b or b in a for a, b in pairs), dtype=bool, count=len(distinct))
        hit = related[inverse.reshape(-1)]
        parts.append((occurrence[hit], k[hit]))
    occurrence = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    gold_position = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    return Edges(examples[occurrence], positions[occurrence], gold_position)


_EDGES_BY = {"cost": 0, "relation": 1, "list": 2}


def _corpus_edges_in_c(corpus: PreparedCorpus, match: str, by: str = "cost") -> Edges:
    """`_corpus_edges` by the C helper: each example's gold ids marked with their positions,
    then each prediction's related ids (its row of the relation) looked up among them, or
    the list's ids searched among those, whichever is fewer (`by` "cost"; "relation" and
    "list" force one). One pass over the corpus, no sort of it."""
    size = max(len(corpus.strings), 1)
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    if match == "exact" or not len(predicted) or not len(gold):  # (no pairs at all without one side)
        starts, related_ids = np.arange(size + 1), np.arange(size)  # each id related to itself
    else:
        unique_predicted = np.flatnonzero(np.bincount(predicted, minlength=size))
        unique_gold = np.flatnonzero(np.bincount(gold, minlength=size))
        related = relation_arrays(corpus, match, unique_predicted, unique_gold)
        starts = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(related // size, minlength=size), out=starts[1:])
        related_ids = related % size
    lists = np.arange(len(prediction_offsets) - 1) if groups is None else groups
    arrays = int64_arrays(predicted, prediction_offsets, gold, gold_offsets, lists, starts, related_ids)
    columns = preparation._speedups.related_edges(*arrays, size, _EDGES_BY[by])
    examples, predictions, gold_positions = (np.frombuffer(column, dtype=np.int64) for column in columns)
    return Edges(examples, predictions, gold_positions, match == "exact")


def _ascii_tables(normalize: str) -> tuple[bytes, bytes, int]:
    """A built-in normalization of ASCII text as the C helper's `document_edges` applies it:
    each character's replacement (after lower case; 255: removed), which characters are
    white space (`str.split`'s), and whether white space is collapsed (1: "default") or only
    stripped (0). Read from the normalizations themselves (`preparation`)."""
    characters = [chr(c) for c in range(128)]
    if normalize == "default":
        replaced = [preparation._ASCII_DEFAULT[ord(ch.lower())] for ch in characters]
    elif normalize == "ascii":
        replaced = [None if preparation._NON_ASCII_ALNUM.match(ch) else ord(ch.lower()) for ch in characters]
    else:
        replaced = list(range(128))
    table = bytes(255 if code is None else code for code in replaced)
    return table, bytes(ch.isspace() for ch in characters), int(normalize == "default")


_DOCUMENT_TABLES = {normalize: _ascii_tables(normalize) for normalize in preparation.NORMALIZE_MODES}


def by_documents(predictions: Sequence[Any], references: Sequence[Any], normalize: Any) -> bool:
    """Whether `document_edges` takes the corpus: a built-in normalization, rows given as
    lists or tuples, and `documents_cheaper`."""
    return (
        isinstance(normalize, str)
        and normalize in _DOCUMENT_TABLES
        and type(predictions) in (list, tuple)
        and type(references) in (list, tuple)
        and 0 < len(predictions) == len(references)
        and documents_cheaper(references)
    )


def documents_cheaper(references: Sequence[Any]) -> bool:
    """Whether normalizing and relating each example on its own costs less than preparing the
    corpus: with the C helper (without it, the corpus path's arrays cost as much as a loop
    over documents in Python, or less), and when the gold keywords of the first
    `_CONTENT_SAMPLE` examples are nearly all distinct (`_DISTINCT_GOLD`): documents of their
    own phrases. Where they repeat (a movie's list given to each of its reviews, phrases drawn
    from a small vocabulary), the corpus path normalizes and relates each distinct string
    once, from a table small enough to stay in cache. A sample: its cost does not grow with
    the corpus."""
    if preparation._speedups is None:
        return False
    sample = references[: preparation._CONTENT_SAMPLE]
    # a list given again, found without reading the lists: right after itself (a movie's list
    # given to each of its reviews: found at once), or later
    if any(map(operator.is_, sample, islice(sample, 1, None))) or len(set(map(id, sample))) < len(sample):
        return False
    try:
        keywords = list(chain.from_iterable(sample))
    except TypeError:  # rows that are not lists: the corpus path names what is wrong
        return False
    # exact str only: a subclass's __hash__ and __eq__ are never asked (the corpus path reads it by value)
    return set(map(type, keywords)) <= {str} and len(set(keywords)) >= _DISTINCT_GOLD * len(keywords)


# The share of distinct strings among a sample of gold keywords above which documents are
# taken to have their own phrases: 0.97-0.99 for phrases of the movie reviews' 21,339 words,
# 0.70-0.73 for phrases drawn from a vocabulary of 5,000.
_DISTINCT_GOLD = 0.9


def document_edges(
    predictions: Sequence[Any], references: Sequence[Any], normalize: str, match: str
) -> tuple[np.ndarray, np.ndarray, Edges] | None:
    """`(prediction sizes, gold sizes, edges)` of a corpus prepared under a built-in
    normalization (docs/definitions.md section 1) and related under `match`, each example on
    its own: its keywords normalized, empty and repeated forms dropped, every (prediction,
    gold keyword) pair tested; sizes and positions count the kept keywords. No vocabulary:
    time and memory linear in the keywords and each example's pairs. In C when the helper is
    built (ASCII text normalized there, the rest by `preparation`), else
    `_document_edges_in_python`. None when a row is not a list or tuple of str, or a keyword
    holds a lone surrogate (the corpus path names it)."""
    speedups = preparation._speedups
    if speedups is None:
        return _document_edges_in_python(predictions, references, normalize, match)
    known: dict[str, tuple[str, str]] = {}
    while True:
        found = speedups.document_edges(
            predictions, references, *_DOCUMENT_TABLES[normalize], _MATCH_CODES[match], known
        )
        if not isinstance(found, list):
            break
        missing = list(dict.fromkeys(found))  # keywords that are not ASCII: normalized in Python
        forms = preparation.make_normalizer(normalize).many(missing)
        if forms is None:
            return None
        known.update(zip(missing, ((form, " ".join(form.split())) for form in forms)))
    if found is None:
        return None
    prediction_sizes, gold_sizes, columns = found
    examples, positions, gold_positions = (np.frombuffer(column, dtype=np.int64) for column in columns)
    edges = Edges(examples, positions, gold_positions, match == "exact")
    return np.frombuffer(prediction_sizes, dtype=np.int64), np.frombuffer(gold_sizes, dtype=np.int64), edges


def _document_edges_in_python(
    predictions: Sequence[Any], references: Sequence[Any], normalize: str, match: str
) -> tuple[np.ndarray, np.ndarray, Edges] | None:
    """`document_edges` in Python: the distinct keywords normalized in one batch, then each
    example's kept forms related pair by pair (token forms padded with spaces)."""
    rows = [*predictions, *references]
    if not set(map(type, rows)) <= {list, tuple} or not set(map(type, chain.from_iterable(rows))) <= {str}:
        return None
    distinct = list(dict.fromkeys(chain.from_iterable(rows)))
    forms = preparation.make_normalizer(normalize).many(distinct)
    if forms is None:
        return None
    form_of = dict(zip(distinct, forms))
    sizes: list[list[int]] = [[], []]
    edges: list[tuple[int, int, int]] = []
    for example, (predicted, gold) in enumerate(zip(predictions, references)):
        kept = []
        for side, row in enumerate((predicted, gold)):
            forms_kept = list(dict.fromkeys(form for form in map(form_of.__getitem__, row) if form))
            sizes[side].append(len(forms_kept))
            kept.append(forms_kept)
        predicted_forms, gold_forms = kept
        if match == "exact":
            position = {form: g for g, form in enumerate(gold_forms)}
            edges += [(example, j, position[form]) for j, form in enumerate(predicted_forms) if form in position]
            continue
        if match == "token":
            predicted_forms, gold_forms = list(map(_token_form, predicted_forms)), list(map(_token_form, gold_forms))
        edges += [
            (example, j, g) for j, a in enumerate(predicted_forms) for g, b in enumerate(gold_forms) if a in b or b in a
        ]
    columns = [np.fromiter((edge[k] for edge in edges), dtype=np.int64, count=len(edges)) for k in range(3)]
    prediction_sizes, gold_sizes = (np.asarray(side, dtype=np.int64) for side in sizes)
    return prediction_sizes, gold_sizes, Edges(*columns, match == "exact")


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


def corpus_neighbors(corpus: PreparedCorpus, match: str) -> list[list[tuple[int, ...]]]:
    """For each example and each of its predictions, the positions (ascending) of the gold
    keywords of that example that the prediction matches."""
    edges = corpus_edges(corpus, match)
    neighbors: list[list[tuple[int, ...]]] = [[()] * size for size in corpus.predictions.sizes.tolist()]
    if len(edges.examples):
        examples, predictions, gold = edges.examples.tolist(), edges.predictions.tolist(), edges.gold.tolist()
        run: list[int] = []
        for index, (example, prediction, position) in enumerate(zip(examples, predictions, gold)):
            run.append(position)
            if index + 1 == len(examples) or examples[index + 1] != example or predictions[index + 1] != prediction:
                neighbors[example][prediction] = tuple(run)
                run = []
    return neighbors


def examples_neighbors(edges: Edges, chosen: np.ndarray, sizes: Sequence[int]) -> list[list[tuple[int, ...]]]:
    """`corpus_neighbors` of the examples `chosen`, the i-th with `sizes[i]`
    predictions, from their edges (read in one pass)."""
    starts = np.searchsorted(edges.examples, chosen)
    counts = np.searchsorted(edges.examples, chosen, side="right") - starts
    owner, k = _expand(counts)
    taken = starts[owner] + k
    predictions, gold = edges.predictions[taken].tolist(), edges.gold[taken].tolist()
    bounds = np.cumsum(counts).tolist()
    every, start = [], 0
    for size, stop in zip(sizes, bounds):
        neighbors: list[list[int]] = [[] for _ in range(size)]
        for prediction, position in zip(predictions[start:stop], gold[start:stop]):
            neighbors[prediction].append(position)
        every.append([tuple(positions) for positions in neighbors])
        start = stop
    return every


def shared_vertices(edges: Edges, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per example: edges, distinct predictions and distinct gold keywords in its edges."""
    examples, predictions, gold, is_matching = edges
    if is_matching:
        count = np.bincount(examples, minlength=n)
        return count, count, count
    new_prediction = np.ones(len(examples), dtype=bool)
    new_prediction[1:] = (examples[1:] != examples[:-1]) | (predictions[1:] != predictions[:-1])
    sorted_examples, sorted_gold = sort_with_payload(examples, gold)
    new_gold = np.ones(len(examples), dtype=bool)
    new_gold[1:] = (sorted_examples[1:] != sorted_examples[:-1]) | (sorted_gold[1:] != sorted_gold[:-1])
    return (
        np.bincount(examples, minlength=n),
        np.bincount(examples[new_prediction], minlength=n),
        np.bincount(sorted_examples[new_gold], minlength=n),
    )


def cut_edges(edges: Edges, cutoffs: np.ndarray | None) -> Edges:
    """The edges of predictions at positions below `cutoffs[example]` (None: all)."""
    if cutoffs is None or not len(edges.examples):
        return edges
    kept = edges.predictions < cutoffs[edges.examples]
    return Edges(edges.examples[kept], edges.predictions[kept], edges.gold[kept], edges.matching)


def edge_counts(edges: Edges, n: int, one_to_one: bool, cutoffs: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Per example (n of them): (matched predictions, matched gold keywords), counting only
    predictions at positions below `cutoffs[example]` (None: all).

    With `one_to_one`, both are the size of a maximum matching: found by counting where
    `needs_matching` says so (the usual case), by Hopcroft-Karp on the other examples;
    otherwise a prediction (gold keyword) counts when it is in any edge.
    """
    edges = cut_edges(edges, cutoffs)
    examples, predictions, gold, _ = edges
    edge_count, matched_predictions, matched_gold = shared_vertices(edges, n)
    if not one_to_one:
        return matched_predictions, matched_gold
    size = np.minimum(matched_predictions, matched_gold)
    general = np.flatnonzero(needs_matching(edge_count, matched_predictions, matched_gold))
    if len(general):
        starts = np.searchsorted(examples, general)
        stops = np.searchsorted(examples, general, side="right")
        for example, start, stop in zip(general.tolist(), starts.tolist(), stops.tolist()):
            adjacency: dict[int, list[int]] = {}
            for prediction, position in zip(predictions[start:stop].tolist(), gold[start:stop].tolist()):
                adjacency.setdefault(prediction, []).append(position)
            size[example] = hopcroft_karp(list(adjacency.values()))
    return size, size.copy()


def match_counts(
    corpus: PreparedCorpus, match: str, one_to_one: bool, cutoffs: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per example: (matched predictions, matched gold keywords) under `match`, as
    `edge_counts` counts them; "exact" without building edges (`exact_match_counts`)."""
    if match == "exact":
        matched = exact_match_counts(corpus, cutoffs)
        return matched, matched.copy()
    return edge_counts(corpus_edges(corpus, match), len(corpus), one_to_one, cutoffs)


def exact_match_counts(corpus: PreparedCorpus, cutoffs: np.ndarray | None = None) -> np.ndarray:
    """Per example: how many of its predictions below `cutoffs[example]` (None: all) are
    among its gold keywords. Under "exact" a prediction matches one gold keyword at most and
    a gold keyword one prediction (neither list repeats an id), so this is both matched
    counts, one-to-one or not. Found from the keys (list, id): the predictions' searched
    among the gold keywords' sorted keys, or both sides' (sorted by the preparation) merged;
    in C when the helper is built (`_speedups.exact_hits`)."""
    predicted, prediction_offsets, _ = corpus.predictions.flat
    gold, gold_offsets, groups = corpus.references.flat
    n = len(prediction_offsets) - 1
    speedups = preparation._speedups
    if speedups is not None:  # the C helper: each list's ids marked, no sort
        lists = np.arange(n) if groups is None else groups
        arrays = int64_arrays(predicted, prediction_offsets, gold, gold_offsets, lists)
        cut = None if cutoffs is None else int64_arrays(cutoffs)[0]
        hits = speedups.exact_hits(*arrays, cut, len(corpus.strings))
        return np.frombuffer(hits, dtype=np.int64).copy()
    gold_keys = corpus.references.sorted_keys
    if gold_keys is None:
        gold_keys = np.sort(list_keys(np.repeat(np.arange(len(gold_offsets) - 1), np.diff(gold_offsets)), gold))
    keys = corpus.predictions.sorted_keys
    if keys is None or cutoffs is not None or groups is not None:
        examples = np.repeat(np.arange(n), np.diff(prediction_offsets))
        if cutoffs is not None:
            kept = np.arange(len(predicted)) - prediction_offsets[examples] < cutoffs[examples]
            examples, predicted = examples[kept], predicted[kept]
        keys = list_keys(examples if groups is None else groups[examples], predicted)
    else:  # two sorted runs without repeats: merged (timsort), a key found twice is a match
        merged = np.concatenate([keys, gold_keys])
        merged.sort(kind="stable")
        return np.bincount(merged[1:][merged[1:] == merged[:-1]] >> 32, minlength=n)
    _, hit = sorted_lookup(gold_keys, keys)
    return np.bincount(examples[hit], minlength=n)


def needs_matching(edge_count: np.ndarray, matched_predictions: np.ndarray, matched_gold: np.ndarray) -> np.ndarray:
    """Per example: whether a maximum matching must be searched (`hopcroft_karp`). Not when
    no gold keyword is in two edges (each matched prediction keeps one of its own: the size
    is the number of matched predictions) or no prediction is (the number of matched gold
    keywords), the usual cases; in both the size is `min(matched predictions, matched gold)`."""
    return (edge_count != matched_predictions) & (edge_count != matched_gold)


def hopcroft_karp(neighbors: Sequence[Sequence[int]]) -> int:
    """Size of a maximum bipartite matching (Hopcroft-Karp: O(E sqrt(V)) time, O(E) memory).

    `neighbors[i]` lists the right vertices (any hashable) adjacent to left vertex i.
    """
    match_of_left: list[Any] = [None] * len(neighbors)
    match_of_right: dict[Any, int] = {}
    size = 0
    # A greedy pass first: most edges of sparse graphs end up here.
    for left, rights in enumerate(neighbors):
        for right in rights:
            if right not in match_of_right:
                match_of_right[right] = left
                match_of_left[left] = right
                size += 1
                break
    infinity = len(neighbors) + 1
    while True:
        # BFS from the free left vertices: layer (distance) of each left vertex.
        distance = [infinity] * len(neighbors)
        queue = [left for left in range(len(neighbors)) if match_of_left[left] is None and neighbors[left]]
        for left in queue:
            distance[left] = 0
        found = False
        head = 0
        while head < len(queue):
            left = queue[head]
            head += 1
            for right in neighbors[left]:
                owner = match_of_right.get(right)
                if owner is None:
                    found = True
                elif distance[owner] == infinity:
                    distance[owner] = distance[left] + 1
                    queue.append(owner)
        if not found:
            return size
        # DFS along the layers for vertex-disjoint shortest augmenting paths.
        position = [0] * len(neighbors)
        for root in range(len(neighbors)):
            if match_of_left[root] is not None or distance[root] != 0:
                continue
            stack = [root]
            while stack:
                left = stack[-1]
                rights = neighbors[left]
                advanced = False
                while position[left] < len(rights):
                    right = rights[position[left]]
                    position[left] += 1
                    owner = match_of_right.get(right)
                    if owner is None:  # augment along the stack
                        for vertex in reversed(stack):
                            previous = match_of_left[vertex]
                            match_of_left[vertex] = right
                            match_of_right[right] = vertex
                            right = previous
                        size += 1
                        stack = []
                        advanced = True
                        break
                    if distance[owner] == distance[left] + 1:
                        stack.append(owner)
                        advanced = True
                        break
                if not advanced:
                    distance[left] = infinity  # dead end for this phase
                    stack.pop()


def maximum_matching_pairs(
    neighbors: Sequence[Sequence[int]], order: Iterable[int] | None = None
) -> list[tuple[int, int]]:
    """The (left, right) pairs, sorted, of the matching that `maximum_matching` finds."""
    match_of_right: dict[int, int] = {}
    maximum_matching(neighbors, order, match_of_right)
    return sorted((left, right) for right, left in match_of_right.items())


def maximum_matching(
    neighbors: Sequence[Sequence[int]], order: Iterable[int] | None = None, match_of_right: dict[int, int] | None = None
) -> list[bool]:
    """Which left vertices a maximum bipartite matching covers (Kuhn's augmenting paths).

    `neighbors[i]` lists the right vertices adjacent to left vertex i. Left vertices are
    inserted in `order` (default: index order); a vertex stays matched once matched, so
    inserting by decreasing weight gives a maximum-weight matching for vertex weights
    (transversal matroid greedy). `match_of_right`, when given (empty), receives the
    matching: right vertex -> its left vertex.
    """
    match_of_right = {} if match_of_right is None else match_of_right
    matched = [False] * len(neighbors)
    visited: set[int] = set()  # kept across failed searches: the matching has not changed
    for root in range(len(neighbors)) if order is None else order:
        if not neighbors[root]:
            continue
        # Iterative DFS for an augmenting path from `root`.
        stack = [(root, iter(neighbors[root]))]
        path: list[tuple[int, int]] = []
        found = False
        while stack and not found:
            left, candidates = stack[-1]
            for right in candidates:
                if right in visited:
                    continue
                visited.add(right)
                owner = match_of_right.get(right)
                path.append((left, right))
                if owner is None:
                    found = True
                else:
                    stack.append((owner, iter(neighbors[owner])))
                break
            else:
                stack.pop()
                if path:
                    path.pop()
        if found:
            for left, right in path:
                match_of_right[right] = left
            matched[root] = True
            visited.clear()
    return matched
