"""Whether one keyword contains the other (docs/definitions.md section 2: "substring" and
"token"), between two lists of distinct strings: searches over the joined strings (by lookup
of each string's windows, by `str.find`, by rolling hashes, or the C helper's automata),
whichever the cost model says is cheapest.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Sequence

import numpy as np

from .._native import helper
from .encoding import ragged_ranges
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
    speedups = helper()
    if speedups is None:
        return None
    found = speedups.contained_pairs(needles, haystacks, block, _CONTAINMENT_BY[by])
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
    window_start, which = ragged_ranges(fitting)
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
    window, k = ragged_ranges(counts[hit])
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


def token_form(keyword: str) -> str:
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
        predicted = [token_form(keyword) for keyword in predicted]
        gold = [token_form(keyword) for keyword in gold]
    elif match != "substring":
        check_match(match)
    predicted_in, gold_around = containment_arrays(predicted, gold)
    gold_in, predicted_around = containment_arrays(gold, predicted)
    keys = np.concatenate([predicted_in * len(gold) + gold_around, predicted_around * len(gold) + gold_in])
    keys.sort()  # (np.unique hashes first: slower on many keys)
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys
    return keys // max(len(gold), 1), keys % max(len(gold), 1)
