"""Reading a file of predictions into each system's library inputs (columns, a separate gold
file, models of a '*' pattern, --by values, --presence views, pairing for --baseline), and
evaluating them: what `opinion-metrics` computes before it prints."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .aspects import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS
from .columnar import ArrowColumn
from .columns import NAMES, WHAT, closest, find_columns, first_text, text_cell_message
from .comparison import DEFAULT_RESAMPLES, Difference, Pairs, significance
from .families import FAMILIES as DECLARATIONS
from .grouping import pool_by_group
from .semantic import DEFAULT_MODEL
from .tables import (
    Rows,
    SourceColumn,
    Table,
    check_paired_texts,
    delimited,
    id_column,
    pair_rows,
    pairing,
    rating_rows,
    read_table,
    streamed,
)
from .view import options_used, terminal_width, wrapped_items

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


def side_by_side(args: argparse.Namespace) -> bool:
    """Whether --predictions names several systems side by side (several columns, or a '*' pattern)."""
    return len(_prediction_columns(args)) > 1 or "*" in args.predictions


def _prediction_columns(args: argparse.Namespace) -> list[str]:
    """The columns (or patterns) --predictions names: `resolve_columns` keeps them in `prediction_columns`."""
    return getattr(args, "prediction_columns", None) or [args.predictions]


def _common_prefix(names: Sequence[str]) -> str:
    """What names share before their systems' names: up to the last '_', '-', '.' or blank they share
    ("keywords_base", "keywords_basic" -> "keywords_"), if every name has more after it."""
    shared = os.path.commonprefix(list(names))
    cut = max(shared.rfind(mark) for mark in "_-. ") + 1
    return shared[:cut] if all(len(name) > cut for name in names) else ""


def _models(table: Table, args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """{model: (predictions column, scores column)}: one entry per column matching a
    `--predictions` pattern such as 'keywords_*' (the '*' part names the model) or per column of
    several named (what their names do not share names the model), else one.
    A pattern's scores follow it ('scores_*' unless --scores says otherwise): one model never
    reads another's scores, and no choice of columns reads the gold lists as predictions."""
    several = side_by_side(args)
    scores = args.scores or ("scores_*" if several else "scores")
    if not args.predictions:
        raise UsageError("--predictions is empty: name the column of predicted keyword lists")
    named = _prediction_columns(args)
    if not several:
        models = {"": (args.predictions, scores)}
    elif any(name.count("*") > 1 for name in named) or scores.count("*") > 1:
        raise UsageError("--predictions and --scores take at most one '*' each")
    else:
        found: list[tuple[str, str | None]] = []  # (column, its model where a pattern names it)
        for name in named:
            if "*" not in name:
                _column(table, name, "--predictions")
                found.append((name, None))
                continue
            pattern = re.compile(re.escape(name).replace(r"\*", "(.+)") + "$")
            matches = [match for match in map(pattern.match, table.columns) if match]
            if not matches:
                columns = ", ".join(table.columns)
                raise UsageError(f"--predictions {name!r} matches no column of {table.path.name} ({columns})")
            found += [(match.group(0), match.group(1)) for match in matches]
        plain = [column for column, model in found if model is None]
        prefix = _common_prefix(plain) if len(plain) > 1 else ""
        models = {}
        for column, model in found:
            model = model or column[len(prefix) :]
            if models.get(model, (column,))[0] != column:
                raise UsageError(
                    f"--predictions: columns {models[model][0]!r} and {column!r} would both be system {model!r}; "
                    "name them apart"
                )
            models[model] = (column, scores.replace("*", model))
        if len(models) > 1 and "*" not in scores:
            raise UsageError(
                f"--scores {scores!r} is one column for {len(models)} models; give a pattern such as "
                f"'scores_*' so that each model has its own scores column"
            )
    for model, (predictions, score_column) in models.items():
        if predictions == args.references:
            where = f" (model {model!r})" if model else ""
            raise UsageError(
                f"--predictions {args.predictions!r} selects the gold column {predictions!r}{where}: "
                "the gold lists would be scored against themselves; name the predictions' column"
            )
        if score_column == predictions:
            raise UsageError(f"--scores {score_column!r} is the predictions' column; name the scores' column")
    if args.scores is not None:  # named by the user: it must be there
        for _, score_column in models.values():
            _column(table, score_column, "--scores")
    return models


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


