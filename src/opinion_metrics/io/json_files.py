"""JSON and JSON Lines files (optionally gzip-compressed): records of columns, pandas'
layouts, lone surrogates in escaped texts, and duplicate keys refused with their line.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .table import TableError, _kind

_JSON_SPACE = re.compile(r"[ \t\n\r]*")


_SURROGATE = re.compile("[\ud800-\udfff]")


# Where JSON can write one (CSV, Parquet and Arrow texts are decoded strictly and cannot hold one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
