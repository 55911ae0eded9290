"""Reading tables of examples from files: JSONL / JSON / CSV / TSV (optionally gzip-compressed),
Parquet, or a `datasets` folder. Shared by the CLI and the Spaces.

A file that cannot be read raises `TableError`: one line naming the file, the line (1-based, as
editors count) where known, and what was expected."""

from __future__ import annotations

import ast
import bisect
import codecs
import csv
import gzip
import io
import json
import re
import tokenize
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .columnar import ArrowColumn, paused_gc, python_values, shared_lists

LIST_SEPARATOR = ";"
LIST_HELP = f'write a list cell as items separated by \'{LIST_SEPARATOR}\' (a; b) or as a JSON list (["a", "b"])'
SUPPORTED = (
    ".jsonl (.ndjson), .json, .csv, .tsv (or .gz of those), .parquet (or a folder of them), .arrow / .feather, "
    "or a datasets folder"
)
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Where JSON can write one (CSV, Parquet and Arrow texts are decoded strictly and cannot hold one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# The inside of numpy's repr of a 1-d array: quoted strings or numbers separated by blanks only.
_NUMPY_TEXT = re.compile(
    r"""\s*+(?:'[^'\\]*+'|"[^"\\]*+"|[-+]?+(?:nan|inf)|[-+.\deE]++)(?:\s++(?:'[^'\\]*+'|"[^"\\]*+"|[-+]?+(?:nan|inf)|[-+.\deE]++))++\s*+"""
)
_ADJACENT_QUOTES = re.compile("['\"]\\s*['\"]")
_MAX_FIELD = 2**31 - 1  # csv's default limit (128 KB) refuses a long review; the file's size bounds a field


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


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of a UTF-8 text file, gzip-compressed or not; a leading BOM is dropped."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
    if path.suffix.lower() == ".gz" and not compressed:
        raise TableError(path, "not a gzip file, although its name ends in .gz")
    number = 0
    try:
        with gzip.open(path, "rb") if compressed else open(path, "rb") as handle:
            for number, data in enumerate(handle, 1):
                if number == 1 and data.startswith(codecs.BOM_UTF8):
                    data = data[len(codecs.BOM_UTF8) :]
                elif number == 1 and data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                    raise TableError(path, "UTF-16 text; save the file as UTF-8", number)
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError as error:
                    byte = data[error.start]
                    raise TableError(
                        path, f"not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8", number
                    ) from None
                if "\x00" in line:
                    utf16 = line.count("\x00") * 3 >= len(line)  # every other byte: UTF-16 without a BOM
                    found = "UTF-16 text without a BOM; save the file as UTF-8" if utf16 else "binary data (a NUL byte)"
                    raise TableError(path, f"{found}; expected a text file", number)
                yield number, line
    except (EOFError, OSError, zlib.error) as error:
        if not compressed:
            raise
        raise TableError(path, f"corrupt gzip data ({error}); expected a complete .gz file", number + 1) from None


class _DuplicateKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice is refused (json keeps the last value silently)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _DuplicateKey(f"key {twice!r} appears twice in one object; keep one")
    return found


_TOO_DEEP = "JSON nested too deeply (thousands of brackets); a row holds lists of keywords, not deeper structures"


def _parse_json(path: Path, text: str) -> tuple[Any, list[int] | None]:
    """The parsed JSON, and for an array the line on which each item starts."""
    position = _JSON_SPACE.match(text).end()
    if not text.startswith("[", position):
        try:
            return json.loads(text, object_pairs_hook=_object), None
        except _DuplicateKey as error:
            raise TableError(path, str(error), 1) from None
        except json.JSONDecodeError as error:
            raise TableError(path, f"invalid JSON ({error.msg}, column {error.colno})", error.lineno) from None
        except RecursionError:
            raise TableError(path, _TOO_DEEP, 1) from None
    decoder, items, lines, line, counted = json.JSONDecoder(object_pairs_hook=_object), [], [], 1, 0
    position = _JSON_SPACE.match(text, position + 1).end()
    done = text.startswith("]", position)
    if done:
        position += 1
    while not done:
        line, counted = line + text.count("\n", counted, position), position
        try:
            item, end = decoder.raw_decode(text, position)
        except _DuplicateKey as error:
            raise TableError(path, str(error), line) from None
        except json.JSONDecodeError as error:
            raise TableError(path, f"invalid JSON ({error.msg}, column {error.colno})", error.lineno) from None
        except RecursionError:
            raise TableError(path, _TOO_DEEP, line) from None
        items.append(item)
        lines.append(line)
        position = _JSON_SPACE.match(text, end).end()
        if not text.startswith((",", "]"), position):
            where = text.count("\n", 0, position) + 1
            raise TableError(path, "invalid JSON (expected ',' or ']' after an item of the list)", where)
        done = text.startswith("]", position)
        position = _JSON_SPACE.match(text, position + 1).end()
    if text[position:].strip():
        raise TableError(path, "invalid JSON (extra data after the list)", text.count("\n", 0, position) + 1)
    return items, lines


def _records_to_columns(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    names = list(dict.fromkeys(name for record in records for name in record))
    return {name: [record.get(name) for record in records] for name in names}


def _read_jsonl(path: Path) -> tuple[dict[str, list[Any]], list[int]]:
    records, lines, escaped = [], [], []  # escaped: the rows whose line may hold a surrogate
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        if _SURROGATE_ESCAPE.search(line):
            escaped.append(len(records))
        try:
            record = json.loads(line, object_pairs_hook=_object)
        except _DuplicateKey as error:
            raise TableError(path, str(error), number) from None
        except json.JSONDecodeError as error:
            message = f"invalid JSON ({error.msg}, column {error.colno}); expected one JSON object per line"
            raise TableError(path, message + _array_hint(records, line), number) from None
        except RecursionError:
            raise TableError(path, _TOO_DEEP, number) from None
        if not isinstance(record, dict):
            message = f"expected a JSON object (one row per line), got {_kind(record)}"
            raise TableError(path, message + _array_hint(records, line), number)
        records.append(record)
        lines.append(number)
    columns = _records_to_columns(records)
    if escaped:
        suspects = {name: [values[row] for row in escaped] for name, values in columns.items()}
        _check_texts(path, suspects, [lines[row] for row in escaped])
    return columns, lines


def _array_hint(records: list[Any], line: str) -> str:
    """On the first row of a JSON Lines file that is one JSON array: say so."""
    return "; the file is one JSON array: name the file .json" if not records and line.lstrip().startswith("[") else ""


def _json_lines(text: str) -> bool:
    """`text` is JSON Lines (an object, then another on a later line), whatever the file's name."""
    position = _JSON_SPACE.match(text).end()
    if not text.startswith("{", position):
        return False
    try:
        _, end = json.JSONDecoder().raw_decode(text, position)
    except (ValueError, RecursionError):
        return False
    after = _JSON_SPACE.match(text, end).end()
    return "\n" in text[end:after] and text.startswith("{", after)


def _read_json(path: Path) -> tuple[dict[str, list[Any]], list[int] | None]:
    text = "".join(line for _, line in _text_lines(path))
    if _json_lines(text):  # pandas' to_json(lines=True) into a .json file
        return _read_jsonl(path)
    value, lines = _parse_json(path, text)
    columns, lines = _json_columns(path, value, lines)
    if _SURROGATE_ESCAPE.search(text):
        _check_texts(path, columns, lines)
    return columns, lines


_PANDAS_HINT = "; from pandas, write df.to_json(path, orient='records', lines=True)"
_ROW_LABEL = re.compile(r"0|[1-9][0-9]*")


def _pandas_layout(path: Path, value: dict[str, Any]) -> dict[str, list[Any]] | None:
    """The columns of a JSON object that pandas' `to_json` wrote with orient "split"
    ({columns, index, data}), "table" ({schema, data}), "columns" (its default: {column:
    {row: value}}) or "index" ({row: {column: value}}); None for any other object."""
    keys = set(value)
    if keys in ({"columns", "data"}, {"columns", "index", "data"}) and isinstance(value["data"], list):
        names = value["columns"]
        data_rows = all(isinstance(item, list) for item in value["data"])
        if isinstance(names, list) and all(isinstance(name, str) for name in names) and data_rows:
            for row, item in enumerate(value["data"], 1):
                if len(item) != len(names):
                    message = f"row {row} of 'data' is not a list of {len(names)} values, one per column"
                    raise TableError(path, f"a pandas 'split' layout, but {message}")
            return {name: [item[i] for item in value["data"]] for i, name in enumerate(names)}
    records = value.get("data") if keys == {"schema", "data"} and isinstance(value["schema"], dict) else None
    if isinstance(records, list) and all(isinstance(item, dict) for item in records):
        columns = _records_to_columns(records)
        if value["schema"].get("primaryKey") == ["index"]:  # pandas' unnamed row index, not a column
            columns.pop("index", None)
        return columns
    if not value or not all(isinstance(inner, dict) for inner in value.values()):  # an object of columns
        return None
    by_index = all(_ROW_LABEL.fullmatch(key) for key in value) and not all(
        _ROW_LABEL.fullmatch(key) for inner in value.values() for key in inner
    )
    if by_index:  # {row: {column: value}}
        return _records_to_columns(list(value.values()))
    labels = list(next(iter(value.values())))
    for name, inner in value.items():  # {column: {row: value}}: every column has the same rows
        if list(inner) != labels:
            message = f"column {name!r} has other row labels than column {next(iter(value))!r}"
            raise TableError(path, f"a pandas 'columns' layout, but {message}{_PANDAS_HINT}")
    return {name: list(inner.values()) for name, inner in value.items()}


def _json_columns(path: Path, value: Any, lines: list[int] | None) -> tuple[dict[str, list[Any]], list[int] | None]:
    """The columns of a parsed JSON file: a list of row objects, an object of columns, or one of
    pandas' object layouts (`_pandas_layout`)."""
    expected = "expected a list of row objects or an object mapping each column to a list"
    if lines is not None:
        for item, line in zip(value, lines):
            if not isinstance(item, dict):
                hint = " (pandas' orient='values' has no column names)" + _PANDAS_HINT if isinstance(item, list) else ""
                raise TableError(path, f"{expected}; got a list holding {_kind(item)}{hint}", line)
        return _records_to_columns(value), lines
    if not isinstance(value, dict):
        raise TableError(path, f"{expected}, got {_kind(value)}", 1)
    layout = _pandas_layout(path, value)
    if layout is not None:
        return layout, None
    for name, column in value.items():
        if not isinstance(column, list):
            hint = _PANDAS_HINT if isinstance(column, dict) else ""
            raise TableError(path, f"{expected}; column {name!r} is {_kind(column)}, not a list{hint}")
    return value, None


def _header_name(cell: str) -> str:
    """A CSV header cell as its column's name: composed (NFC, as typed), without blanks or
    invisible format characters around it (a zero-width space, a direction mark, a BOM)."""
    start, stop = 0, len(cell)
    while start < stop and (cell[start].isspace() or unicodedata.category(cell[start]) == "Cf"):
        start += 1
    while stop > start and (cell[stop - 1].isspace() or unicodedata.category(cell[stop - 1]) == "Cf"):
        stop -= 1
    return unicodedata.normalize("NFC", cell[start:stop])


class _OtherSeparator(Exception):
    """The header is separated by another character than the file's name says (`args[0]`)."""


def _read_delimited(path: Path, delimiter: str) -> tuple[dict[str, list[Any]], list[int], str]:
    """The columns of a CSV / TSV, the line of each row, and the separator: the one its name
    says, else the one its header uses (';' or a tab: what Excel writes in many countries)."""
    try:
        return (*_read_separated(path, delimiter), delimiter)
    except _OtherSeparator as other:
        return (*_read_separated(path, other.args[0]), other.args[0])


def _read_separated(path: Path, delimiter: str) -> tuple[dict[str, list[Any]], list[int]]:
    csv.field_size_limit(max(csv.field_size_limit(), _MAX_FIELD))  # a long review is one field
    reader = csv.reader((line for _, line in _text_lines(path)), delimiter=delimiter)
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    start = 1
    try:
        for row in reader:
            if row:
                if header is None:
                    header = [_header_name(name) for name in row]  # "predictions, references": no ' references'
                    other = next((c for c in ";\t," if c != delimiter and len(row) == 1 and c in row[0]), None)
                    if other:
                        raise _OtherSeparator(other)
                    repeated = sorted({name for name in header if name and header.count(name) > 1})
                    if repeated:
                        raise TableError(path, f"column {repeated[0]!r} appears twice in the header", start)
                elif len(header) > 1 and [_header_name(cell) for cell in row] == header:
                    message = "this row repeats the header (files joined one after another?); keep the first header"
                    raise TableError(path, message, start)
                elif len(row) != len(header):
                    message = (
                        f"{len(row)} fields, but the header has {len(header)}; list cells separate items with "
                        f"'{LIST_SEPARATOR}', and a cell holding '{delimiter}' must be quoted"
                    )
                    raise TableError(path, message.replace("'\t'", "a tab"), start)
                else:
                    rows.append(row)
                    lines.append(start)
            start = reader.line_num + 1
    except csv.Error as error:
        message = str(error).split(" - ")[0]
        if "new-line character" in message:  # lines that end in a lone \r (old Mac files)
            message += "; quote such a cell, or end lines with \\n or \\r\\n"
        raise TableError(path, f"not a readable CSV ({message})", reader.line_num) from None
    unnamed = [i for i, name in enumerate(header or []) if not name]
    filled = [i for i in unnamed if any(row[i].strip() for row in rows)]  # Excel writes ",," for emptied columns
    if len(unnamed) > 1 and len(filled) > 1:
        raise TableError(path, f"{len(filled)} columns without a name hold values; name them in the header", 1)
    kept = [i for i, name in enumerate(header or []) if name or i in filled or len(unnamed) == 1]
    columns = {header[i]: [row[i] for row in rows] for i in kept}
    return columns, lines


def _is_named(name: str, wanted: Sequence[str]) -> bool:
    """`name` is one of `wanted`, where a wanted name with '*' is a pattern ('keywords_*'): '*'
    stands for any text, every other character for itself ('kw[1]_*' is no character class)."""
    return any(
        re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), name, re.DOTALL)
        if "*" in pattern
        else name == pattern
        for pattern in wanted
    )