def _compute(family: str, inputs: dict[str, Any], workers: int | None = None) -> dict[str, Any]:
    """The family's result: through states (`parallel.compute`) with --workers, pooled groups'
    keys, or columns streamed from a Parquet file; else the family function (with a --presence view,
    with its per-example values, which tell the examples left out at no cost: `_counted`)."""
    function, options = DECLARATIONS[family].function, dict(inputs["options"])
    keys = inputs.get("keys")
    columns = [inputs.get(name) for name in ("predictions", "references", "scores")]
    columns += [options.get(name) for name in ("texts", "prediction_sentiments")]
    stream = any(map(streamed, columns))
    if options.get("return_per_example"):  # the function's per-example values; pooled groups' intervals by key
        result = function(*_arguments(family, inputs), **options)
        if keys is not None and options.get("bootstrap") == "poisson" and options.get("confidence_level"):
            rest = {name: value for name, value in options.items() if name != "return_per_example"}
            return {**_compute(family, {**inputs, "options": rest}, workers), "per_example": result["per_example"]}
        return result
    processes = workers or 1
    if "workers" in options and (stream or keys is not None):  # sentiment's --workers: the chunks' processes
        processes = options.pop("workers")
    if (processes > 1 and "workers" not in options) or stream or keys is not None:
        from .parallel import compute

        references = inputs.get("references")
        return compute(
            family, inputs["predictions"], references, scores=inputs.get("scores"), workers=processes, keys=keys,
            **options,
        )  # fmt: skip
    if options.get("presence", "all") != "all":
        options["return_per_example"] = True
    return function(*_arguments(family, inputs), **options)


def _counted(inputs: dict[str, Any], per_example: dict[str, list[Any]] | None) -> int | None:
    """How many examples count in a --presence view (those with a gold keyword of its kind), from the
    per-example values (None where left out) or else from the rule itself; None: every example."""
    options = inputs["options"]
    presence = options.get("presence", "all")
    if presence == "all":
        return None
    if per_example:
        return sum(value is not None for value in next(iter(per_example.values())))
    from .state import statistics

    rule = {name: options[name] for name in ("presence", "normalize", "stemmer") if name in options}
    references = inputs["references"]
    _, included = statistics(
        "keyword_prf", rule, predictions=[[]] * len(references), references=references, texts=options["texts"]
    )
    return int(included.sum())


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
    found = find_columns(list(table.columns), given)
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
    if system is not None and args.by not in (None, system):
        raise UsageError(
            f"{table.path.name} holds several systems in column {system!r}: --by {args.by} would pool them; "
            f"give --by {system} (one row per system), or --system none to pool them on purpose"
        )
    detected = system is not None and args.by is None and args.system is None
    args.system_column = system
    if system is not None:
        args.by = system
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
        parts.append(f"{count} system{'s' * (count != 1)} from `{system}` (one row each; --system none pools them)")
    return "\n".join(wrapped_items("columns: ", parts, terminal_width(), "; "))


def _aspects(table: Table, args: argparse.Namespace) -> list[str]:
    """--aspects, else the English or the Vietnamese (tourism data) aspect columns, whichever are there."""
    if args.aspects:
        return args.aspects
    found = next((names for names in (DEFAULT_ASPECTS, VIETNAMESE_COLUMNS) if set(names) <= set(table.columns)), None)
    return list(found or DEFAULT_ASPECTS)


def _default_families(table: Table, args: argparse.Namespace, scores: list[str]) -> list[str]:
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


