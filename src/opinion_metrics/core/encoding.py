"""Numbering keywords, scores and rows without a Python loop per item: distinct strings and
their codes (`encode_lists`, `number_strings`), floats (`encode_floats`), row objects by
identity (`row_objects`), rows frozen by the C helper (`FrozenRows`), and the array helpers
the joins use (`sort_with_payload`, `list_keys`, `ragged_ranges`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from .._native import helper


def _plain_rows(rows: Sequence[Any]) -> bool:
    """Whether every row is a list or tuple of exact str (rows that may be grouped by content)."""
    return set(map(type, rows)) <= {list, tuple} and set(map(type, chain.from_iterable(rows))) <= {str}


CONTENT_SAMPLE = 256


def _row_groups(lists: Sequence[Any]) -> np.ndarray | None:
    """`repeated_rows`'s groups, computed without a Python loop: by identity (a gold list
    broadcast to its movie's reviews) or, when no row object repeats but the first
    `CONTENT_SAMPLE` rows hold equal copies (a gold list read back per example), by content
    (rows of hashable items). None: every row its own."""
    by_object, first = row_objects(lists.objects if isinstance(lists, FrozenRows) else lists)
    if len(first) == len(lists):  # no object repeats: look for copies only if the sample has some
        sample = lists[:CONTENT_SAMPLE]
        if not _plain_rows(sample) or len(set(map(tuple, sample))) == min(len(lists), CONTENT_SAMPLE):
            return None
    # Equal content among the distinct objects (one per group found so far), of exact str only:
    # an object equal to a str is checked in its own row.
    distinct = [lists[i] for i in first.tolist()]
    by_content = np.arange(len(first))
    if _plain_rows(distinct):
        number: defaultdict[Any, int] = defaultdict()
        number.default_factory = number.__len__
        by_content = np.fromiter(map(number.__getitem__, map(tuple, distinct)), dtype=np.int64, count=len(first))
    groups = by_content[by_object]
    return groups if int(groups.max(initial=-1)) + 1 < len(lists) else None


def row_objects(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """`(numbers, first)`: each row's number among the distinct row objects, numbered in order
    of first appearance, and the position where each first appears (int64 arrays). In C when
    the helper is built (addresses hashed), else by sorting the addresses."""
    speedups = helper()
    numbered = None if speedups is None else speedups.row_objects(lists)
    if numbered is not None:
        return np.frombuffer(numbered[0], dtype=np.int64), np.frombuffer(numbered[1], dtype=np.int64)
    addresses = np.fromiter(map(id, lists), dtype=np.uint64, count=len(lists))
    ordered = np.sort(addresses)
    if (ordered[1:] != ordered[:-1]).all():  # no object repeats
        return np.arange(len(lists)), np.arange(len(lists))
    _, first, inverse = np.unique(addresses, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    return rank[inverse], first[order]


def encode_lists(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """`(sizes, codes, distinct)`: the length of each row, and each keyword's position in
    `distinct` (the distinct keywords in order of first appearance); None unless every row
    is a list or tuple and every keyword a str. In C when the helper is built (one pass, no
    Python call per keyword), else `_encode_lists_in_python`."""
    if isinstance(lists, FrozenRows):
        return lists.encoded()
    speedups = helper()
    if speedups is None:
        return _encode_lists_in_python(lists)
    encoded = speedups.distinct_codes(lists)
    if encoded is None:
        return None
    return np.frombuffer(encoded[0], dtype=np.int64), np.frombuffer(encoded[1], dtype=np.uint32), encoded[2]


def _encode_lists_in_python(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    if not set(map(type, lists)) <= {list, tuple}:
        return None
    if not set(map(type, chain.from_iterable(lists))) <= {str}:  # every keyword: one equal to a str is not one
        return None
    sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    code_of: defaultdict[str, int] = defaultdict()
    code_of.default_factory = code_of.__len__
    keywords = chain.from_iterable(lists)
    codes = np.fromiter(map(code_of.__getitem__, keywords), dtype=np.int64, count=int(sizes.sum()))
    return sizes, codes, list(code_of)


def number_strings(strings: list[str], table: defaultdict[str, int]) -> np.ndarray:
    """`[table[string] for string in strings]` as an int64 array, where `table` numbers the
    strings it meets in order (its default factory is its own `__len__`)."""
    speedups = helper()
    codes = None if speedups is None else speedups.number_strings(strings, table)
    if codes is None:  # without the helper, or a str subclass
        return np.fromiter(map(table.__getitem__, strings), dtype=np.int64, count=len(strings))
    return np.frombuffer(codes, dtype=np.uint32).astype(np.int64)


def encode_floats(lists: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """`(sizes, values)`: the length of each row and all its values as one float array; None
    unless every row is a list or tuple of floats. In C when the helper is built."""
    if isinstance(lists, FrozenRows):
        return lists.floats()
    speedups = helper()
    if speedups is not None:
        encoded = speedups.encode_floats(lists)
        return None if encoded is None else (np.frombuffer(encoded[0], np.int64), np.frombuffer(encoded[1], np.float64))
    if not set(map(type, lists)) <= {list, tuple}:
        return None
    values = list(chain.from_iterable(lists))
    if not set(map(type, values)) <= {float}:
        return None
    return np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), np.array(values, dtype=np.float64)


def int64_arrays(*arrays: Any) -> list[np.ndarray]:
    """The arrays as the C helper takes them: contiguous int64 (no copy when they are)."""
    return [np.ascontiguousarray(array, dtype=np.int64) for array in arrays]


def list_keys(lists: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """`list << 32 | id` (ids are below 2**32): one integer per (list, keyword id), ordered
    by list, then id."""
    keys = lists << 32
    keys |= ids
    return keys


def sort_with_payload(keys: np.ndarray, payload: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`keys` sorted, and `payload` (non-negative) in the same order (ties by payload): one
    `np.sort` of `keys << bits | payload` when that fits in int64, else a lexsort."""
    if not len(keys):
        return keys, payload
    bits = int(payload.max()).bit_length()
    if keys.min() >= 0 and int(keys.max()) < 1 << (62 - bits):
        encoded = keys << bits
        encoded |= payload
        encoded.sort()
        payload = encoded & ((1 << bits) - 1)
        encoded >>= bits
        return encoded, payload
    order = np.lexsort((payload, keys))
    return keys[order], payload[order]


