"""Arrow and Parquet: files, folders of Parquet files (read in batches, `ParquetSource`),
`datasets` folders, and columns converted where they are read (`SourceColumn`).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .rows import ArrowColumn, LazyColumn, python_values, shared_lists, textual_type
from .table import SUPPORTED, TableError


def _datasets_folder(path: Path) -> bool:
    return any((path / name).is_file() for name in ("dataset_dict.json", "state.json"))


def _read_folder(path: Path) -> dict[str, list[Any]]:
    if not _datasets_folder(path):
        message = (
            "a folder, but neither a folder of Parquet files nor a datasets folder saved with save_to_disk; "
            f"give a file ({SUPPORTED})"
        )
        raise TableError(path, message, usage=True)
    from datasets import load_from_disk

    try:
        dataset = load_from_disk(str(path))
    except Exception as error:  # datasets raises several types for a damaged folder
        raise TableError(path, f"not a readable datasets folder ({error})") from None
    if hasattr(dataset, "keys"):  # a DatasetDict: its only split
        splits = list(dataset.keys())
        if len(splits) != 1:
            message = f"a datasets folder with {len(splits)} splits ({', '.join(splits)}); give one split's folder"
            raise TableError(path, message + (f", e.g. {path / splits[0]}" if splits else ""), usage=True)
        dataset = dataset[splits[0]]
    return dataset.to_dict()


def _float_decimals(kind: Any) -> Any:
    """`kind` with its decimal types as float64, lists of them included: a score is a number,
    not a `Decimal`."""
    import pyarrow

    if pyarrow.types.is_decimal(kind):
        return pyarrow.float64()
    if pyarrow.types.is_list(kind) or pyarrow.types.is_large_list(kind):
        item = kind.value_field.with_type(_float_decimals(kind.value_type))
        return pyarrow.list_(item) if pyarrow.types.is_list(kind) else pyarrow.large_list(item)
    if pyarrow.types.is_fixed_size_list(kind):
        return pyarrow.list_(kind.value_field.with_type(_float_decimals(kind.value_type)), kind.list_size)
    return kind


def arrow_columns(table: Any, lazy: bool = False) -> dict[str, Any]:
    """A pyarrow table's columns as Python lists (`columnar.python_values`), equal to
    `table.to_pydict()` with decimals as floats; with `lazy`, as `ArrowColumn`s."""
    import pyarrow

    schema = pyarrow.schema([field.with_type(_float_decimals(field.type)) for field in table.schema])
    if not schema.equals(table.schema):
        table = table.cast(schema)
    if lazy:  # what converting would find now: a text that is not UTF-8
        try:
            table.validate(full=True)
        except pyarrow.ArrowInvalid as error:
            if "utf8" not in str(error).lower():
                raise
            raise UnicodeDecodeError("utf-8", b"", 0, 0, str(error)) from None
    convert = ArrowColumn if lazy else python_values
    return {name: convert(column) for name, column in zip(table.column_names, table.columns)}


def check_unique_names(path: Path, names: Sequence[str]) -> None:
    """Parquet and Arrow schemas may name two columns alike: refuse it, as a CSV header's (a
    table keeps one column of a name, so which one is read would be a guess)."""
    twice = next((name for name, count in Counter(names).items() if count > 1), None)
    if twice is not None:
        raise TableError(path, f"column {twice!r} appears twice; give each column its own name")


def _read_arrow(path: Path, lazy: bool) -> dict[str, Any]:
    """An Arrow IPC file (pandas' `to_feather`, polars' `write_ipc`) or stream, or a Feather V1
    file (`write_feather(..., version=1)`, pandas before 1.0)."""
    import pyarrow
    import pyarrow.ipc as ipc

    with open(path, "rb") as raw:
        feather_v1 = raw.read(4) == b"FEA1"
    try:
        if feather_v1:
            from pyarrow import feather

            table = feather.read_table(str(path), memory_map=False)
        else:
            try:
                table = ipc.open_file(path).read_all()
            except pyarrow.ArrowInvalid:  # the stream format (no footer)
                with pyarrow.OSFile(str(path)) as source:
                    table = ipc.open_stream(source).read_all()
        check_unique_names(path, table.column_names)
        return arrow_columns(table, lazy)
    except UnicodeDecodeError:
        raise TableError(path, "a text column holds bytes that are not UTF-8; save its texts as UTF-8") from None
    except (pyarrow.ArrowException, OSError) as error:
        raise TableError(path, f"not a readable {'Feather V1' if feather_v1 else 'Arrow'} file ({error})") from None


def _read_parquet(path: Path, lazy: bool) -> tuple[dict[str, Any], ParquetSource]:
    """A Parquet file, or a folder of them, as columns: `SourceColumn`s (read where they are
    used, a batch at a time) with `lazy`, else Python lists read a batch at a time (a column
    over 2 GiB, such as a gold list on every row, never has to fit one Arrow array); and the
    source, which names a row's file."""
    source = ParquetSource(path)
    columns = {name: SourceColumn(source, name) for name in source.names}
    return (columns if lazy else {name: column.to_pylist() for name, column in columns.items()}), source