_NUMPY_SCALARS = {"float64", "float32", "float16", "int64", "int32", "int16", "int8", "str_"}


def _numpy_scalar(node: ast.expr) -> bool:
    """`node` is `np.float64(<literal>)` (or another numpy scalar type), as numpy 2 prints its scalars."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("np", "numpy")
        and node.func.attr in _NUMPY_SCALARS
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], (ast.Constant, ast.UnaryOp))
    )


def _literal_items(text: str) -> list[Any] | None:
    """The items of a flat list of strings / numbers written as JSON ('["a", "b"]') or as Python
    ("['a', 'b']", "('a', 'b')": what pandas' `to_csv` writes for list columns); else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        return value if isinstance(value, list) and all(type(v) in (str, int, float) for v in value) else None
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(tree, (ast.List, ast.Tuple)):
        return None
    items = []
    for node in tree.elts:
        sign = 1
        if _numpy_scalar(node):  # numpy 2 writes a list of its scalars as [np.float64(0.5), np.str_('a')]
            node = node.args[0]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            sign, node = (-1 if isinstance(node.op, ast.USub) else 1), node.operand
            if not isinstance(node, ast.Constant) or isinstance(node.value, str):
                return None
        if not isinstance(node, ast.Constant) or type(node.value) not in (str, int, float):
            return None
        items.append(node.value * sign if sign < 0 else node.value)
    if not _ADJACENT_QUOTES.search(text):  # no two string literals side by side: nothing concatenated
        return items
    try:  # 'a' 'b' is one string to Python: numpy's "['a' 'b']" must not read as ['ab']
        strings = sum(token.type == tokenize.STRING for token in tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return items if strings == sum(isinstance(item, str) for item in items) else None


def _unordered(text: str) -> str | None:
    """What a cell holds when it is a Python set or dict literal, or a JSON object ("{'a', 'b'}":
    what pandas' `to_csv` writes for a column of sets), else None."""
    if text == "set()":
        return "a Python set"
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if isinstance(tree, ast.Set) and all(isinstance(node, ast.Constant) for node in tree.elts):
        return "a Python set"
    if isinstance(tree, ast.Dict) and all(isinstance(node, ast.Constant) for node in tree.keys):
        return "an object (a dict)"
    return None


def _list_cell(path: Path, value: Any, line: int, column: str, numbers: bool, decimal_comma: bool = False) -> Any:
    """A CSV cell holding a list: "a; b; c", a JSON or Python list literal, or empty ([]). With
    `decimal_comma` (a file separated by ';'), numbers may be written 0,5."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    unordered = _unordered(text)
    if unordered is not None:
        shown = text if len(text) <= 60 else text[:57] + "..."
        message = f"column {column!r}: {shown!r} is {unordered}, not a list (a set has no order); {LIST_HELP}"
        raise TableError(path, message, line)
    items = None
    if text.startswith("[") and text.endswith("]") or text.startswith("(") and text.endswith(")"):
        items = _literal_items(text)
        if items is not None and "\\" in text:  # an escape such as \\ud83d can write half of an emoji
            broken = next((item for item in items if isinstance(item, str) and _SURROGATE.search(item)), None)
            if broken is not None:
                message = (
                    f"column {column!r}: {broken!r} holds a lone surrogate (half of an emoji: an escape like \\ud83d)"
                )
                raise TableError(path, message, line)
        if items is None and text.startswith("["):
            shown = text if len(text) <= 60 else text[:57] + "..."
            message = f"column {column!r}: {shown!r} looks like a list but is not a flat list of strings or numbers"
            if _NUMPY_TEXT.fullmatch(text[1:-1]):  # what pandas' to_csv writes for a cell holding a numpy array
                message += " (a numpy array's text, without commas: write df[column].map(list) to CSV, or use Parquet)"
            raise TableError(path, f"{message}; {LIST_HELP}", line)
    if items is None:
        items = [item.strip() for item in text.split(LIST_SEPARATOR) if item.strip()]
        if numbers:
            try:
                return [float(item.replace(",", ".") if decimal_comma else item) for item in items]
            except ValueError:
                message = f"column {column!r}: expected numbers separated by '{LIST_SEPARATOR}', got {text!r}"
                raise TableError(path, message, line) from None
    elif numbers and not all(isinstance(item, (int, float)) for item in items):
        message = (
            f"column {column!r}: expected a list of numbers, got {text if len(text) <= 60 else text[:57] + '...'!r}"
        )
        raise TableError(path, message, line)
    return items


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


def _read_parquet(path: Path, lazy: bool) -> dict[str, Any]:
    """A Parquet file, or a folder of them, as columns: `SourceColumn`s (read where they are
    used, a batch at a time) with `lazy`, else Python lists read a batch at a time (a column
    over 2 GiB, such as a gold list on every row, never has to fit one Arrow array)."""
    source = ParquetSource(path)
    columns = {name: SourceColumn(source, name) for name in source.names}
    return columns if lazy else {name: column.to_pylist() for name, column in columns.items()}


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
        self.num_rows = sum(self.sizes)

    def location(self, row: int) -> str:
        """Where row `row` (0-based, over every file) is: 'row 3 of x.parquet'; in a folder,
        also the file and the row there."""
        if not self.path.is_dir():
            return f"row {row + 1} of {self.path.name}"
        index = max(bisect.bisect_right([start for _, _, start in self.groups], row) - 1, 0)
        number = self.groups[index][0] if self.groups else 0
        first = next((start for file, _, start in self.groups if file == number), 0)
        return f"row {row + 1} of {self.path.name} ({self.files[number].name}, row {row - first + 1})"

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
                for batch in opened[1].iter_batches(BATCH_ROWS, row_groups=[group], columns=list(columns)):
                    low, high = max(start, position), min(stop, position + batch.num_rows)
                    if low < high:
                        table = pyarrow.Table.from_batches([batch])
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


class SourceColumn(Sequence):
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


def _check_texts(path: Path, columns: dict[str, list[Any]], lines: list[int] | None) -> None:
    """No string holds a lone surrogate ("\\ud83d": half of an emoji, from a truncated text or a
    JSON escape): it cannot be encoded, so it would crash whatever prints or hashes it later."""

    def bad(value: Any) -> str | None:
        """The first string inside `value` holding a surrogate (a loop: values may nest ~1000 deep)."""
        pending = [value]
        while pending:
            value = pending.pop()
            if isinstance(value, str):
                if _SURROGATE.search(value):
                    return value
            elif isinstance(value, (list, tuple)):
                pending.extend(reversed(value))
            elif isinstance(value, dict):
                pending.extend(reversed([*value, *value.values()]))
        return None

    def refuse(text: str, where: str, line: int | None) -> None:
        at = _SURROGATE.search(text).start()
        shown = repr(text[max(0, at - 20) : at + 20])
        raise TableError(path, f"{where}: {shown} holds a lone surrogate (half of an emoji, a truncated text?)", line)

    for name, values in columns.items():
        if bad(name):
            refuse(name, "a column name", None)
        for row, value in enumerate(values):
            found = bad(value)
            if found is not None:
                where = f"column {name!r}" if lines is not None else f"row {row + 1}, column {name!r}"
                refuse(found, where, lines[row] if lines is not None else None)


def check_column_lengths(path: Path, columns: dict[str, list[Any]]) -> None:
    """Every column holds one value per row: else a `TableError` naming the columns and lengths."""
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name!r} has {n}" for name, n in lengths.items())
        raise TableError(path, f"columns of different lengths: {described}; each column needs one value per row")


def delimited(path: Path) -> bool:
    """`path` is a CSV or TSV file (optionally .gz): its cells are texts, never numbers."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    return not path.is_dir() and bool(suffixes) and suffixes[-1] in (".csv", ".tsv")


def _read(
    path: Path, list_columns: Sequence[str], number_columns: Sequence[str], lazy: bool
) -> tuple[dict[str, Any], list[int] | None]:
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    suffix = suffixes[-1] if suffixes else ""
    lines: list[int] | None = None
    if path.is_dir() and not _datasets_folder(path) and parquet_files(path):
        columns = _read_parquet(path, lazy)
    elif path.is_dir():
        columns = _read_folder(path)
    elif suffix in (".parquet", ".parq"):
        columns = _read_parquet(path, lazy)
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
            if numbers or _is_named(name, list_columns):
                columns[name] = [
                    _list_cell(path, v, line, name, numbers, delimiter == ";") for v, line in zip(values, lines)
                ]
    else:
        raise TableError(path, f"unsupported kind of file; use {SUPPORTED}", usage=True)
    return columns, lines


def read_table(
    path: Path, list_columns: Sequence[str] = (), number_columns: Sequence[str] = (), lazy: bool = False
) -> Table:
    """The columns of a file, with the line of each row where the format has lines. In CSV / TSV,
    the `list_columns` and `number_columns` (names, or patterns with '*') hold items separated by ';'.
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
            columns, lines = _read(path, list_columns, number_columns, lazy)
    except OSError as error:
        raise TableError(path, f"cannot read it ({error.strerror or error})", usage=True) from None
    check_column_lengths(path, columns)
    source = next((column.source for column in columns.values() if isinstance(column, SourceColumn)), None)
    return Table(path, columns, lines, source=source)


def load_table(path: Path, list_columns: Sequence[str], number_columns: Sequence[str]) -> dict[str, list[Any]]:
    """Columns of a JSONL / JSON / CSV / TSV file (optionally .gz), a Parquet file, or a
    `datasets` folder saved with `save_to_disk`. In CSV, list cells hold items separated by ';'."""
    return read_table(path, list_columns, number_columns).columns


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


ID_COLUMNS = ("review_id", "id")  # a row's example across systems (any case), when none is named


def id_column(columns: Mapping[str, Any]) -> str | None:
    """The column identifying a row's example across systems: the first of `ID_COLUMNS` there,
    in any case ("ID", "Review_ID"), else None (rows are then paired by position)."""
    return next((name for wanted in ID_COLUMNS for name in columns if name.lower() == wanted), None)


class Rows(NamedTuple):
    """Some rows (0-based) of a table: one system's examples."""

    table: Table
    rows: list[int]


def pairing(column: str | None, what: str) -> str:
    """How examples are paired, for messages."""
    return (
        f"examples are paired by {column}" if column else f"examples are paired by position within each {what}'s rows"
    )


def pair_rows(systems: Mapping[str, Rows], base: str, column: str | None, what: str) -> dict[str, list[int]]:
    """Each system's rows in the order of the `base` system's, matched by the ids of `column`
    (a string or an integer; each id once per system and the same ids in every system);
    with no `column`, as they are (paired by position). `what` names a system in messages
    ("model": "model 'A'")."""
    if column is None:
        return {name: list(rows.rows) for name, rows in systems.items()}

    def rows_by_id(name: str) -> dict[Any, int]:
        table, rows = systems[name]
        ids = table.columns[column]
        found: dict[Any, int] = {}
        for row in rows:
            key = ids[row]
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise ValueError(f"{column}: {table.location(row)} must be a string or an integer, got {key!r}")
            if found.setdefault(key, row) != row:
                where = f"{table.location(found[key])} and {table.location(row)}"
                raise ValueError(
                    f"{column} {key!r} appears twice for {what} {name!r} ({where}); "
                    f"systems are paired by {column}: keep one row per {column} and system"
                )
        return found

    base_rows = rows_by_id(base)
    paired = {}
    for name in systems:
        found = rows_by_id(name)
        for one, other in ((base_rows, found), (found, base_rows)):
            lone = next((key for key in one if key not in other), None)
            if lone is not None:
                has, lacks = (base, name) if one is base_rows else (name, base)
                place = systems[has].table.location(one[lone])
                raise ValueError(
                    f"cannot compare {what} {name!r} with {base!r}: {column} {lone!r} ({place}) has no row "
                    f"for {what} {lacks!r}, only for {has!r}; systems are paired by {column}"
                )
        paired[name] = [found[key] for key in base_rows]
    return paired


def check_paired_texts(
    a: Rows, b: Rows, texts: str, systems: tuple[str, str], what: str, column: str | None = None
) -> None:
    """Paired rows (`pair_rows`) of systems a and b must hold the same review text in the
    column `texts` where both tables have it; rows of different counts are left to the caller."""
    texts_a, texts_b = a.table.columns.get(texts), b.table.columns.get(texts)
    if texts_a is None or texts_b is None or len(a.rows) != len(b.rows):
        return
    row_a, row_b = next(((x, y) for x, y in zip(a.rows, b.rows) if texts_a[x] != texts_b[y]), (None, None))
    if row_a is not None:
        raise ValueError(
            f"cannot compare {what} {systems[1]!r} with {systems[0]!r}: their texts differ at "
            f"{b.table.location(row_b)} ({systems[1]!r}) and {a.table.location(row_a)} ({systems[0]!r}); "
            f"{pairing(column, what)}"
        )
