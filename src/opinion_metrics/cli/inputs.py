"""How a file's columns become each family's library inputs: the columns found by their usual
names, a separate gold file joined by key, texts, scores and aspects, --group pooling, and
the words of a UsageError (a mistake in the command line: exit status 2).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.grouping import missing_label, pool_by_group
from ..embeddings.encoder import DEFAULT_MODEL
from ..families.aspect_sentiment_score import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS
from ..families.registry import FAMILIES as DECLARATIONS
from ..io.arrow import SourceColumn
from ..io.column_names import NAMES, TUPLE_NAMES, WHAT, closest, find_columns, first_text, text_cell_message
from ..io.delimited import delimited
from ..io.pairing import rating_rows
from ..io.read import read_table
from ..io.rows import ArrowColumn
from ..io.table import Table
from ..view.text import terminal_width, wrapped_items

if TYPE_CHECKING:
    from .systems import _Subset

FAMILIES = tuple(DECLARATIONS)


KEYWORD_FAMILIES = tuple(name for name, family in DECLARATIONS.items() if family.inputs[0].kind == "keywords")


# options with no flag: objects, per-example output, tuning knobs; `aspects` is the column option --aspects
NO_FLAG = {"sentiment", "return_per_example", "block_elements", "show_progress", "batch_size", "aspects"}


Results = dict[str, dict[str, dict[str, float]]]


COMPARE_LEVEL = 0.95  # the level of --baseline's intervals without --ci


# Rewrites a library message into the caller's words: (message, locate example, input sides) -> error.
Speak = Callable[[str, Callable[[str, int], str], dict[str, str]], ValueError]


class UsageError(ValueError):
    """A mistake in the command line (exit status 2); other `ValueError`s are data errors (1)."""


def _column(table: Table, name: str, option: str, looked_for: str | None = None) -> list[Any]:
    """Column `name` of `table`; a missing one is a `UsageError` that suggests the closest column and
    the option naming it. `looked_for`: the role whose usual names were looked for (no column was named)."""
    if name not in table.columns:
        shown = [other if repr(other)[1:-1] == other else _shown_name(other) for other in table.columns]
        columns = ", ".join(shown) or "none"  # invisible characters escaped
        alike = next((other for other in table.columns if _visible_name(other) == _visible_name(name)), None)
        if looked_for is not None and alike is None:
            raise UsageError(
                f"no column of {WHAT[looked_for]} in {table.path.name}: looked for {', '.join(NAMES[looked_for])} "
                f"(columns: {columns}); choose one with {option}"
            )
        near = closest(name, table.columns)
        if alike is not None:
            hint = f"{_shown_name(alike)} differs from {_shown_name(name)} only in invisible characters or its "
            hint += "Unicode form; "
        else:
            hint = f"did you mean {near!r}? " if near is not None else ""
        raise UsageError(
            f"column {name!r} not found in {table.path.name} (columns: {columns}); {hint}choose one with {option}"
        )
    return table.columns[name]


def _keywords(table: Table, name: str, option: str, looked_for: str | None = None) -> list[Any]:
    """`_column` of keyword lists, a text in it refused with its line and the fix."""
    column = _column(table, name, option, looked_for)
    row = first_text(column)
    if row is not None:
        raise ValueError(text_cell_message(name, column[row], table.location(row)))
    return column


def _visible_name(name: str) -> str:
    """`name` as it looks: composed (NFC), without format characters (zero-width, direction marks)."""
    return "".join(c for c in unicodedata.normalize("NFC", name) if unicodedata.category(c) != "Cf")


def _shown_name(name: str) -> str:
    """`name` quoted, invisible characters escaped (repr's \\u200b) and, in a decomposed name,
    combining marks too: two names that look alike read differently."""
    shown = repr(name)
    if unicodedata.is_normalized("NFC", name):
        return shown
    return "".join(f"\\u{ord(c):04x}" if unicodedata.combining(c) else c for c in shown)


def _take(column: Sequence[Any], rows: list[int]) -> Sequence[Any]:
    """The column's values at `rows`; an Arrow or Parquet column stays one, converted to Python
    where it is read (a Parquet file a batch at a time; with --workers, each process its own chunks)."""
    if isinstance(column, (ArrowColumn, SourceColumn)):
        return column.take(rows)
    return list(map(column.__getitem__, rows))


def attach_gold(table: Table, args: argparse.Namespace) -> tuple[Table, list[int]]:
    """Give every row the gold list of its key from a separate file (e.g. gold per movie).
    Returns the gold table and each row's row there, so that a message can name that line.
    Where either file is a CSV / TSV (which writes no numbers), keys match by their text."""
    if args.references in table.columns:
        raise UsageError(
            f"{table.path.name} has its own gold column {args.references!r} and --gold gives the gold lists: "
            f"drop one, or name the column the joined lists get with --references"
        )
    gold = read_table(args.gold, [args.gold_column], [])
    keys, lists = _column(gold, args.gold_key, "--gold-key"), _column(gold, args.gold_column, "--gold-column")
    as_key = str if delimited(gold.path) or delimited(table.path) else (lambda key: key)
    by_key: dict[Any, int] = {}
    for row, key in enumerate(keys):
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            raise ValueError(f"{args.gold_key}: {gold.location(row)} must be a string or an integer, got {key!r}")
        if by_key.setdefault(as_key(key), row) != row:
            where = f"{gold.location(by_key[as_key(key)])} and {gold.location(row)}"
            raise ValueError(f"{args.gold_key}: {key!r} has two gold lists ({where}); keep one")
    for row, key in enumerate(_column(table, args.gold_key, "--gold-key")):
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            raise ValueError(f"{args.gold_key}: {table.location(row)} must be a string or an integer, got {key!r}")
    row_keys = [as_key(key) for key in table.columns[args.gold_key]]
    missing = list(dict.fromkeys(key for key in row_keys if key not in by_key))
    if missing:
        named = ", ".join(map(repr, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(
            f"no gold keywords in {args.gold.name} for {args.gold_key} {named}{_near(missing[0], by_key, gold)}"
        )
    gold_rows = [by_key[key] for key in row_keys]
    table.columns[args.references] = [lists[row] for row in gold_rows]
    return gold, gold_rows


def _near(key: Any, by_key: dict[Any, int], gold: Table) -> str:
    """Why a key has no gold list when the gold file writes it differently: as a number, or
    with other blanks or case."""
    if str(key) in {str(known) for known in by_key}:
        return "; the files write the keys differently (text vs number)"
    folded = str(key).strip().casefold()
    alike = next((known for known in by_key if str(known).strip().casefold() == folded), None)
    return "" if alike is None else f"; {gold.path.name} has {alike!r} (blanks or case differ)"


class _Examples:
    """Where the library's example i of one computation is in the files: row `rows[i]` of
    `table` (its gold list in `gold`, when joined), or the i-th group once pooled."""

    def __init__(self, table: Table, rows: list[int], gold: tuple[Table, list[int]] | None) -> None:
        self.table, self.rows, self.gold = table, rows, gold
        self.pooled: tuple[str, list[Any]] | None = None  # (group column, groups)
        self.system: dict[str, str] = {}  # the subset's system (model), --by value and --presence view

    def locate(self, side: str, example: int) -> str:
        if self.pooled is not None and example < len(self.pooled[1]):
            return f"{self.pooled[0]} {self.pooled[1][example]!r}"
        if example >= len(self.rows):
            return f"example {example}"
        if self.gold is not None and side == "references":
            return self.gold[0].location(self.gold[1][self.rows[example]])
        return self.table.location(self.rows[example])

    def identity(self, example: int, id_column: str | None) -> dict[str, Any]:
        """The columns that find example i in the input again: its group once pooled, else its id
        (where the file has an id column) and its line (a Parquet or Arrow file: its row), from 1."""
        if self.pooled is not None:
            return {self.pooled[0]: self.pooled[1][example]}
        row = self.rows[example]
        found = {} if id_column is None else {id_column: self.table.columns[id_column][row]}
        if self.table.lines is not None:
            return {**found, "line": self.table.lines[row]}
        return {**found, "row": row + 1}


def _given(names: Sequence[str], args: argparse.Namespace) -> dict[str, Any]:
    """The options among `names` that the user gave (the rest keep the library's defaults)."""
    given = vars(args)
    return {name: given[name] for name in names if name in given and name not in NO_FLAG}


def _inputs(family: str, examples: _Examples, args: argparse.Namespace, subset: _Subset) -> dict[str, Any]:
    """The library's arguments for `family` on `subset`: "predictions", "references" and "scores"
    where the family reads them, and "options" (the options given, `presence` the subset's)."""
    table, rows = examples.table, examples.rows
    declaration = DECLARATIONS[family]
    options = _given([option.name for option in declaration.options], args)
    if "presence" in options:
        options["presence"] = subset.presence
    if family == "aspect_sentiment_score":
        aspects = _aspects(table, args)
        if not args.prediction_prefix:
            raise UsageError(
                "--prediction-prefix is empty: the predicted columns would be the gold ones; give their prefix"
            )
        for aspect in aspects:
            _column(table, aspect, "--aspects")
            _column(table, args.prediction_prefix + aspect, "--prediction-prefix")
        predicted = rating_rows(table.columns, aspects, args.prediction_prefix)
        gold = rating_rows(table.columns, aspects)
        options["aspects"] = aspects
        return {"predictions": [predicted[i] for i in rows], "references": [gold[i] for i in rows], "options": options}
    prediction_column, score_column = subset.columns
    looked_for = getattr(args, "looked_for", set())
    default = "predictions" if "predictions" in looked_for else None
    if family == "sentiment_tuple_prf":  # lists of tuples, or (--format) generated text: the library reads them
        if args.group:
            raise UsageError("--group pools keyword lists: sentiment_tuple_prf scores each example's tuples")
        hint = "--references, or join a file of gold tuples with --gold FILE" if not args.gold else "--references"
        named = "references" if "references" in looked_for and not args.gold else None
        references = _take(_column(table, args.references, hint, named), rows)
        predictions = _take(_column(table, prediction_column, "--predictions", default), rows)
        return {"predictions": predictions, "references": references, "scores": None, "options": options}
    predictions = _take(_keywords(table, prediction_column, "--predictions", default), rows)
    if family == "keyword_diversity":  # no references; self_similarity whenever the semantic extra is there
        if "model" not in options and _semantic_installed():
            options["model"] = DEFAULT_MODEL
        return {"predictions": predictions, "options": options}
    hint = "--references" if args.gold else "--references, or join a file of gold lists with --gold FILE"
    default = "references" if "references" in looked_for and not args.gold else None
    references = _take(_keywords(table, args.references, hint, default), rows)
    scores = None  # only the weighted family reads scores (pooling checks them)
    if family == "weighted_keyword_prf":
        if score_column not in table.columns:
            model = f" for model {subset.model!r}" if subset.model else ""
            raise UsageError(
                f"weighted_keyword_prf needs a scores column{model}: {score_column!r} not found; use --scores"
            )
        scores = _take(table.columns[score_column], rows)
    if args.group:
        groups = _column(table, args.group, "--group")
        lines = [table.lines[i] for i in rows] if table.lines is not None else None
        _labelled_rows(Table(table.path, {args.group: [groups[i] for i in rows]}, lines, rows), args.group, "--group")
        pooled = pool_by_group(
            predictions,
            references,
            [groups[i] for i in rows],
            scores=scores,
            **_given(["normalize", "stemmer", "clip_scores"], args),
        )
        examples.pooled = (args.group, pooled.groups)
        predictions, references, scores = pooled.predictions, pooled.references, pooled.scores
        pooled_inputs = {"predictions": predictions, "references": references, "scores": scores, "options": options}
        return {**pooled_inputs, "keys": pooled.groups}  # a group's Poisson key is its value, as on the engines
    elif any(item.name == "texts" for item in declaration.inputs):
        options["texts"] = _texts(table, rows, args, family)
    if family == "sentiment_appropriateness" and args.prediction_sentiments:
        column = _column(table, args.prediction_sentiments, "--prediction-sentiments")
        options["prediction_sentiments"] = [column[i] for i in rows]
    return {"predictions": predictions, "references": references, "scores": scores, "options": options}


def _arguments(family: str, inputs: dict[str, Any]) -> list[Any]:
    """The family function's positional arguments."""
    if family == "keyword_diversity":
        return [inputs["predictions"]]
    if family == "weighted_keyword_prf":
        return [inputs["predictions"], inputs["scores"], inputs["references"]]
    return [inputs["predictions"], inputs["references"]]


def _texts(table: Table, rows: list[int], args: argparse.Namespace, family: str) -> list[Any] | None:
    """The review texts: for sentiment whenever there, for the others only to tell --presence."""
    if family != "sentiment_appropriateness" and _presences(args) == ["all"]:
        return None
    if args.texts is not None:
        return _take(_column(table, args.texts, "--texts"), rows)
    if _texts_column(args) in table.columns:
        return _take(table.columns[_texts_column(args)], rows)
    if family != "sentiment_appropriateness":
        raise UsageError("--presence needs the review texts: name their column with --texts")
    return None


def _texts_column(args: argparse.Namespace) -> str:
    """The review texts' column: --texts, else the one `resolve_columns` found, else review."""
    return args.texts or getattr(args, "texts_column", None) or "review"


def resolve_columns(table: Table, args: argparse.Namespace) -> str:
    """Fill in the columns not given (--predictions, --references, --scores, --system) from the
    names people give them (`columns.find_columns`); a system column splits the rows into systems
    (as --by would). Returns a line saying which columns were found under other names, or ""."""
    named = list(dict.fromkeys(args.predictions or []))  # --predictions: a list of columns or patterns
    args.prediction_columns = named if len(named) > 1 else None
    args.predictions = named[0] if len(named) == 1 else None
    # several columns side by side: found as a pattern is (scores follow them, no system column is read)
    given = {"predictions": "*" if len(named) > 1 else args.predictions, "references": args.references}
    given.update(scores=args.scores, texts=args.texts, system=args.system, id=args.id)
    for role, value in given.items():
        if value == "":
            raise UsageError(f"--{role} is empty: name the column of {WHAT[role]}")
    if args.gold is not None:  # the joined gold lists get --references' name (default: references)
        given["references"] = args.references or NAMES["references"][0]
    # the tuple family looks for columns of tuples (triplets, quads, ...) before generic ones (labels, targets)
    found = find_columns(list(table.columns), given, tuples="sentiment_tuple_prf" in (args.metrics or []))
    args.looked_for = {role for role in ("predictions", "references") if not given[role] and not found[role]}
    args.predictions = found["predictions"] or NAMES["predictions"][0]
    if args.prediction_columns:
        args.predictions = " ".join(args.prediction_columns)
    args.references = found["references"] or NAMES["references"][0]
    if args.scores is None and found["scores"] not in (None, "scores", "scores_*"):
        args.scores = found["scores"]
    args.texts_column = found["texts"]
    system = found["system"] if not side_by_side(args) else None
    if system is not None and args.system is not None:
        _column(table, system, "--system")
    detected = system is not None and args.by != system and args.system is None
    args.system_column = system
    if system is not None and args.by is None:
        args.by = system  # else one row per system and --by value (`system_split`)
    defaults = {role: (NAMES[role][0], f"{NAMES[role][0]}_*") for role in ("predictions", "references", "scores")}
    defaults["texts"] = ("review",)  # read by default before names were looked for
    renamed = {role: found[role] for role, names in defaults.items() if found[role] and not given.get(role)
               and found[role] not in names}  # fmt: skip
    if detected:
        count = len(dict.fromkeys(map(str, table.columns[system])))
        renamed["system"] = system
    if not renamed:
        return ""
    parts = [f"{WHAT[role]} from `{column}`" for role, column in renamed.items() if role != "system"]
    if "*" in renamed.get("predictions", ""):
        pattern = re.compile(re.escape(args.predictions).replace(r"\*", ".+") + "$")
        count = sum(1 for name in table.columns if pattern.match(name))
        parts[0] = f"{count} system{'s' * (count != 1)} side by side: predicted keywords from `{args.predictions}`"
    if detected:
        each = f"one row per system and {args.by}" if system_split(args) else "one row each"
        parts.append(f"{count} system{'s' * (count != 1)} from `{system}` ({each}; --system none pools them)")
    return "\n".join(wrapped_items("columns: ", parts, terminal_width(), "; "))


def _aspects(table: Table, args: argparse.Namespace) -> list[str]:
    """--aspects, else the English or the Vietnamese (tourism data) aspect columns, whichever are there."""
    if args.aspects:
        return args.aspects
    found = next((names for names in (DEFAULT_ASPECTS, VIETNAMESE_COLUMNS) if set(names) <= set(table.columns)), None)
    return list(found or DEFAULT_ASPECTS)


def _default_families(table: Table, args: argparse.Namespace, scores: list[str]) -> list[str]:
    if {args.predictions, args.references} & TUPLE_NAMES or getattr(args, "format", None):
        return ["sentiment_tuple_prf"]  # a column of tuples (quads, triplets, ...) or generated text
    if args.predictions not in table.columns and all(a in table.columns for a in _aspects(table, args)):
        return ["aspect_sentiment_score"]
    rated = [
        name for name in table.columns if args.prediction_prefix and args.prediction_prefix + name in table.columns
    ]
    if args.predictions not in table.columns and rated:  # some aspects only: --aspects names them
        raise UsageError(
            f"no column {args.predictions!r} of keywords in {table.path.name}, but aspect ratings "
            f"({', '.join(rated)} and {args.prediction_prefix}...): give --metrics aspect_sentiment_score "
            f"--aspects {','.join(rated)}"
        )
    return ["keyword_prf"] + (["weighted_keyword_prf"] if all(s in table.columns for s in scores) else [])


def _presences(args: argparse.Namespace) -> list[str]:
    return getattr(args, "presence", None) or ["all"]


def _takes_presence(family: str) -> bool:
    return any(option.name == "presence" for option in DECLARATIONS[family].options)


def _semantic_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def system_split(args: argparse.Namespace) -> str | None:
    """The system column where --by names another column (a row per system and value, the systems
    compared within each value), else None."""
    column = getattr(args, "system_column", None)
    return column if column is not None and args.by not in (None, column) else None


def systems_named(args: argparse.Namespace) -> str:
    """What a system is called in messages and output columns: "model" for columns side by side,
    else its column (the system column, or --by's)."""
    return "model" if side_by_side(args) else system_split(args) or args.by or "model"


def side_by_side(args: argparse.Namespace) -> bool:
    """Whether --predictions names several systems side by side (several columns, or a '*' pattern)."""
    return len(_prediction_columns(args)) > 1 or "*" in args.predictions


def _labelled_rows(table: Table, column: str, option: str) -> dict[str, list[int]]:
    """{value of `column`: its rows}; every row needs a value, and two values may not print
    alike (1 and "1"): for --by they would be one row of results, for --group one group."""
    by_value: dict[str, list[int]] = {}
    first: dict[str, tuple[Any, int]] = {}
    for row, value in enumerate(_column(table, column, option)):
        if missing_label(value) or isinstance(value, (list, dict)) or value == "":
            shown = "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else "empty"
            shown += "" if value is None or not missing_label(value) else f" ({str(value).replace('nan', 'NaN')})"
            raise ValueError(f"{option} {column}: {table.location(row)} is {shown}; give every row a value")
        name = str(value)
        earlier, earlier_row = first.setdefault(name, (value, row))
        if type(earlier) is not type(value):
            raise ValueError(
                f"{option} {column}: {earlier!r} ({table.location(earlier_row)}) and {value!r} ({table.location(row)}) "
                "would be one group; write the values alike"
            )
        by_value.setdefault(name, []).append(row)
    return by_value


def _prediction_columns(args: argparse.Namespace) -> list[str]:
    """The columns (or patterns) --predictions names: `resolve_columns` keeps them in `prediction_columns`."""
    return getattr(args, "prediction_columns", None) or [args.predictions]
