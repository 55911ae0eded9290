"""`read_table`: a file or folder of any supported kind as one `Table`, its kind chosen by its
suffix (or its content, for a folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .arrow import ParquetSource, _datasets_folder, _read_arrow, _read_folder, _read_parquet, parquet_files
from .delimited import _list_cell, _read_delimited, _tuple_cell
from .json_files import _read_json, _read_jsonl
from .rows import paused_gc
from .table import ARROW_SUFFIXES, SUPPORTED, Table, TableError, _is_named


def check_column_lengths(path: Path, columns: dict[str, list[Any]]) -> None:
    """Every column holds one value per row: else a `TableError` naming the columns and lengths."""
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name!r} has {n}" for name, n in lengths.items())
        raise TableError(path, f"columns of different lengths: {described}; each column needs one value per row")


def _read(
    path: Path,
    list_columns: Sequence[str],
    number_columns: Sequence[str],
    lazy: bool,
    tuple_columns: Sequence[str] = (),
) -> tuple[dict[str, Any], list[int] | None, ParquetSource | None]:
    """The columns, each row's line where the format has lines, and a Parquet file's or
    folder's source (which names a row's file)."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    suffix = suffixes[-1] if suffixes else ""
    lines: list[int] | None = None
    if path.is_dir() and not _datasets_folder(path) and parquet_files(path):
        return _parquet(path, lazy)
    elif path.is_dir():
        columns = _read_folder(path)
    elif suffix in (".parquet", ".parq"):
        return _parquet(path, lazy)
    elif suffix in ARROW_SUFFIXES:
        columns = _read_arrow(path, lazy)
    elif suffix in (".jsonl", ".ndjson"):
        columns, lines = _read_jsonl(path)
    elif suffix == ".json":
        columns, lines = _read_json(path)
    elif suffix in (".csv", ".tsv"):
        columns, lines, delimiter = _read_delimited(path, "\t" if suffix == ".tsv" else ",")
        for name, values in columns.items():
            numbers = _is_named(name, number_columns)
            if _is_named(name, tuple_columns):
                columns[name] = [_tuple_cell(path, v, line, name) for v, line in zip(values, lines)]
            elif numbers or _is_named(name, list_columns):
                columns[name] = [
                    _list_cell(path, v, line, name, numbers, delimiter == ";") for v, line in zip(values, lines)
                ]
    else:
        raise TableError(path, f"unsupported kind of file; use {SUPPORTED}", usage=True)
    return columns, lines, None


def _parquet(path: Path, lazy: bool) -> tuple[dict[str, Any], None, ParquetSource]:
    columns, source = _read_parquet(path, lazy)
    return columns, None, source


def read_table(
    path: Path,
    list_columns: Sequence[str] = (),
    number_columns: Sequence[str] = (),
    lazy: bool = False,
    tuple_columns: Sequence[str] = (),
) -> Table:
    """The columns of a file, with the line of each row where the format has lines. In CSV / TSV,
    the `list_columns` and `number_columns` (names, or patterns with '*') hold items separated by ';',
    and the `tuple_columns` lists of sentiment tuples written as JSON.
    With `lazy`, Parquet and Arrow columns are `ArrowColumn`s, converted where they are read."""
    path = Path(path)
    if str(path) == "-":
        raise TableError(path, "standard input is not read; save the data to a file and give its name", usage=True)
    if not path.exists():
        raise TableError(path, "no such file or folder", usage=True)
    if not path.is_file() and not path.is_dir():  # read twice (gzip check, layout), a pipe would hang
        message = "not a regular file (a pipe or a device); save the data to a file and give its name"
        raise TableError(path, message, usage=True)
    try:
        with paused_gc():
            columns, lines, source = _read(path, list_columns, number_columns, lazy, tuple_columns)
    except OSError as error:
        raise TableError(path, f"cannot read it ({error.strerror or error})", usage=True) from None
    check_column_lengths(path, columns)
    return Table(path, columns, lines, source=source)


def load_table(path: Path, list_columns: Sequence[str], number_columns: Sequence[str]) -> dict[str, list[Any]]:
    """Columns of a JSONL / JSON / CSV / TSV file (optionally .gz), a Parquet file, or a
    `datasets` folder saved with `save_to_disk`. In CSV, list cells hold items separated by ';'."""
    return read_table(path, list_columns, number_columns).columns