@dataclass
class _Subset:
    """One row of results: a model of a '*' pattern, a value of --by, a --presence view."""

    model: str
    value: str
    presence: str
    columns: tuple[str, str]  # (predictions, scores)
    rows: list[int]

    def name(self, presence: bool) -> str:
        parts = (self.model, self.value, self.presence if presence else "")
        return "/".join(part for part in parts if part) or "all"

    def group(self, system: str | None, presence: bool) -> str:
        """The view this row belongs to: its name without the system (`system`: "model" or "value",
        the dimension naming systems), e.g. the movie of "base/GoodBadUgly"; the best values are
        marked and Holm's correction applied within it."""
        parts = (
            "" if system == "model" else self.model,
            "" if system == "value" else self.value,
            self.presence if presence else "",
        )
        return "/".join(part for part in parts if part)


@dataclass
class Evaluation:
    """The results, and with --baseline the differences from the baseline per subset."""

    results: Results
    comparisons: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    # the same as the report shows them: Holm's correction over the systems, pairs, smallest p-value
    differences: dict[str, dict[str, dict[str, Difference]]] = field(default_factory=dict)
    # per (subset, family): the library's arguments and where its examples are in the files
    inputs: dict[tuple[str, str], tuple[dict[str, Any], _Examples]] = field(default_factory=dict)
    # per (subset, family), with --per-example: the family's per-example values
    per_example: dict[tuple[str, str], dict[str, list[Any]]] = field(default_factory=dict)
    # per subset and family, where a --presence view leaves examples out: how many
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)
    # per subset: its view (`_Subset.group`); `within` names the views' columns ("movie", "presence")
    groups: dict[str, str] = field(default_factory=dict)
    within: str = ""


def _presences(args: argparse.Namespace) -> list[str]:
    return getattr(args, "presence", None) or ["all"]


def _takes_presence(family: str) -> bool:
    return any(option.name == "presence" for option in DECLARATIONS[family].options)


