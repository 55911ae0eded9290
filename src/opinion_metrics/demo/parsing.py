"""The Spaces' inputs: the text boxes (one example per line) and uploaded files, read
within bounded memory. Errors are `ValueError`s that count lines from 1, as the boxes do."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.validation import check_same_length
from ..families import registry as declared
from ..families.aspect_sentiment_score import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS
from ..io.arrow import check_unique_names
from ..io.column_names import list_columns, number_columns, tuple_columns
from ..io.delimited import not_tuples, tuple_list
from ..io.pairing import rating_rows
from ..io.read import read_table
from ..io.table import Table

KEYWORD_SEPARATOR = ";"
# "[tfidf] keyword; keyword": a typed line of one system (every line names its system, or none does).
SYSTEM_PREFIX = re.compile(r"^\s*\[([^\[\]]+)\]\s*")
# The columns holding a row's predicted ratings in an aspect upload: PREDICTION_PREFIX + aspect.
PREDICTION_PREFIX = "pred_"
# What a free Space (2 vCPU, 16 GB) handles in a few seconds per request.
MAX_UPLOAD_MB = 10
MAX_EXPANDED_MB = 50
UPLOAD_TYPES = [".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".parquet", ".gz"]
UPLOAD_LIMITS = f"up to {MAX_UPLOAD_MB} MB, {MAX_EXPANDED_MB} MB once decompressed"
# The tourism data's Vietnamese column names, read as the default English aspects.
ASPECT_ALIASES = dict(zip(DEFAULT_ASPECTS, VIETNAMESE_COLUMNS))
# The characters of a score in "keyword (0.8)" (a decimal number, no nan / inf / underscores).
_NUMBER_CHARACTERS = frozenset("0123456789+-.eE")
_SURROGATE = re.compile("[\ud800-\udfff]")
_INTEGER = re.compile(r"[+-]?[0-9]+")
# A column naming the system of each row of an upload (several systems' predictions in one file).
SYSTEM_COLUMNS = ("model", "system")
_CHUNK = 1 << 20
# Parquet uploads: at most this many values (rows, list items), each counted as _VALUE_BYTES.
MAX_VALUES = 5_000_000
_VALUE_BYTES = 8


def lines(text: str | Sequence[str] | None, name: str = "text") -> list[str]:
    """The lines of a text box, without trailing empty lines (given as a list, one system's lines
    of a shared box: all kept, an empty last example too); a lone surrogate (half of an emoji,
    from a truncated paste) is refused, naming its line."""
    if isinstance(text, (list, tuple)):
        found = list(text)
    else:
        found = (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
        while found and not found[-1].strip():
            found.pop()
    number = next((i for i, line in enumerate(found, 1) if _SURROGATE.search(line)), None)
    if number is not None:
        line = found[number - 1]
        at = _SURROGATE.search(line).start()
        shown = repr(line[max(0, at - 20) : at + 20])
        raise ValueError(f"{name}, line {number}: {shown} holds a lone surrogate (half of an emoji, a truncated text?)")
    return found


def system_prefix(line: str, tuples: bool = False) -> re.Match[str] | None:
    """The "[system]" prefix of a typed predictions line, or None. For the tuple family (`tuples`)
    a line of tuples is none: one whose bracketed head is quoted (a tuple without its outer
    brackets, '["pizza", "cold", "NEG"]'), or that is JSON or a list of tuples as a whole."""
    match = SYSTEM_PREFIX.match(line)
    if match is None or not tuples:
        return match
    if match[1].strip()[:1] in ('"', "'") or tuple_list(line) is not None:
        return None
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return match
    return None


def split_score(item: str) -> tuple[str, float | None]:
    """ "keyword (0.8)" -> ("keyword", 0.8); an item that does not end in a number in parentheses
    is all keyword: ("Star Wars (IV)", None). Linear in the item's length (no regex backtracking)."""
    item = item.strip()
    opening = item.rfind("(")
    if not item.endswith(")") or opening < 0:
        return item, None
    number = item[opening + 1 : -1].strip()
    if not number or not _NUMBER_CHARACTERS.issuperset(number):
        return item, None
    try:
        score = float(number)
    except ValueError:
        return item, None
    return item[:opening].rstrip(), score


