"""CSV and TSV files (optionally gzip-compressed): list cells written as items separated by
';' or as JSON or Python lists, numbers in number columns, and the separator found from the
header.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import tokenize
import unicodedata
from pathlib import Path
from typing import Any

from .json_files import _SURROGATE, _text_lines
from .table import LIST_HELP, LIST_SEPARATOR, TableError, shortened

# The inside of numpy's repr of a 1-d array: quoted strings or numbers separated by blanks only.
_NUMPY_TEXT = re.compile(
    r"""\s*+(?:'[^'\\]*+'|"[^"\\]*+"|[-+]?+(?:nan|inf)|[-+.\deE]++)(?:\s++(?:'[^'\\]*+'|"[^"\\]*+"|[-+]?+(?:nan|inf)|[-+.\deE]++))++\s*+"""
)


_ADJACENT_QUOTES = re.compile("['\"]\\s*['\"]")


_MAX_FIELD = 2**31 - 1  # csv's default limit (128 KB) refuses a long review; the file's size bounds a field


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
        shown = shortened(text)
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
            shown = shortened(text)
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
        message = f"column {column!r}: expected a list of numbers, got {shortened(text)!r}"
        raise TableError(path, message, line)
    return items


def tuple_list(text: str) -> list[Any] | None:
    """Sentiment tuples written as text: a JSON or Python list of lists or objects
    ('[["pizza", "over cooked", "NEG"]]'), or empty (no tuples); None for anything else."""
    text = text.strip()
    if not text:
        return []
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        try:
            found = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            found = None
    if isinstance(found, (list, tuple)) and all(isinstance(item, (list, tuple, dict)) for item in found):
        return list(found)
    return None


def _tuple_cell(path: Path, value: Any, line: int, column: str) -> Any:
    """A CSV cell holding sentiment tuples (`tuple_list`)."""
    if not isinstance(value, str):
        return value
    found = tuple_list(value)
    if found is not None:
        return found
    raise TableError(path, f"column {column!r}: {not_tuples(value)}", line)


def not_tuples(text: str) -> str:
    """Why a text that should hold sentiment tuples is refused, and the fix."""
    example = '[["pizza", "over cooked", "NEG"]]'
    return f"{shortened(text.strip())!r} is not a list of tuples; write them as JSON, such as {example}"


def delimited(path: Path) -> bool:
    """`path` is a CSV or TSV file (optionally .gz): its cells are texts, never numbers."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    return not path.is_dir() and bool(suffixes) and suffixes[-1] in (".csv", ".tsv")