def evaluate_table(table: Table, args: argparse.Namespace, speak: Speak | None = None) -> Evaluation:
    """{subset: {family: results}}: one subset per model of a '*' pattern, value of `--by`
    and `--presence` view (or "all"); with `--baseline`, each subset's paired comparison
    with the base system's. Library errors are rewritten by `speak` into the CLI's words."""
    from tqdm.auto import tqdm

    gold = attach_gold(table, args) if args.gold else None
    models = _models(table, args)
    families = list(dict.fromkeys(args.metrics or _default_families(table, args, [s for _, s in models.values()])))
    if "all" in families:
        has_scores = all(scores in table.columns for _, scores in models.values())
        families = [family for family in KEYWORD_FAMILIES if family != "weighted_keyword_prf" or has_scores]
    if args.group:  # texts belong to single reviews
        pooled = {"--prediction-sentiments": args.prediction_sentiments, "--texts": args.texts}
        pooled["--presence"] = _presences(args) != ["all"]
        for option, value in pooled.items():
            if value:
                raise UsageError(f"{option} cannot be pooled with --group (it is per review)")
    n = len(next(iter(table.columns.values()), []))
    if n == 0:
        raise ValueError(f"{table.path.name}: no rows to evaluate")
    by_value = _by_values(table, args) if args.by else {"": list(range(n))}
    compare = _compare_dimension(args, models, by_value)
    if compare is not None and compare[0] == "value":
        by_value = _pair_rows(table, args, by_value, compare[1])
    elif args.id is not None:
        raise UsageError("--id pairs the rows of the systems compared: it needs --baseline")
    presences = _presences(args)
    system = "model" if side_by_side(args) else ("value" if args.by else None)
    runs = []  # (result name, family, subset)
    owners: dict[str, tuple[str, str, str]] = {}  # result name: the subset it names
    for model, columns in models.items():
        for value, rows in by_value.items():
            for presence in presences:
                for family in families:
                    if _takes_presence(family) or presence == presences[0]:
                        subset = _Subset(model, value, presence, columns, rows)
                        name = subset.name(_takes_presence(family) and len(presences) > 1)
                        named = owners.setdefault(name, (model, value, presence))
                        if named != (model, value, presence):
                            raise UsageError(
                                f"two result rows would both be named {name!r} (model, --by value, presence: "
                                f"{named} and {(model, value, presence)}); rename a model or a value without '/'"
                            )
                        runs.append((name, family, subset))
    evaluation = Evaluation({name: {} for name, _, _ in runs})
    views = [args.by if system == "model" and args.by else ""] + (["presence view"] if len(presences) > 1 else [])
    evaluation.within = "/".join(view for view in views if view)
    inputs = evaluation.inputs
    model = getattr(args, "model", None) or DEFAULT_MODEL
    if _semantic_installed() and {"semantic_keyword_prf", "keyword_diversity"} & set(families):
        # sentence-transformers and its model take tens of seconds to load, silently
        print(f"loading sentence-transformers and the model {model.split('/')[-1]} (about 30 s the first time)...",
              file=sys.stderr, flush=True)  # fmt: skip
    progress = tqdm(runs, desc="evaluating", unit="metric", disable=len(runs) < 2 or n < 1000, leave=False)
    for name, family, subset in progress:
        progress.set_postfix_str(f"{family} {name}")
        examples = _Examples(table, subset.rows, gold)
        examples.system = _system_columns(subset, args, len(presences) > 1 and _takes_presence(family))
        with _spoken(speak, args, gold, subset, examples):
            given = _inputs(family, examples, args, subset)
            if getattr(args, "per_example", None) is not None and family != "aspect_sentiment_score":
                options = {**given["options"], "return_per_example": True}
                result = _compute(family, {**given, "options": options})  # per-example values: one process
                evaluation.per_example[name, family] = result["per_example"]
            else:
                result = _compute(family, given, getattr(args, "workers", None))
            counted = _counted(given, result.pop("per_example", None))
            evaluation.results[name][family] = result
        if counted is not None:
            evaluation.left_out.setdefault(name, {})[family] = len(given["predictions"]) - counted
        evaluation.groups[name] = subset.group(system, _takes_presence(family) and len(presences) > 1)
        inputs[name, family] = (given, examples)
    if compare is not None:
        dimension, base = compare
        pairs: dict[tuple[str, str], Pairs] = {}
        holm_groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # the systems compared per metric
        for name, family, subset in runs:
            if getattr(subset, dimension) == base:
                continue
            base_subset = _Subset(**{**vars(subset), dimension: base})
            base_name = base_subset.name(_takes_presence(family) and len(presences) > 1)
            (a, examples_a), (b, examples_b) = inputs[base_name, family], inputs[name, family]
            with _spoken(speak, args, gold, subset, examples_b):
                _check_pairs(a, b, examples_a, examples_b, (base, getattr(subset, dimension)), args)
                compared, pairs[name, family] = _compare(family, a, b, args)
            evaluation.comparisons.setdefault(name, {})[family] = compared
            others = tuple(getattr(subset, other) for other in ("model", "value", "presence") if other != dimension)
            holm_groups.setdefault((family, others), []).append(name)
        n_resamples = getattr(args, "n_resamples", None) or DEFAULT_RESAMPLES
        for (family, _), names in holm_groups.items():
            found = significance(
                {name: evaluation.comparisons[name][family] for name in names},
                method=args.compare_method,
                n_resamples=n_resamples,
                pairs={name: pairs[name, family] for name in names},
            )
            for name, by_key in found.items():
                evaluation.differences.setdefault(name, {})[family] = by_key
    return evaluation


def _system_columns(subset: _Subset, args: argparse.Namespace, presence: bool) -> dict[str, str]:
    """The subset as columns of the per-example file: its model (of a '*' pattern), its --by value
    (under --by's column name: model, where that is the system column) and its --presence view."""
    found = {"model": subset.model} if subset.model else {}
    if args.by:
        found[args.by] = subset.value
    return {**found, "presence": subset.presence} if presence else found