def not_a_score(text: str | None) -> str | None:
    """The first keyword of the box that ends in a number in parentheses that cannot be a score
    (outside [0, 1]: "Star Wars (1977)"), so the parentheses are part of the keywords; else None."""
    for line in (text or "").splitlines():
        for item in SYSTEM_PREFIX.sub("", line).split(KEYWORD_SEPARATOR):
            score = split_score(item)[1]
            if score is not None and not 0 <= score <= 1:
                return item.strip()
    return None


def reads_scores(text: str | None, family: str | None = None) -> bool:
    """Whether the predictions box `text` reads "keyword (0.8)" as a scored keyword: always for a
    family that takes scores, else unless some number in parentheses of the box (every line and
    system: one rule for the whole box) is outside [0, 1], as in "Star Wars (1977)"."""
    return (family is not None and takes_scores(family)) or not_a_score(text) is None


def parse_keyword_lines(
    text: str | None, name: str = "predictions", scored: bool | None = True, numbers: Sequence[int] | None = None
) -> tuple[list[list[str]], list[list[float]] | None]:
    """One example per line, keywords separated by ';'. With `scored` (a box of a family that
    reads scores), each keyword may end with a score in parentheses: "social satire (0.8);
    pizza (0.1)"; without it, "Star Wars (1977)" is a keyword. `scored=None` is a box shared by
    families with and without scores: it reads scores unless one would be outside [0, 1] (a
    year). Returns keywords and scores (None when no keyword has a score; otherwise every
    keyword needs one). `numbers`: each line's number in its box, where `text` is part of one."""
    if scored is None:
        scored = reads_scores(text)
    keywords: list[list[str]] = []
    scores: list[list[float]] = []
    scored_lines = unscored_lines = 0
    for number, line in _numbered(lines(text, name), numbers):
        row, row_scores = [], []
        for item in line.split(KEYWORD_SEPARATOR):
            item = item.strip()
            if not item:
                continue
            if scored:
                keyword, score = split_score(item)
                if score is not None and not keyword:
                    raise ValueError(f"{name}, line {number}: {item!r} is a score without its keyword")
                if score is not None:
                    row_scores.append(score)
                item = keyword
            row.append(item)
        if row_scores and len(row_scores) != len(row):
            unscored = next(
                item for item in line.split(KEYWORD_SEPARATOR) if item.strip() and split_score(item)[1] is None
            )
            message = f"give a score to every keyword or to none; {unscored.strip()!r} has none"
            raise ValueError(f"{name}, line {number}: {message}")
        scored_lines += bool(row_scores)
        unscored_lines += bool(row) and not row_scores
        keywords.append(row)
        scores.append(row_scores)
    if scored_lines and unscored_lines:
        raise ValueError(f"{name}: some lines have scores and others not; give scores everywhere or nowhere")
    return keywords, (scores if scored_lines else None)


def _numbered(found: list[str], numbers: Sequence[int] | None) -> Iterable[tuple[int, str]]:
    """Each line with its number in the box: `numbers` (a system's lines of a shared box), else from 1."""
    return zip(numbers, found) if numbers is not None else enumerate(found, start=1)


def parse_rating_lines(
    text: str | None, name: str = "predictions", numbers: Sequence[int] | None = None
) -> list[list[int]]:
    """One example per line, one integer rating per aspect (ASCII digits: "1_0" is no 10),
    separated by commas, semicolons or spaces; `numbers` as in `parse_keyword_lines`."""
    rows = []
    for number, line in _numbered(lines(text, name), numbers):
        cells = [cell for cell in re.split(r"[,;\s]+", line.strip()) if cell]
        if not all(_INTEGER.fullmatch(cell) for cell in cells):
            raise ValueError(f"{name}, line {number}: ratings must be integers separated by commas, got {line!r}")
        rows.append([int(cell) for cell in cells])
    return rows