class FrozenRows(Sequence[tuple[Any, ...]]):
    """Rows frozen by the C helper's `snapshot_rows`: their items in one tuple (`items`; a row
    given again right after itself, once), each row's size and start there (int64 bytes), and
    the row objects they were taken from (`objects`, held: an object's rows hold the same
    items). Read whole in C by `encode_lists` and `encode_floats`, grouped by `objects` in
    `_row_groups`; row r is a new tuple at each access (the per-row path reads `list(rows)`)."""

    def __init__(
        self, items: tuple[Any, ...], sizes: bytes, starts: bytes, objects: tuple[Any, ...], helper: Any
    ) -> None:
        self.items = items
        self.sizes = sizes
        self.row_sizes = np.frombuffer(sizes, dtype=np.int64)
        self.starts = np.frombuffer(starts, dtype=np.int64)
        self.objects = objects
        self._helper = helper  # the C helper that froze them

    def __len__(self) -> int:
        return len(self.objects)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start = int(self.starts[index])
        return self.items[start : start + int(self.row_sizes[index])]

    def __iter__(self) -> Any:
        items = self.items
        return iter([items[start : start + size] for start, size in zip(self.starts.tolist(), self.row_sizes.tolist())])

    def _positions(self) -> np.ndarray | None:
        """Where in `items` each item of the rows, in turn, is (None: `items` in order)."""
        total = int(self.row_sizes.sum())
        if total == len(self.items):
            return None
        offsets = np.cumsum(self.row_sizes) - self.row_sizes
        return np.repeat(self.starts - offsets, self.row_sizes) + np.arange(total)

    def encoded(self) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
        """`encode_lists` of the rows: one pass in C over `items`."""
        encoded = self._helper.distinct_codes((self.items,))
        if encoded is None:
            return None
        codes, positions = np.frombuffer(encoded[1], dtype=np.uint32), self._positions()
        return self.row_sizes, codes if positions is None else codes[positions], encoded[2]

    def floats(self) -> tuple[np.ndarray, np.ndarray] | None:
        """`encode_floats` of the rows: one pass in C over `items`."""
        encoded = self._helper.encode_floats((self.items,))
        if encoded is None:
            return None
        values, positions = np.frombuffer(encoded[1], dtype=np.float64), self._positions()
        return self.row_sizes, values if positions is None else values[positions]


def ragged_ranges(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(owner, k)` for k in range(counts[owner]), for every owner: a ragged range."""
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - starts[owner]