def _by_values(table: Table, args: argparse.Namespace) -> dict[str, list[int]]:
    """{value of --by: its rows}."""
    return _labelled_rows(table, args.by, "--by")


def _labelled_rows(table: Table, column: str, option: str) -> dict[str, list[int]]:
    """{value of `column`: its rows}; every row needs a value, and two values may not print
    alike (1 and "1"): for --by they would be one row of results, for --group one group."""
    by_value: dict[str, list[int]] = {}
    first: dict[str, tuple[Any, int]] = {}
    for row, value in enumerate(_column(table, column, option)):
        if value is None or isinstance(value, (list, dict)) or value == "":
            shown = "empty" if value in (None, "") else ("a list" if isinstance(value, list) else "an object")
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


@contextmanager
def _spoken(
    speak: Speak | None, args: argparse.Namespace, gold: Any, subset: _Subset, examples: _Examples
) -> Iterator[None]:
    """Rewrites a library `ValueError` raised inside it in the CLI's words (`_Speaker`)."""
    try:
        yield
    except UsageError:
        raise
    except ValueError as error:
        if speak is None:
            raise
        sides = {"predictions": subset.columns[0], "scores": subset.columns[1], "texts": _texts_column(args)}
        sides["references"] = args.gold_column if gold is not None else args.references
        sides["prediction_sentiments"] = args.prediction_sentiments or "prediction_sentiments"
        sides["groups"] = args.group or "groups"
        raise speak(str(error), examples.locate, sides) from None


def _compare_dimension(
    args: argparse.Namespace, models: dict[str, tuple[str, str]], by_value: dict[str, list[int]]
) -> tuple[str, str] | None:
    """("model" or "value", the base): --baseline names a model of the '*' pattern, else a --by value (a system)."""
    if args.compare is None:
        if args.compare_method is not None:
            raise UsageError("--compare-method needs --baseline NAME")
        return None
    args.compare_method = args.compare_method or "permutation"
    if side_by_side(args):
        dimension, names, what = "model", list(models), f"system of --predictions {args.predictions!r}"
    elif args.by and args.by == getattr(args, "system_column", None):
        dimension, names, what = "value", list(by_value), f"system of column {args.by!r}"
    elif args.by:
        dimension, names, what = "value", list(by_value), f"value of --by {args.by}"
    else:
        raise UsageError(
            "--baseline needs systems to compare: a system column (model, system; or --system COLUMN), "
            "--by COLUMN or --predictions 'keywords_*'"
        )
    if args.compare not in names:
        shown = [name if len(name) <= 40 else name[:37] + "..." for name in names[:10]]
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        near = closest(args.compare, names)
        hint = f"; did you mean {near!r}?" if near is not None else ""
        raise UsageError(f"--baseline {args.compare!r} is not a {what} (there: {', '.join(shown)}{more}){hint}")
    if len(names) < 2:
        raise UsageError(f"--baseline {args.compare!r}: there is no other {what} to compare with it")
    if args.prediction_sentiments and "sentiment_appropriateness" in (args.metrics or []):
        raise UsageError("--baseline cannot use --prediction-sentiments (one column for two systems)")
    return dimension, args.compare


def _id_column(table: Table, args: argparse.Namespace) -> str | None:
    """The column identifying a row's example across systems: --id, else `tables.id_column`."""
    if args.id is not None:
        _column(table, args.id, "--id")
        return args.id
    return id_column(table.columns)


def _pair_rows(
    table: Table, args: argparse.Namespace, by_value: dict[str, list[int]], base: str
) -> dict[str, list[int]]:
    """Each --by value's rows in the order of the base's (`tables.pair_rows`: by the id column
    when there is one, else left in file order)."""
    systems = {value: Rows(table, rows) for value, rows in by_value.items()}
    return pair_rows(systems, base, _id_column(table, args), args.by)