def parse_tuple_lines(text: str | Sequence[str] | None, name: str = "references", generated: bool = False) -> list[Any]:
    """One example per line, its sentiment tuples as JSON or a Python list ('[["pizza", "over cooked",
    "NEG"]]'; an empty line: none); with `generated` (a predictions box, which may hold a model's
    text), a line that is not a list of tuples is kept as its text, for `format` to read."""
    rows: list[Any] = []
    for number, line in enumerate(lines(text, name), start=1):
        found = tuple_list(line)
        if found is None and not generated:
            raise ValueError(f"{name}, line {number}: {not_tuples(line)}")
        rows.append(line if found is None else found)
    return rows


def parse_names(text: str | None, name: str = "aspects") -> list[str]:
    """Names separated by commas, semicolons or lines (a lone surrogate refused, as in `lines`)."""
    return [item.strip() for item in re.split(r"[,;\n]", "\n".join(lines(text, name))) if item.strip()]


def whole_number(value: Any, label: str) -> int:
    """A control's value that must be an integer: 3 or 3.0, never 2.5 or True (no rounding)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise ValueError(f"{label} must be an integer, got {value!r}")
    return int(value)


def _decoded_bytes(array: Any) -> int:
    """What an Arrow column decodes into: its text bytes plus `_VALUE_BYTES` per value, with
    dictionary-encoded values counted once per row that uses them (never decoded here)."""
    import pyarrow
    import pyarrow.compute as compute

    if isinstance(array, pyarrow.ChunkedArray):
        return sum(_decoded_bytes(chunk) for chunk in array.chunks)
    kind, count = array.type, len(array) * _VALUE_BYTES
    if pyarrow.types.is_dictionary(kind):
        dictionary = array.dictionary
        if not (pyarrow.types.is_string(dictionary.type) or pyarrow.types.is_binary(dictionary.type)):
            return count + _decoded_bytes(dictionary)
        sizes = compute.binary_length(dictionary)
        return count + int(compute.sum(compute.take(sizes, array.indices)).as_py() or 0)
    if isinstance(array, pyarrow.MapArray):  # keys and items of the whole array: an upper bound when sliced
        return count + _decoded_bytes(array.keys) + _decoded_bytes(array.items)
    if isinstance(array, (pyarrow.ListArray, pyarrow.LargeListArray, pyarrow.FixedSizeListArray)):
        return count + _decoded_bytes(array.flatten())
    if isinstance(array, pyarrow.StructArray):
        return count + sum(_decoded_bytes(field) for field in array.flatten())
    if any(check(kind) for check in (pyarrow.types.is_string, pyarrow.types.is_large_string, pyarrow.types.is_binary,
                                      pyarrow.types.is_large_binary)):  # fmt: skip
        return count + int(compute.sum(compute.binary_length(array)).as_py() or 0)
    return count


def _parquet_bytes(path: Path) -> int:
    """The decoded size of a Parquet file (`_decoded_bytes`), bounded before anything large is
    made: its value count from the metadata, its text columns read with their dictionaries kept."""
    import pyarrow
    import pyarrow.parquet as parquet

    try:
        with parquet.ParquetFile(path) as file:
            check_unique_names(path, file.schema_arrow.names)  # read_table's read_dictionary fails on them
            metadata = file.metadata
            chunks = [
                metadata.row_group(g).column(c)
                for g in range(metadata.num_row_groups)
                for c in range(metadata.num_columns)
            ]
            values = max(metadata.num_rows, sum(chunk.num_values for chunk in chunks))
            if values > MAX_VALUES:
                raise ValueError(
                    f"{path.name} holds {values:,} values, more than the {MAX_VALUES:,} this Space accepts"
                )
            if any("DELTA_BYTE_ARRAY" in chunk.encodings for chunk in chunks):
                message = "its texts are stored with DELTA_BYTE_ARRAY encoding, which this Space does not expand"
                raise ValueError(f"{path.name}: {message}; save it with the default encodings")
            texts = [metadata.schema.column(c).path for c in range(metadata.num_columns)]
            texts = [name for c, name in enumerate(texts) if metadata.schema.column(c).physical_type == "BYTE_ARRAY"]
        table = parquet.read_table(path, read_dictionary=texts)
    except (pyarrow.ArrowException, OSError):
        raise ValueError(f"{path.name}: not a readable Parquet file") from None
    return sum(_decoded_bytes(column) for column in table.columns)


def check_upload_size(path: Path, max_mb: float = MAX_UPLOAD_MB, max_expanded_mb: float = MAX_EXPANDED_MB) -> None:
    """Refuse a file over `max_mb`, or one that decodes beyond `max_expanded_mb`: a .gz is
    decompressed in 1 MB chunks and counted (never held whole); a Parquet file by its decoded
    size (`_parquet_bytes`: a few KB of dictionary-encoded texts can stand for GBs)."""
    if path.stat().st_size > max_mb * 1e6:
        raise ValueError(f"{path.name} is larger than {max_mb:g} MB, the most this Space accepts")
    with open(path, "rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
    expanded = 0
    if compressed:
        try:
            with gzip.open(path, "rb") as stream:
                while chunk := stream.read(_CHUNK):
                    expanded += len(chunk)
                    if expanded > max_expanded_mb * 1e6:
                        break
        except (EOFError, OSError, zlib.error):
            raise ValueError(f"{path.name}: corrupt gzip data; expected a complete .gz file") from None
    elif path.name.lower().endswith(".parquet"):
        expanded = _parquet_bytes(path)
    if expanded > max_expanded_mb * 1e6:
        raise ValueError(f"{path.name} expands to more than {max_expanded_mb:g} MB, the most this Space accepts")


def read_upload(path: str | Path, mapping: Mapping | None = None, family: str | None = None) -> Table:
    """An uploaded CSV / TSV / JSONL / JSON / Parquet file, after `check_upload_size`: its columns
    and the line of each row. CSV list cells are read as the CLI reads them (`columns.list_columns`:
    "a; b", or a JSON or Python list as pandas writes it), in the columns of the usual names and
    those `mapping` ({role: column}) names; for a family of sentiment tuples, the gold cells as
    tuples (JSON) and the predicted cells as text (tuples or a model's text, read per cell)."""
    path = Path(path)
    if not path.name.lower().endswith(tuple(UPLOAD_TYPES)):  # an Arrow file's decoded size is not bounded here
        raise ValueError(f"{path.name}: upload a {', '.join(UPLOAD_TYPES)} file")
    check_upload_size(path)
    given = {role: (column or "").strip() for role, column in (mapping or {}).items()}
    if family is not None and takes_tuples(family):  # no number columns: the family reads no scores
        return read_table(path, (), (), tuple_columns=tuple_columns((), [given.get("references")], True, True))
    numbers = number_columns([given.get("scores"), "prediction_sentiments"])
    return read_table(path, list_columns([given.get("predictions"), given.get("references")]), numbers)


def takes_scores(family: str) -> bool:
    """Whether `family` reads a score per predicted keyword (its declaration has a scores input)."""
    return any(item.kind == "scores" for item in declared.FAMILIES[family].inputs)


def takes_tuples(family: str | None) -> bool:
    """Whether `family` reads sentiment tuples (its declaration has inputs of kind "tuples")."""
    return family is not None and any(item.kind == "tuples" for item in declared.FAMILIES[family].inputs)


def _tuple_cell(cell: Any) -> Any:
    """An uploaded cell of tuples: a text cell read as `parse_tuple_lines` reads a line of generated
    text (its tuples as JSON, else the text), any other cell as it is."""
    if not isinstance(cell, str):
        return cell
    found = tuple_list(cell)
    return cell if found is None else found


def _tuple_references(upload: Table, column: Sequence[Any]) -> list[Any]:
    """An uploaded column of gold tuples, a text cell read as JSON tuples (as a predictions cell is);
    a text that is none is refused, naming its row."""
    rows = [_tuple_cell(cell) for cell in column]
    bad = next((row for row, cell in enumerate(rows) if isinstance(cell, str)), None)
    if bad is not None:
        raise ValueError(f"references, {upload.location(bad)}: {not_tuples(rows[bad])}")
    return rows


def system_column(columns: dict[str, list[Any]], column: str | None = None) -> str | None:
    """The column naming each row's system: `column` (which must be there), else the first of
    `SYSTEM_COLUMNS` in the file, else None."""
    if column is not None:
        if column not in columns:
            raise ValueError(f"no system column `{column}` in the file (found: {_code(columns) or 'none'})")
        return column
    return next((name for name in SYSTEM_COLUMNS if name in columns), None)


def split_systems(upload: Table, column: str | None = None) -> dict[str, Table]:
    """The rows of each system of an upload ({system: its rows as a `Table`, lines and rows kept}), in
    the order systems first appear; {"": upload} when there is no system column. A system
    name must be a string or a number."""
    column = system_column(upload.columns, column)
    if column is None:
        return {"": upload}
    rows: dict[str, list[int]] = {}
    for row, name in enumerate(upload.columns[column]):
        if isinstance(name, bool) or not isinstance(name, (str, int, float)):
            raise ValueError(f"column `{column}`, {upload.location(row)}: a system name must be a string, got {name!r}")
        rows.setdefault(str(name), []).append(row)
    return {
        name: Table(
            upload.path,
            {key: [values[row] for row in chosen] for key, values in upload.columns.items()},
            [upload.lines[row] for row in chosen] if upload.lines is not None else None,
            [upload.rows[row] for row in chosen] if upload.rows is not None else chosen,
        )
        for name, chosen in rows.items()
    }


def same_count(keyword_sides: Sequence[str] = ("predictions", "references"), **columns: Sequence[Any] | None) -> None:
    """The library's check that the given columns have one entry per example (its message
    names examples; the Space shows them as lines; `keyword_sides`: those of keyword lists, whose
    flat list is named so); none at all is "no examples"."""
    given = {name: column for name, column in columns.items() if column is not None}
    if not any(len(column) for column in given.values()):
        raise ValueError("no examples: type one example per line, or upload a file")
    check_same_length(keyword_sides, **given)


@dataclass(frozen=True)
class BoxPart:
    """One system's lines of a shared predictions box: its name, each line's number in the box,
    and whether the box reads scores (`reads_scores`, decided for the whole box)."""

    system: str
    numbers: Sequence[int]
    scored: bool


@dataclass
class Inputs:
    """A family's inputs, where they came from (for the status line), and how an example
    index is named to the visitor ("line 3" of the boxes, "row 3 of x.csv")."""

    data: dict[str, Any]
    source: str
    where: Callable[[int], str]


def _code(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def aspect_columns(table: dict[str, list[Any]], aspects: Sequence[str], prefix: str) -> tuple[list[str], list[str]]:
    """The gold and predicted column of each aspect; a default aspect may be named by its
    Vietnamese column (giai_tri for entertainment, ...), as in the tourism data."""
    gold, predicted, missing = [], [], []
    for aspect in aspects:
        names = [aspect, *([ASPECT_ALIASES[aspect]] if aspect in ASPECT_ALIASES else [])]
        gold_name = next((name for name in names if name in table), names[0])
        predicted_name = next((prefix + name for name in names if prefix + name in table), prefix + gold_name)
        missing += [name for name in (gold_name, predicted_name) if name not in table]
        gold.append(gold_name)
        predicted.append(predicted_name)
    if missing:
        raise ValueError(
            f"the file needs a gold column and a predicted column ({prefix!r} + name) per aspect; "
            f"missing: {_code(missing)} (found: {_code(table) or 'none'})"
        )
    return gold, predicted


def collect_inputs(
    inputs: Sequence[str],
    predictions: str | Sequence[str] | None,
    references: str | None,
    extra: str | None = None,
    upload: Table | None = None,
    prediction_prefix: str = PREDICTION_PREFIX,
    family: str | None = None,
    part: BoxPart | None = None,
) -> Inputs:
    """The metric inputs of a family taking `inputs` ("predictions", "references", and
    "texts" or "aspects"), from the `upload` when given, else from the text boxes (sentiment
    tuples as `parse_tuple_lines` reads them, the predictions also as `generated` text). The
    predictions box reads "keyword (0.8)" as a scored keyword as `reads_scores` says (one rule for
    the box; `part`: `predictions` is one system's lines of it); an upload holding several
    systems (`system_column`) is refused: score each of `split_systems`."""
    data: dict[str, Any] = {}
    typed = any("".join(text or "").strip() for text in (predictions, references, extra if "texts" in inputs else None))
    table = upload.columns if upload is not None else None
    if upload is not None:
        column = system_column(upload.columns)
        systems = list(dict.fromkeys(map(str, upload.columns[column]))) if column else []
        if len(systems) > 1:
            shown = ", ".join(systems[:5]) + (f" and {len(systems) - 5} more" if len(systems) > 5 else "")
            raise ValueError(
                f"the file holds {len(systems)} systems in column `{column}` ({shown}); "
                "their rows are not pooled: score one system per file"
            )
        source = f"the uploaded file `{upload.path.name}`"
        if typed:
            source += " (the text boxes are not used while a file is uploaded)"

        def where(index: int) -> str:
            return f"{upload.location(index)} (example {index + 1})"
    else:
        source = "the text boxes"

        def where(index: int) -> str:
            return f"line {index + 1}"

    label, numbers = (f"predictions (system {part.system!r})", part.numbers) if part else ("predictions", None)
    if "aspects" in inputs:
        data["aspects"] = parse_names(extra) or list(DEFAULT_ASPECTS)
        if table is not None:
            if not prediction_prefix:
                raise ValueError("prediction_prefix is empty: give the prefix of the predicted rating columns")
            gold, predicted = aspect_columns(table, data["aspects"], prediction_prefix)
            renamed = [f"`{column}` as {aspect}" for column, aspect in zip(gold, data["aspects"]) if column != aspect]
            if renamed:
                source += "; read " + ", ".join(renamed)
            data["references"] = rating_rows(table, gold)
            data["predictions"] = rating_rows(table, predicted)
        else:
            data["predictions"] = parse_rating_lines(predictions, label, numbers)
            data["references"] = parse_rating_lines(references, "references")
        same_count(predictions=data["predictions"], references=data["references"])
        return Inputs(data, source, where)
    keyword_inputs = [box for box in ("predictions", "references") if box in inputs]
    missing = [column for column in keyword_inputs if table is not None and column not in table]
    if missing:
        needed = " and a ".join(f"`{column}`" for column in missing)
        raise ValueError(f"the file needs a {needed} column (found: {_code(table) or 'none'})")
    if takes_tuples(family):  # predictions as tuples, or a model's text for `format` (kept as `generated`)
        if table is not None:
            data["generated"] = list(table["predictions"])
            data["predictions"] = [_tuple_cell(cell) for cell in table["predictions"]]
            data["references"] = _tuple_references(upload, table["references"])
        else:
            data["generated"] = lines(predictions, label)
            data["predictions"] = parse_tuple_lines(predictions, label, generated=True)
            data["references"] = parse_tuple_lines(references, "references")
        same_count((), predictions=data["predictions"], references=data["references"])
        return Inputs(data, source, where)
    if table is not None:
        data.update({column: table[column] for column in keyword_inputs})
        data["scores"] = table.get("scores")
        # Confidence scores are never sentiments (deviation 7 in docs/definitions.md): only a column named so.
        data["prediction_sentiments"] = table.get("prediction_sentiments")
        data["texts"] = table.get("texts", table.get("review")) if "texts" in inputs else None
    else:
        # Scores are read alike for every family (those without scores drop them): the same box gives the same
        # keywords in every tab and Space; a family with scores takes a number outside [0, 1] as a score too.
        scored = part.scored if part else reads_scores(predictions, family)
        data["predictions"], data["scores"] = parse_keyword_lines(predictions, label, scored, numbers)
        if "references" in inputs:
            data["references"], _ = parse_keyword_lines(references, "references", scored=False)
        data["texts"] = (lines(extra, "texts") or None) if "texts" in inputs else None
    same_count(predictions=data["predictions"], references=data.get("references"), texts=data.get("texts"))
    return Inputs(data, source, where)


# --- several systems: one input model for the text boxes and the files -------------------------
