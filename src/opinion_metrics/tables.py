"""Reading tables of examples from files: JSONL / JSON / CSV / TSV (optionally .gz), Parquet,
or a `datasets` folder. Shared by the CLI and the Spaces."""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LIST_SEPARATOR = ";"


def _split_cell(value: Any) -> Any:
    """A CSV cell holding a list: "a; b; c" -> ["a", "b", "c"] (empty cell: [])."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(LIST_SEPARATOR) if item.strip()]
    return value


def _parse_numbers(values: list[str], row: int, column: str) -> list[float]:
    try:
        return [float(value) for value in values]
    except ValueError:
        raise ValueError(f"{column}: row {row}: expected numbers separated by '{LIST_SEPARATOR}'") from None


def _open_text(path: Path) -> Any:
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8", newline="")


def load_table(path: Path, list_columns: Sequence[str], number_columns: Sequence[str]) -> dict[str, list[Any]]:
    """Columns of a JSONL / JSON / CSV / TSV file (optionally .gz), a Parquet file, or a
    `datasets` folder saved with `save_to_disk`. In CSV, list cells hold items separated by ';'."""
    if not path.exists():
        raise ValueError(f"no such file or folder: {path}")
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    suffix = suffixes[-1] if suffixes else ""
    if path.is_dir():
        from datasets import load_from_disk

        dataset = load_from_disk(str(path))
        if hasattr(dataset, "keys"):  # a DatasetDict: its first split
            dataset = dataset[next(iter(dataset.keys()))]
        return dataset.to_dict()
    if suffix == ".parquet":
        import pyarrow.parquet as parquet

        return parquet.read_table(path).to_pydict()
    if suffix in (".jsonl", ".json"):
        with _open_text(path) as lines:
            records = json.load(lines) if suffix == ".json" else [json.loads(line) for line in lines if line.strip()]
        if isinstance(records, dict):
            return records
        names = list(dict.fromkeys(name for record in records for name in record))
        return {name: [record.get(name) for record in records] for name in names}
    if suffix in (".csv", ".tsv"):
        with _open_text(path) as lines:
            records = list(csv.DictReader(lines, delimiter="\t" if suffix == ".tsv" else ","))
        table = {name: [record[name] for record in records] for name in (records[0] if records else {})}
        for name in list_columns:
            if name in table:
                table[name] = [_split_cell(value) for value in table[name]]
        for name in number_columns:
            if name in table:
                table[name] = [_parse_numbers(_split_cell(v), row, name) for row, v in enumerate(table[name])]
        return table
    raise ValueError(f"unsupported file {path.name!r}: use .jsonl, .json, .csv, .tsv (or .gz of those), .parquet")


def rating_rows(table: dict[str, list[Any]], aspects: Sequence[str], prefix: str = "") -> list[list[Any]]:
    """Rows of ratings from the columns `prefix + aspect`. Numeric strings (CSV cells) become
    numbers; anything else, 4.5 included, is left for the metric to report, never truncated."""

    def number(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return float(value) if "." in value else int(value)
            except ValueError:
                return value
        return value

    return [[number(value) for value in row] for row in zip(*(table[prefix + aspect] for aspect in aspects))]