def _check_pairs(
    a: dict[str, Any],
    b: dict[str, Any],
    examples_a: _Examples,
    examples_b: _Examples,
    systems: tuple[str, str],
    args: argparse.Namespace,
) -> None:
    """Example i of system b pairs with example i of system a (by id or by position, `_pair_rows`):
    same count, same references, and the same review texts (--texts, else review) where the file has them."""
    what = args.by if not side_by_side(args) else "model"
    column = _id_column(examples_a.table, args) if what != "model" else None
    count_a, count_b = len(a["predictions"]), len(b["predictions"])
    if count_a != count_b:
        unit = "row" if examples_a.pooled is None else f"{args.group} group"
        raise ValueError(
            f"cannot compare {what} {systems[1]!r} with {systems[0]!r}: {systems[0]!r} has {count_a} "
            f"{unit}{'s' * (count_a != 1)}, {systems[1]!r} has {count_b}; {pairing(column, what)}"
        )
    gold_a, gold_b = a.get("references"), b.get("references")
    if gold_a is not None and gold_b is not None and gold_a != gold_b:
        index = next(i for i, (x, y) in enumerate(zip(gold_a, gold_b)) if x != y)
        place_a, place_b = examples_a.locate("predictions", index), examples_b.locate("predictions", index)
        raise ValueError(
            f"cannot compare {what} {systems[1]!r} with {systems[0]!r}: their references differ at "
            f"{place_b} ({systems[1]!r}) and {place_a} ({systems[0]!r}); {pairing(column, what)}"
        )
    rows_a, rows_b = Rows(examples_a.table, examples_a.rows), Rows(examples_b.table, examples_b.rows)
    check_paired_texts(rows_a, rows_b, _texts_column(args), systems, what, column)


def _compare(
    family: str, a: dict[str, Any], b: dict[str, Any], args: argparse.Namespace
) -> tuple[dict[str, Any], Pairs]:
    """`compare_systems` on the two systems' inputs (the shared options, references and texts are a's),
    and the pairs behind it."""
    from .comparison import compare_systems, compare_systems_with_pairs, pairs_of

    options = dict(a["options"])
    settings = {name: options.pop(name) for name in ("n_resamples", "random_state") if name in options}
    settings["confidence_level"] = options.pop("confidence_level", None) or COMPARE_LEVEL
    if a.get("keys") is not None and options.get("bootstrap") == "poisson":  # pooled groups, keyed by group
        from .state import MetricState

        states = [
            MetricState(family, **settings, **options).update(
                predictions=side["predictions"], references=side["references"], keys=side["keys"],
                **({"scores": side["scores"]} if side.get("scores") is not None else {}),
            )
            for side in (a, b)
        ]  # fmt: skip
        columns = [{name: side[name] for name in ("predictions", "references", "scores") if side.get(name) is not None}
                   for side in (a, b)]  # fmt: skip
        return compare_systems(*states, method=args.compare_method), pairs_of(family, options, *columns)
    return compare_systems_with_pairs(
        family,
        a["predictions"],
        b["predictions"],
        a.get("references"),
        scores_a=a.get("scores"),
        scores_b=b.get("scores"),
        method=args.compare_method,
        **settings,
        **options,
    )


def _semantic_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def run_details(evaluation: Evaluation) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, dict[str, Any]]]]:
    """Per subset and family: the number of examples that count (groups, once pooled; a --presence view
    leaves some out: `Evaluation.left_out`) and the options used."""
    counts: dict[str, dict[str, int]] = {}
    options: dict[str, dict[str, dict[str, Any]]] = {}
    for (name, family), (given, _) in evaluation.inputs.items():
        left_out = evaluation.left_out.get(name, {}).get(family, 0)
        counts.setdefault(name, {})[family] = len(given["predictions"]) - left_out
        options.setdefault(name, {})[family] = options_used(family, given["options"])
    return counts, options
