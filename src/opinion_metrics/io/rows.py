"""Arrow columns as Python values, fast: each distinct string decoded once and shared, no
garbage collection while millions of rows are built, and `ArrowColumn`, a column converted
where it is read (by each `--workers` process for its own rows, not all in the parent)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside: building millions of containers (a big file's
    rows) otherwise triggers full collections that each walk every object built so far."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def python_values(values: Any) -> list[Any]:
    """An Arrow array or chunked array (or a `LazyColumn`: an Arrow or Parquet column read where
    it is used) as a list equal to its `to_pylist()`; strings, alone or in lists, decoded once
    per distinct value."""
    if isinstance(values, LazyColumn):
        return values.to_pylist()
    chunks = values.chunks if hasattr(values, "chunks") else [values]
    with paused_gc():
        return [value for chunk in chunks for value in _chunk_values(chunk)]


class LazyColumn(Sequence):
    """A column of a file read as Python values only where it is used (`ArrowColumn`, and a
    Parquet file's `arrow.SourceColumn`): whatever takes an Arrow array takes it too."""

    def to_pylist(self) -> list[Any]:
        raise NotImplementedError

    def text_row(self) -> int | None:
        """The first row holding a text where a column of keyword lists belongs, or None."""
        raise NotImplementedError


class ArrowColumn(LazyColumn):
    """A column of an Arrow table read as Python values: whole and once, when first read, or
    a slice at a time (`column[a:b]` is an `ArrowColumn` of those rows) without the rest."""

    def __init__(self, array: Any) -> None:
        self.array = array
        self._values: list[Any] | None = None

    def __len__(self) -> int:
        return len(self.array)

    def to_pylist(self) -> list[Any]:
        if self._values is None:
            self._values = python_values(self.array)
        return self._values

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice) and self._values is None:
            start, stop, step = index.indices(len(self))
            if step == 1:
                return ArrowColumn(self.array.slice(start, max(stop - start, 0)))
        return self.to_pylist()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_pylist())

    def text_row(self) -> int | None:
        if not textual_type(self.array.type):
            return None
        valid = self.array.is_valid().to_pylist()
        return valid.index(True) if True in valid else None

    def take(self, rows: Sequence[int]) -> ArrowColumn | list[Any]:
        """The values at `rows`: this column itself when they are all its rows in order."""
        if len(rows) == len(self) and np.array_equal(np.asarray(rows), np.arange(len(self))):
            return self
        return list(map(self.to_pylist().__getitem__, rows))


def textual_type(kind: Any) -> bool:
    """A string type, or strings dictionary-encoded (as Parquet's `read_dictionary` reads them)."""
    import pyarrow.types as types

    if types.is_dictionary(kind):
        kind = kind.value_type
    return types.is_string(kind) or types.is_large_string(kind)


def _chunk_values(chunk: Any) -> list[Any]:
    import pyarrow.types as types

    kind = chunk.type
    if textual_type(kind):
        return _shared_strings(chunk)
    if not ((types.is_list(kind) or types.is_large_list(kind)) and textual_type(kind.value_type)) or not len(chunk):
        return chunk.to_pylist()
    offsets = _integers(chunk.offsets)  # of a slice: into the whole `values`
    first = int(offsets[0])
    items = _shared_strings(chunk.values.slice(first, int(offsets[-1]) - first))
    bounds = (offsets - first).tolist()
    lists = [items[start:stop] for start, stop in zip(bounds, bounds[1:])]
    valid = _valid(chunk)
    return lists if valid is None else [cell if ok else None for cell, ok in zip(lists, valid.tolist())]


def shared_lists(array: Any) -> list[Any]:
    """A list<string> array (its strings dictionary-encoded or not) as `python_values` gives
    it, rows of equal contents (within a chunk) as one shared list object: a gold list
    repeated on every row of a movie is built once, and prepared once by the library (which
    recognizes repeated rows by identity first). Other arrays (lists of tuples): as given."""
    import pyarrow as pa

    values = python_values(array)
    row = 0
    for chunk in array.chunks if isinstance(array, pa.ChunkedArray) else [array]:
        if not pa.types.is_list(chunk.type) or not textual_type(chunk.type.value_type) or len(chunk) < 2:
            row += len(chunk)
            continue
        element = chunk.values  # the whole child array: the offsets of a slice point into it
        codes = element.indices if pa.types.is_dictionary(element.type) else element.dictionary_encode().indices
        data = memoryview(np.ascontiguousarray(_integers(codes), dtype=np.int64)).cast("B")
        offsets = _integers(chunk.offsets).tolist()
        shared: dict[bytes, list[Any]] = {}
        for start, stop in zip(offsets, offsets[1:]):
            if values[row] is not None:
                values[row] = shared.setdefault(data[8 * start : 8 * stop].tobytes(), values[row])
            row += 1
    return values


