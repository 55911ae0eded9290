"""The table interface every reader gives: `Table` (the columns of a file, the line of each
row) and `TableError` (a file that cannot be read: one line naming the file, the line, and
what was expected).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .arrow import ParquetSource

LIST_SEPARATOR = ";"


LIST_HELP = f'write a list cell as items separated by \'{LIST_SEPARATOR}\' (a; b) or as a JSON list (["a", "b"])'
# The most characters of a value quoted in a message (longer ones are cut, ending in "...").
SHOWN_CHARACTERS = 60


def shortened(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """`text` as a message quotes it: whole up to `limit` characters, else cut to end in "..."."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


SUPPORTED = (
    ".jsonl (.ndjson), .json, .csv, .tsv (or .gz of those), .parquet (or a folder of them), .arrow / .feather, "
    "or a datasets folder"
)


ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")


class TableError(ValueError):
    """A file that cannot be read as a table. `usage` is True when the path itself is the
    mistake (missing, unsupported kind), False when its content is."""

    def __init__(self, path: Path, message: str, line: int | None = None, usage: bool = False) -> None:
        self.path, self.line, self.usage, self.message = Path(path), line, usage, message
        super().__init__(f"{self.path.name}" + (f", line {line}" if line else "") + f": {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # from a worker process, whole
        return type(self), (self.path, self.message, self.line, self.usage)


class Table(NamedTuple):
    """The columns of a file, and the 1-based line of each row where the format has lines;
    for some of a file's rows (one system's), `rows` holds their 0-based rows in the file."""

    path: Path
    columns: dict[str, list[Any]]
    lines: list[int] | None
    rows: list[int] | None = None
    source: ParquetSource | None = None  # a Parquet file or folder: where its rows are

    def location(self, row: int) -> str:
        """Where row `row` (0-based) is in the file, as its user sees it: 'line 3 of x.jsonl'."""
        if self.lines is not None:
            place = f"line {self.lines[row]}"
        else:
            number = self.rows[row] if self.rows is not None else row
            if self.source is not None:
                return self.source.location(number)
            place = f"row {number + 1}"
        return f"{place} of {self.path.name}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    for types, name in ((str, "a string"), ((int, float), "a number"), (list, "a list"), (dict, "an object")):
        if isinstance(value, types):
            return f"{name} ({json.dumps(value)[:40]})" if not isinstance(value, (list, dict)) else name
    return type(value).__name__


def _is_named(name: str, wanted: Sequence[str]) -> bool:
    """`name` is one of `wanted`, where a wanted name with '*' is a pattern ('keywords_*'): '*'
    stands for any text, every other character for itself ('kw[1]_*' is no character class)."""
    return any(
        re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), name, re.DOTALL)
        if "*" in pattern
        else name == pattern
        for pattern in wanted
    )