# Rows converted at a time when a Parquet file is streamed: a row holding a movie's gold list
# (300 keywords) decodes to about 8 KB of Arrow, so a batch stays near 32 MB.
BATCH_ROWS = 4096


# A streamed chunk (the work of one `--workers` task): row groups gathered up to this many rows.
CHUNK_ROWS = 65_536


def parquet_files(path: Path) -> list[Path]:
    """The Parquet files of a folder and its subfolders, in name order; hidden files and
    folders and those starting with '_' (Spark's `_SUCCESS`, `_temporary`) are skipped, as
    Arrow and Spark skip them."""
    return sorted(
        file
        for file in path.rglob("*")
        if file.suffix.lower() in (".parquet", ".parq")
        and not any(part.startswith((".", "_")) for part in file.relative_to(path).parts)
        and file.is_file()
    )


class ParquetSource:
    """A Parquet file or a folder of Parquet files, read by row group: only the columns asked
    for, `BATCH_ROWS` rows at a time. Row numbers run over the files in name order."""

    def __init__(self, path: Path) -> None:
        import pyarrow
        import pyarrow.parquet as parquet

        self.path = Path(path)
        self.files = parquet_files(self.path) if self.path.is_dir() else [self.path]
        if not self.files:
            raise TableError(
                self.path, f"a folder without Parquet files; give a file or a folder of them ({SUPPORTED})"
            )
        self.groups: list[tuple[int, int, int]] = []  # (file number, row group, its first row)
        self.sizes: list[int] = []  # rows of each row group
        self.names: list[str] = []
        self.dictionaries: list[dict[str, list[str]]] = []  # per file: leaf paths read dictionary-encoded
        self.schemas: list[Any] = []  # per file: its Arrow schema (a column's type may differ between files)
        for number, file in enumerate(self.files):
            try:
                with parquet.ParquetFile(file) as handle:
                    schema = handle.schema_arrow
                    check_unique_names(file, schema.names)
                    if number == 0:
                        self.names, self.schema = schema.names, schema
                    elif set(schema.names) != set(self.names):
                        other = sorted(set(schema.names) ^ set(self.names))
                        raise TableError(
                            file,
                            f"its columns differ from those of {self.files[0].name} ({', '.join(map(repr, other))}); "
                            "every file of a folder needs the same columns",
                        )
                    self.dictionaries.append(_dictionary_leaves(handle))
                    metadata = handle.metadata
                    for group in range(metadata.num_row_groups):
                        rows = metadata.row_group(group).num_rows
                        if rows:
                            self.groups.append((number, group, sum(self.sizes)))
                            self.sizes.append(rows)
            except (pyarrow.ArrowException, OSError) as error:
                raise TableError(file, f"not a readable Parquet file ({error})") from None
            self.schemas.append(schema)
        self.num_rows = sum(self.sizes)
        self.partitions = hive_partitions(self.path, self.files) if self.path.is_dir() else [{}]
        self.partition_names = list(self.partitions[0])
        for file, schema in zip(self.files, self.schemas):
            both = next((name for name in self.partition_names if name in schema.names), None)
            if both is not None:
                raise TableError(
                    file,
                    f"column {both!r} is both in the file and in its folder name ({self._relative(file)}); "
                    "keep one (Spark's partitionBy writes it in the folder names only)",
                )
        self.names = [*self.names, *self.partition_names]
        self.schema = pyarrow.schema(
            [*self.schema, *(pyarrow.field(name, pyarrow.string()) for name in self.partition_names)]
        )

    def location(self, row: int) -> str:
        """Where row `row` (0-based, over every file) is: 'row 3 of x.parquet'; in a folder,
        also the file and the row there."""
        if not self.path.is_dir():
            return f"row {row + 1} of {self.path.name}"
        index = max(bisect.bisect_right([start for _, _, start in self.groups], row) - 1, 0)
        number = self.groups[index][0] if self.groups else 0
        first = next((start for file, _, start in self.groups if file == number), 0)
        return f"row {row + 1} of {self.path.name} ({self._relative(self.files[number])}, row {row - first + 1})"

    def _relative(self, file: Path) -> str:
        """A file of the folder as its path there ('model=a/part-0.parquet')."""
        return file.relative_to(self.path).as_posix() if self.path.is_dir() else file.name

    def file_rows(self, number: int) -> tuple[int, int]:
        """The [start, stop) rows of file `number`."""
        spans = [(start, start + size) for (file, _, start), size in zip(self.groups, self.sizes) if file == number]
        return (spans[0][0], spans[-1][1]) if spans else (0, 0)

    def text_row(self, name: str) -> int | None:
        """The first row holding a text (not null) in column `name` of a file that stores it as text
        (a list column elsewhere, or in no file): where a column of keyword lists belongs, what to name."""
        for number, schema in enumerate(self.schemas):
            textual = name in self.partition_names or textual_type(schema.field(name).type)
            if not textual:
                continue
            start, stop = self.file_rows(number)
            for first, table in self.batches([name], start, stop):
                valid = table.column(name).is_valid().to_pylist()
                if True in valid:
                    return first + valid.index(True)
        return None

    def chunks(self, parts: int) -> list[tuple[int, int]]:
        """[start, stop) row ranges covering every row: whole row groups gathered up to
        `CHUNK_ROWS` rows; a row group larger than that cut into `parts` pieces of whole
        batches (each piece decodes the row group up to its end: a few parts keep that cheap)."""
        chunks: list[tuple[int, int]] = []
        for (_, _, start), size in zip(self.groups, self.sizes):
            if size > CHUNK_ROWS and parts > 1:
                batches = -(-size // BATCH_ROWS)
                edges = sorted({start + min(size, BATCH_ROWS * (batches * i // parts)) for i in range(parts + 1)})
                chunks.extend(zip(edges, edges[1:]))
            elif chunks and chunks[-1][1] == start and chunks[-1][1] - chunks[-1][0] + size <= CHUNK_ROWS:
                chunks[-1] = (chunks[-1][0], start + size)
            else:
                chunks.append((start, start + size))
        return chunks

    def batches(self, columns: Sequence[str], start: int = 0, stop: int | None = None) -> Iterator[tuple[int, Any]]:
        """(first row, Arrow table of `columns`) for the rows [start, stop), a batch at a time;
        list<string> columns come dictionary-encoded where the file stores them so (decoded
        once per batch, not once per cell)."""
        import pyarrow
        import pyarrow.parquet as parquet

        stop = self.num_rows if stop is None else stop
        missing = [name for name in columns if name not in self.names]
        if missing:
            raise ValueError(f"{self.path.name}: no column {missing[0]!r}")
        opened: tuple[int, Any] | None = None
        try:
            for (number, group, first), size in zip(self.groups, self.sizes):
                if first + size <= start or first >= stop:
                    continue
                if opened is None or opened[0] != number:
                    if opened is not None:
                        opened[1].close()
                    leaves = [leaf for name in columns for leaf in self.dictionaries[number].get(name, ())]
                    opened = (number, parquet.ParquetFile(self.files[number], read_dictionary=leaves or None))
                position = first
                stored = [name for name in columns if name not in self.partition_names]
                for batch in opened[1].iter_batches(BATCH_ROWS, row_groups=[group], columns=stored):
                    low, high = max(start, position), min(stop, position + batch.num_rows)
                    if low < high:
                        table = self._with_partitions(pyarrow.Table.from_batches([batch]), number, columns)
                        yield low, table.slice(low - position, high - low)
                    position += batch.num_rows
                    if position >= stop:
                        break
        except (pyarrow.ArrowException, OSError) as error:
            file = self.files[opened[0]] if opened is not None else self.path
            raise TableError(file, f"not a readable Parquet file ({error})") from None
        finally:
            if opened is not None:
                opened[1].close()

    def _with_partitions(self, table: Any, number: int, columns: Sequence[str]) -> Any:
        """`table` (a batch of file `number`) with its folder names' columns, in the order of `columns`."""
        import pyarrow

        if not self.partition_names or not set(columns) & set(self.partition_names):
            return table
        values = self.partitions[number]
        arrays = [
            pyarrow.array([values[name]] * table.num_rows, pyarrow.string())
            if name in self.partition_names
            else table.column(name)
            for name in columns
        ]
        return pyarrow.table(arrays, names=list(columns))


def hive_partitions(folder: Path, files: Sequence[Path]) -> list[dict[str, str | None]]:
    """Each file's values of the `key=value` folders between `folder` and it, as Spark's
    `partitionBy` writes them and pyarrow's and Ray's hive partitioning read them: texts, unescaped
    as Spark escapes them, `__HIVE_DEFAULT_PARTITION__` (Spark's null) as None; a key that a
    file's folders lack is None for it."""
    from urllib.parse import unquote

    found = []
    for file in files:
        parts = [part.split("=", 1) for part in file.relative_to(folder).parts[:-1] if "=" in part]
        found.append(
            {unquote(key): None if value == "__HIVE_DEFAULT_PARTITION__" else unquote(value) for key, value in parts}
        )
    keys = list(dict.fromkeys(key for values in found for key in values))
    return [{key: values.get(key) for key in keys} for values in found]


def _dictionary_leaves(handle: Any) -> dict[str, list[str]]:
    """{column: its leaf paths} for the list<string> columns the file stores dictionary-encoded
    in every row group: read so, their strings are decoded once per batch."""
    import pyarrow

    metadata, schema = handle.metadata, handle.schema_arrow
    found: dict[str, list[str]] = {}
    for index in range(metadata.num_columns):
        path = metadata.schema.column(index).path
        name = path.split(".", 1)[0]
        kind = schema.field(name).type if name in schema.names else None
        if kind is None or not pyarrow.types.is_list(kind) or not pyarrow.types.is_string(kind.value_type):
            continue
        encoded = all(
            any("DICTIONARY" in encoding for encoding in metadata.row_group(group).column(index).encodings)
            for group in range(metadata.num_row_groups)
        )
        if encoded and metadata.num_row_groups:
            found.setdefault(name, []).append(path)
    return found


class SourceColumn(LazyColumn):
    """A column of a `ParquetSource` (some of its rows, with `rows`), read only where it is
    used: `parallel.compute` streams it a batch at a time; anything else reads it whole,
    once, converting a batch at a time (`to_pylist`)."""

    def __init__(self, source: ParquetSource, name: str, rows: Any = None) -> None:
        self.source, self.name = source, name
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self._values: list[Any] | None = None

    def __len__(self) -> int:
        return self.source.num_rows if self.rows is None else len(self.rows)

    @property
    def in_order(self) -> bool:
        """Its rows come in file order (what streaming by row group needs)."""
        return self.rows is None or bool(np.all(self.rows[1:] > self.rows[:-1]))

    def row_numbers(self) -> np.ndarray:
        return np.arange(self.source.num_rows, dtype=np.int64) if self.rows is None else self.rows

    def to_pylist(self) -> list[Any]:
        if self._values is None:
            values: list[Any] = []
            if self.rows is None or self.in_order:
                first, stop = (0, None) if self.rows is None else (int(self.rows[0]), int(self.rows[-1]) + 1)
                for start, table in self.source.batches([self.name], first, stop) if len(self) else ():
                    if self.rows is not None:
                        table = selected(table, self.rows, start)
                    values.extend(batch_values(self.source, table, [self.name])[self.name])
            else:
                whole = SourceColumn(self.source, self.name).to_pylist()
                values = [whole[row] for row in self.rows.tolist()]
            self._values = values
        return self._values

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice) and self._values is None:
            return SourceColumn(self.source, self.name, self.row_numbers()[index])
        return self.to_pylist()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_pylist())

    def text_row(self) -> int | None:
        row = self.source.text_row(self.name)
        if row is None or self.rows is None:
            return row
        positions = np.flatnonzero(self.rows == row)  # (the file's first text, where this column holds it)
        return int(positions[0]) if len(positions) else None

    def take(self, rows: Sequence[int]) -> SourceColumn:
        """The column at `rows` (positions in this column), unread; itself for all its rows in order."""
        positions = np.asarray(rows, dtype=np.int64)
        if len(positions) == len(self) and np.array_equal(positions, np.arange(len(self))):
            return self
        return SourceColumn(self.source, self.name, self.row_numbers()[positions])


def selected(table: Any, rows: np.ndarray, start: int) -> Any:
    """The rows of `table` (whose first row is row `start` of its source) among `rows`
    (increasing row numbers): a slice where they are consecutive, else a take."""
    low, high = np.searchsorted(rows, [start, start + table.num_rows])
    if high == low:
        return table.slice(0, 0)
    first, last = int(rows[low]), int(rows[high - 1])
    if last - first == high - low - 1:
        return table.slice(first - start, high - low)
    return table.take(rows[low:high] - start)


def batch_values(source: ParquetSource, table: Any, shared: Sequence[str] = ()) -> dict[str, list[Any]]:
    """A streamed batch's columns as Python values (`arrow_columns`); list<string> columns in
    `shared` with equal rows as one list object (`columnar.shared_lists`)."""
    import pyarrow.types as types

    def keywords(name: str) -> bool:  # list<string>, the strings dictionary-encoded or not
        kind = table.schema.field(name).type
        if not types.is_list(kind):
            return False
        item = kind.value_type.value_type if types.is_dictionary(kind.value_type) else kind.value_type
        return types.is_string(item)

    shared = [name for name in shared if name in table.column_names and keywords(name)]
    try:
        columns = arrow_columns(table.drop_columns(shared))
        columns.update({name: shared_lists(table.column(name)) for name in shared})
        return {name: columns[name] for name in table.column_names}
    except UnicodeDecodeError:
        raise TableError(source.path, "a text column holds bytes that are not UTF-8; save its texts as UTF-8") from None


def streamed(column: Any) -> bool:
    """`column` is a `SourceColumn` that can be streamed by row group (its rows in file order)."""
    return isinstance(column, SourceColumn) and column.in_order