def _shared_strings(values: Any) -> list[str | None]:
    """A string array's values, each distinct one decoded once (its copies are one object):
    less memory and time than one Python string per cell when values repeat."""
    import pyarrow.types as types

    encoded = values if types.is_dictionary(values.type) else values.dictionary_encode()
    if 2 * len(encoded.dictionary) > len(values):  # mostly distinct: nothing to share
        return values.to_pylist()
    distinct = np.array([*encoded.dictionary.to_pylist(), None], dtype=object)
    return distinct[_integers(encoded.indices)].tolist()  # a null is -1: the last, None


def _integers(array: Any) -> np.ndarray:
    """An Arrow integer array as numpy, nulls as -1, read from its buffers (pyarrow's own
    conversion imports pandas, a fifth of a second, for nothing here)."""
    width = array.type.bit_width
    data = array.buffers()[1]
    values = np.frombuffer(data, dtype=f"int{width}", count=len(array), offset=array.offset * width // 8)
    valid = _valid(array)
    return values if valid is None else np.where(valid, values, -1)


def _valid(array: Any) -> np.ndarray | None:
    """Which entries of an Arrow array are not null (None: all)."""
    if not array.null_count:
        return None
    bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def content_key(row: Any) -> Hashable | None:
    """A list or tuple of exact str as a tuple (its content), else None: an object equal to a
    str (or a str subclass whose `__eq__` says so) never stands for another row unchecked."""
    if type(row) not in (list, tuple) or not set(map(type, row)) <= {str}:
        return None
    return tuple(row)


def repeated_rows(
    rows: Sequence[Any], key: Callable[[Any], Hashable | None] = content_key, by_identity: bool = True
) -> tuple[list[int], list[int]]:
    """The one place where repeated rows (a gold list broadcast to every review of a movie)
    are recognized, so that each is checked, prepared, matched and stored once.

    Rows are repeated when they are the same object (`by_identity`) or have the same
    `key(row)` (None: no key). Returns `(first, group)`: `first[g]` is the index of group
    g's first row, `group[i]` the group of row i.
    """
    first: list[int] = []
    group: list[int] = []
    by_object: dict[int, int] = {}
    by_key: dict[Hashable, int] = {}
    for index, row in enumerate(rows):
        number = by_object.get(id(row)) if by_identity else None
        if number is None:
            row_key = key(row)
            number = len(first) if row_key is None else by_key.setdefault(row_key, len(first))
            if number == len(first):
                first.append(index)
            if by_identity:  # `rows` keeps every row alive, so an id is never reused meanwhile
                by_object[id(row)] = number
        group.append(number)
    return first, group


def string_buffers(values: Any) -> tuple[np.ndarray, memoryview]:
    """(value offsets, data) of an Arrow string array, honouring its slice offset."""
    _, offsets_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[values.offset : values.offset + len(values) + 1]
    return offsets, memoryview(data_buffer if data_buffer is not None else b"")


def arrow_to_lists(column: Any, share_duplicates: bool = False) -> list[Any]:
    """Python lists from an Arrow list column (what `_compute` receives after `add_batch`);
    any other sequence is returned as a list.

    With `share_duplicates`, rows with equal contents become one shared list object, so a
    gold list repeated for every review is built, validated and prepared once.
    """
    import pyarrow as pa

    if not isinstance(column, (pa.Array, pa.ChunkedArray)):
        return list(column)
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    plain = pa.types.is_list(array.type) and pa.types.is_string(array.type.value_type)
    if not share_duplicates or not plain or array.null_count or len(array) < 2:
        return array.to_pylist()  # large, view or nested types: read by Arrow itself
    offsets = np.asarray(array.offsets).tolist()
    value_offsets, data = string_buffers(array.values)
    lengths = memoryview(np.diff(value_offsets).view(np.uint8))
    byte_starts = value_offsets[offsets].tolist()

    def row_bytes(i: int) -> tuple[bytes, bytes]:  # a row's content: its string lengths and bytes
        return lengths[4 * offsets[i] : 4 * offsets[i + 1]].tobytes(), data[
            byte_starts[i] : byte_starts[i + 1]
        ].tobytes()

    first, group = repeated_rows(range(len(array)), key=row_bytes, by_identity=False)
    distinct = [array[i].as_py() for i in first]
    return [distinct[g] for g in group]


def arrow_to_ratings(column: Any) -> Any:
    """An (examples x aspects) int array from an Arrow list column whose rows all have the
    same length; otherwise Python lists (the metric then names the odd row)."""
    import pyarrow as pa

    if not isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not hasattr(array, "offsets"):  # a fixed-size list column
        return array.to_pylist()
    lengths = np.diff(np.asarray(array.offsets))
    if array.null_count or len(array) == 0 or (lengths != lengths[0]).any():
        return array.to_pylist()
    return np.asarray(array.flatten()).reshape(len(array), int(lengths[0]))


def optional_column(column: Any, share_duplicates: bool = False) -> list[Any] | None:
    """An optional input as `_compute` should see it: None when absent or all null."""
    if column is None:
        return None
    values = arrow_to_lists(column, share_duplicates)
    return None if all(value is None for value in values) else values
