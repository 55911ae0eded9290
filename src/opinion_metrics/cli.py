"""`opinion-metrics`: evaluate a file of predictions from the command line.

    opinion-metrics examples/reviews.jsonl --by model
    opinion-metrics reviews.jsonl.gz --predictions 'keywords_*' --scores 'scores_*' --gold ground_truth.jsonl \\
        --gold-key movie --gold-column keywords --metrics keyword_prf semantic_keyword_prf --plot results.png
    opinion-metrics ratings.csv --metrics aspect_sentiment_score --aspects giai_tri,luu_tru --prediction-prefix pred_
    opinion-metrics examples/reviews.jsonl --by model --ci 0.95 --compare baseline --presence all,present,absent
    opinion-metrics examples/reviews.jsonl --by model --explain --per-example errors.jsonl

Under each table: the examples each row covers and the options used; --explain adds one line
per column (meaning, range, whether higher is better). --per-example FILE (.jsonl or .csv)
writes every example's values with what produced them: the matched pairs (prediction -> gold
keyword), their cosine similarity (semantic), each keyword's sentiment (sentiment). Progress
goes to stderr (none with --quiet); the tables to stdout.

--ci 0.95 prints each value with its 95% bootstrap interval, `value [low, high]` (error bars in
--plot; the --output JSON has flat <key>_ci_low / <key>_ci_high keys). --compare BASE prints, per
other model and key, the difference from BASE with its interval and p-value (paired by --id, else by position,
`*` where p < 1 - --ci). --presence all,present,absent prints one row per model and view.

Exit status: 0 done, 1 the data cannot be evaluated, 2 a mistake in the command line.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import logging
import math
import os
import re
import secrets
import shutil
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import DEFINITIONS_URL, __version__
from .aspects import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS
from .columnar import ArrowColumn
from .families import FAMILIES as DECLARATIONS
from .families import INTERVAL_OPTIONS, RETURN_PER_EXAMPLE, Option, output_for
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
from .validation import PRESENCES, parse_top_k

FAMILIES = tuple(DECLARATIONS)
KEYWORD_FAMILIES = tuple(name for name, family in DECLARATIONS.items() if family.inputs[0].kind == "keywords")
# options with no flag: objects, per-example output, tuning knobs; `aspects` is the column option --aspects
NO_FLAG = {"sentiment", "return_per_example", "block_elements", "show_progress", "batch_size", "aspects"}
Results = dict[str, dict[str, dict[str, float]]]
MAX_LABELLED = 20  # a plot labels its bars and has a legend up to this many subsets
COMPARE_LEVEL = 0.95  # the level of --compare without --ci


class UsageError(ValueError):
    """A mistake in the command line (exit status 2); other `ValueError`s are data errors (1)."""


def _column(table: Table, name: str, option: str) -> list[Any]:
    if name not in table.columns:
        shown = [other if repr(other)[1:-1] == other else _shown_name(other) for other in table.columns]
        columns = ", ".join(shown) or "none"  # invisible characters escaped
        alike = next((other for other in table.columns if _visible_name(other) == _visible_name(name)), None)
        hint = (
            f"; {_shown_name(alike)} differs from {_shown_name(name)} only in invisible characters or its Unicode form"
            if alike is not None
            else ""
        )
        raise UsageError(
            f"column {name!r} not found in {table.path.name} (columns: {columns}){hint}; choose one with {option}"
        )
    return table.columns[name]


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

    def locate(self, side: str, example: int) -> str:
        if self.pooled is not None and example < len(self.pooled[1]):
            return f"{self.pooled[0]} {self.pooled[1][example]!r}"
        if example >= len(self.rows):
            return f"example {example}"
        if self.gold is not None and side == "references":
            return self.gold[0].location(self.gold[1][self.rows[example]])
        return self.table.location(self.rows[example])


class _Speaker:
    """Rewrites library messages in the CLI's words: options as flags (`clip_scores=True` ->
    `--clip-scores`), input sides as the user's columns, and "example N" as the line in the file."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.flags = {
            action.dest: action
            for group in parser._action_groups
            if (group.title or "").startswith("metric options")
            for action in group._group_actions
        }
        names = "|".join(sorted(map(re.escape, self.flags), key=len, reverse=True))
        self.pattern = re.compile(rf"(?<![\w@'-])({names})(?:=([^\s,;:)]+))?(?!\w)")

    def _flag(self, match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        # a name with "_" is unambiguous; a plain word ("model") only as `name=...` or `name must`
        if "_" not in name and value is None and not match.string.startswith(" must", match.end()):
            return match.group(0)
        self.translated = True
        action = self.flags[name]
        flag = action.option_strings[0]
        if value is None:
            return flag
        if isinstance(action, argparse.BooleanOptionalAction):
            return flag if value == "True" else "--no-" + flag[2:]
        return f"{flag} {value.strip(chr(39))}"

    def __call__(self, message: str, locate: Callable[[str, int], str], sides: dict[str, str]) -> ValueError:
        """The message as a `UsageError` when it is about an option, else as a data error."""
        side = message.split(":", 1)[0] if ":" in message else ""
        located = re.sub(r"\bexample (\d+)", lambda m: locate(side, int(m.group(1))), message)
        if side in sides and sides[side] != side:
            located = f"{side} (column {sides[side]!r}){located[len(side) :]}"
        self.translated = False
        spoken = self.pattern.sub(self._flag, located)
        return UsageError(spoken) if self.translated and located == message else ValueError(spoken)


def _models(table: Table, args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """{model: (predictions column, scores column)}: one entry per column matching a
    `--predictions` pattern such as 'keywords_*' (the '*' part names the model), else one.
    A pattern's scores follow it ('scores_*' unless --scores says otherwise): one model never
    reads another's scores, and no choice of columns reads the gold lists as predictions."""
    several = "*" in args.predictions
    scores = args.scores or ("scores_*" if several else "scores")
    if not args.predictions:
        raise UsageError("--predictions is empty: name the column of predicted keyword lists")
    if not several:
        models = {"": (args.predictions, scores)}
    elif args.predictions.count("*") > 1 or scores.count("*") > 1:
        raise UsageError("--predictions and --scores take at most one '*' each")
    else:
        pattern = re.compile(re.escape(args.predictions).replace(r"\*", "(.+)") + "$")
        matches = (pattern.match(name) for name in table.columns)
        models = {match.group(1): (match.group(0), scores.replace("*", match.group(1))) for match in matches if match}
        if not models:
            columns = ", ".join(table.columns)
            raise UsageError(f"--predictions {args.predictions!r} matches no column of {table.path.name} ({columns})")
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
    predictions = _take(_column(table, prediction_column, "--predictions"), rows)
    if family == "keyword_diversity":  # no references; self_similarity whenever the semantic extra is there
        if "model" not in options and _semantic_installed():
            options["model"] = DEFAULT_MODEL
        return {"predictions": predictions, "options": options}
    references = _take(_column(table, args.references, "--references"), rows)
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
    keys, or columns streamed from a Parquet file; else the family function."""
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
    return function(*_arguments(family, inputs), **options)


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
    if "review" in table.columns:
        return _take(table.columns["review"], rows)
    if family != "sentiment_appropriateness":
        raise UsageError("--presence needs the review texts: name their column with --texts")
    return None


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


@dataclass
class Evaluation:
    """The results, and with --compare the differences from the base system per subset."""

    results: Results
    comparisons: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    # per (subset, family): the library's arguments and where its examples are in the files
    inputs: dict[tuple[str, str], tuple[dict[str, Any], _Examples]] = field(default_factory=dict)
    # per (subset, family), with --per-example: the family's per-example values
    per_example: dict[tuple[str, str], dict[str, list[Any]]] = field(default_factory=dict)


def _presences(args: argparse.Namespace) -> list[str]:
    return getattr(args, "presence", None) or ["all"]


def _takes_presence(family: str) -> bool:
    return any(option.name == "presence" for option in DECLARATIONS[family].options)


def evaluate_table(table: Table, args: argparse.Namespace, speak: _Speaker | None = None) -> Evaluation:
    """{subset: {family: results}}: one subset per model of a '*' pattern, value of `--by`
    and `--presence` view (or "all"); with `--compare`, each subset's paired comparison
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
        raise UsageError("--id pairs the rows of --compare by --by value: it needs --compare and --by")
    presences = _presences(args)
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
    inputs = evaluation.inputs
    progress = tqdm(runs, desc="evaluating", unit="metric", disable=len(runs) < 2 or n < 1000, leave=False)
    for name, family, subset in progress:
        progress.set_postfix_str(f"{family} {name}")
        examples = _Examples(table, subset.rows, gold)
        with _spoken(speak, args, gold, subset, examples):
            given = _inputs(family, examples, args, subset)
            if getattr(args, "per_example", None) is not None and family != "aspect_sentiment_score":
                options = {**given["options"], "return_per_example": True}
                result = _compute(family, {**given, "options": options})  # per-example values: one process
                evaluation.per_example[name, family] = result.pop("per_example")
            else:
                result = _compute(family, given, getattr(args, "workers", None))
            evaluation.results[name][family] = result
        inputs[name, family] = (given, examples)
    if compare is not None:
        dimension, base = compare
        for name, family, subset in runs:
            if getattr(subset, dimension) == base:
                continue
            base_subset = _Subset(**{**vars(subset), dimension: base})
            base_name = base_subset.name(_takes_presence(family) and len(presences) > 1)
            (a, examples_a), (b, examples_b) = inputs[base_name, family], inputs[name, family]
            with _spoken(speak, args, gold, subset, examples_b):
                _check_pairs(a, b, examples_a, examples_b, (base, getattr(subset, dimension)), args)
                compared = _compare(family, a, b, args)
            evaluation.comparisons.setdefault(name, {})[family] = compared
    return evaluation


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
    speak: _Speaker | None, args: argparse.Namespace, gold: Any, subset: _Subset, examples: _Examples
) -> Iterator[None]:
    """Rewrites a library `ValueError` raised inside it in the CLI's words (`_Speaker`)."""
    try:
        yield
    except UsageError:
        raise
    except ValueError as error:
        if speak is None:
            raise
        sides = {"predictions": subset.columns[0], "scores": subset.columns[1], "texts": args.texts or "review"}
        sides["references"] = args.gold_column if gold is not None else args.references
        sides["prediction_sentiments"] = args.prediction_sentiments or "prediction_sentiments"
        sides["groups"] = args.group or "groups"
        raise speak(str(error), examples.locate, sides) from None


def _compare_dimension(
    args: argparse.Namespace, models: dict[str, tuple[str, str]], by_value: dict[str, list[int]]
) -> tuple[str, str] | None:
    """("model" or "value", the base): --compare names a model of the '*' pattern, else a --by value."""
    if args.compare is None:
        if args.compare_method is not None:
            raise UsageError("--compare-method needs --compare BASE")
        return None
    args.compare_method = args.compare_method or "permutation"
    if "*" in args.predictions:
        dimension, names, what = "model", list(models), f"model of --predictions {args.predictions!r}"
    elif args.by:
        dimension, names, what = "value", list(by_value), f"value of --by {args.by}"
    else:
        raise UsageError("--compare needs systems to compare: --by COLUMN (e.g. model) or --predictions 'keywords_*'")
    if args.compare not in names:
        shown = [name if len(name) <= 40 else name[:37] + "..." for name in names[:10]]
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        raise UsageError(f"--compare {args.compare!r} is not a {what} (there: {', '.join(shown)}{more})")
    if len(names) < 2:
        raise UsageError(f"--compare {args.compare!r}: there is no other {what} to compare with it")
    if args.prediction_sentiments and "sentiment_appropriateness" in (args.metrics or []):
        raise UsageError("--compare cannot use --prediction-sentiments (one column for two systems)")
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
    what = args.by if "*" not in args.predictions else "model"
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
    check_paired_texts(rows_a, rows_b, args.texts or "review", systems, what, column)


def _compare(family: str, a: dict[str, Any], b: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """`compare_systems` on the two systems' inputs (the shared options, references and texts are a's)."""
    from .comparison import compare_systems

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
        return compare_systems(*states, method=args.compare_method)
    return compare_systems(
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


def _cell(value: Any) -> str:
    """A table cell: 4 decimals; "n/a" for a value the metric leaves undefined (None)."""
    if value is None:
        return "n/a"
    return value if isinstance(value, str) else f"{value:.4f}"


def _cells(values: dict[str, Any]) -> dict[str, str]:
    """{key: cell}, a key with an interval as "value [low, high]" (its `_ci_` keys folded in)."""
    cells = {}
    for name, value in values.items():
        stem = re.sub(r"_ci_(low|high)$", "", name)
        if stem != name and stem in values:
            continue
        cells[name] = _cell(value)
        if f"{name}_ci_low" in values:
            cells[name] += f" [{_cell(values[name + '_ci_low'])}, {_cell(values.get(name + '_ci_high'))}]"
    return cells


# Options that never change a value (resources, output shape), that no flag sets (objects)
# or that the rows already name (aspects).
_NOT_SHOWN = {
    option.name
    for declaration in DECLARATIONS.values()
    for option in declaration.options
    if option.resource or option.kind == "object"
} | {RETURN_PER_EXAMPLE.name, "aspects"}
_UNDEFINED_INTERVALS = INTERVAL_OPTIONS - {"confidence_level"}  # the resampling settings


def _option_text(name: str, value: Any) -> str:
    if name == "top_k" and value is None:
        return "top_k all"
    if name == "confidence_level":
        return "no intervals" if value is None else f"{value:g} intervals"
    if isinstance(value, float):
        return f"{name} {value:g}"
    if not isinstance(value, (str, int, bool, type(None))):
        value = getattr(value, "name_or_path", None) or type(value).__name__
    return f"{name} {_shown(value)}"


def options_used(family: str, given: dict[str, Any]) -> dict[str, Any]:
    """The options a family ran with: its defaults, overridden by those given (inputs such as
    texts left out; resampling settings only with intervals)."""
    defaults = DECLARATIONS[family].defaults
    used = {name: given.get(name, value) for name, value in defaults.items() if name not in _NOT_SHOWN}
    if used.get("confidence_level") is None:
        for name in _UNDEFINED_INTERVALS:
            used.pop(name, None)
    return used


def run_details(evaluation: Evaluation) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, dict[str, Any]]]]:
    """Per subset and family: the number of examples (groups, once pooled) and the options used."""
    counts: dict[str, dict[str, int]] = {}
    options: dict[str, dict[str, dict[str, Any]]] = {}
    for (name, family), (given, _) in evaluation.inputs.items():
        counts.setdefault(name, {})[family] = len(given["predictions"])
        options.setdefault(name, {})[family] = options_used(family, given["options"])
    return counts, options


def _footer(
    family: str,
    subsets: list[str],
    counts: dict[str, dict[str, int]] | None,
    options: dict[str, dict[str, dict[str, Any]]] | None,
) -> list[str]:
    """How many examples each row covers, and the options common to every row (those that
    differ, such as a --presence view, are in the row names)."""
    lines = []
    if counts is not None:
        found = [counts.get(subset, {}).get(family) for subset in subsets]
        if None not in found:
            if len(set(found)) == 1:
                lines.append(f"examples per row: {found[0]}")
            else:
                lines.append("examples per row: " + ", ".join(f"{s} {n}" for s, n in zip(subsets, found)))
    if options is not None:
        used = [options.get(subset, {}).get(family, {}) for subset in subsets]
        common = {name: value for name, value in used[0].items() if all(other.get(name) == value for other in used)}
        if common:
            lines.append("options: " + " · ".join(_option_text(name, value) for name, value in common.items()))
    return lines


def legend(family: str, keys: Sequence[str]) -> list[str]:
    """One line per column: its meaning, range and direction, from the family's declaration."""
    found = [(key, output_for(family, key)) for key in keys]
    width = max((len(key) for key, output in found if output is not None), default=0)
    lines = []
    for key, output in found:
        if output is not None:
            direction = "higher is better" if output.higher_is_better else "lower is better"
            lines.append(f"  {key.ljust(width)}  {output.range}, {direction}: {output.meaning}")
    return lines


def format_tables(
    results: Results,
    label: str | dict[str, str],
    counts: dict[str, dict[str, int]] | None = None,
    options: dict[str, dict[str, dict[str, Any]]] | None = None,
    explain: bool = False,
) -> str:
    """One table per metric family: a row per subset, a column per metric (`label`, per family
    where it differs, names the subsets' column); intervals as `value [low, high]`. Under each
    table, with `counts` and `options` (`run_details`): the examples per row and the options
    used; with `explain`, one line per column (meaning, range, whether higher is better)."""
    blocks = []
    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    for family in families:
        rows = [(subset, _cells(by_family[family])) for subset, by_family in results.items() if family in by_family]
        names = list(dict.fromkeys(name for _, cells in rows for name in cells))
        widths = {name: max(len(name), 6, *(len(cells.get(name, "-")) for _, cells in rows)) for name in names}
        title = label if isinstance(label, str) else label.get(family, "")
        width = max(len(title), *(len(subset) for subset, _ in rows))
        lines = [family, "  ".join([title.ljust(width), *(name.rjust(widths[name]) for name in names)])]
        for subset, cells in rows:
            lines.append(
                "  ".join([subset.ljust(width), *(cells.get(name, "-").rjust(widths[name]) for name in names)])
            )
        lines += _footer(family, [subset for subset, _ in rows], counts, options)
        if explain:
            lines += legend(family, names)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_comparisons(
    evaluation: Evaluation, base: str, labels: dict[str, str], method: str, level: float, explain: bool = False
) -> str:
    """Per family, a row per compared subset and key: the base's value, the subset's, their
    difference with its interval and p-value; `*` marks p < 1 - level, explained below. Under
    each table: the paired examples of each subset (when known), and with `explain` the
    meaning and direction of each key (a positive difference is better where higher is)."""
    alpha = round(1 - level, 10)
    blocks = []
    families = list(dict.fromkeys(family for by_family in evaluation.comparisons.values() for family in by_family))
    for family in families:
        compared = [subset for subset, by_family in evaluation.comparisons.items() if family in by_family]
        header = [labels.get(family) or "subset", "metric", "base", "value", "difference", f"{level:.0%} interval"]
        rows = [[*header, "p-value"]]
        for subset in compared:
            for key, result in evaluation.comparisons[subset][family].items():
                interval = f"[{result['difference_ci_low']:+.4f}, {result['difference_ci_high']:+.4f}]"
                mark = " *" if result["p_value"] < alpha else "  "
                rows.append(
                    [subset, key, f"{result['a']:.4f}", f"{result['b']:.4f}", f"{result['difference']:+.4f}",
                     interval, f"{result['p_value']:.4f}{mark}"]
                )  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(header) + 1)]
        lines = [f"{family}: difference from {base} (paired {method} test; base: the value of {base})"]
        for row in rows:
            cells = [cell.ljust(size) if i < 2 else cell.rjust(size) for i, (cell, size) in enumerate(zip(row, widths))]
            lines.append("  ".join(cells).rstrip())
        paired = [(subset, evaluation.inputs.get((subset, family))) for subset in compared]
        if paired and all(found is not None for _, found in paired):
            sizes = [len(found[0]["predictions"]) for _, found in paired]  # type: ignore[index]
            shown = str(sizes[0]) if len(set(sizes)) == 1 else ", ".join(f"{s} {n}" for (s, _), n in zip(paired, sizes))
            lines.append(f"examples paired per row: {shown}")
        if explain:
            lines += legend(family, list(dict.fromkeys(row[1] for row in rows[1:])))
        blocks.append("\n".join(lines))
    note = f"* significant at the {alpha:g} level (p-value < {alpha:g} = 1 - confidence level {level:g})"
    return "\n\n".join(blocks) + "\n\n" + note


def _value_label(value: float) -> str:
    """A bar's label: 4 decimals, or 2 significant digits for values that would print as 0.0000."""
    if math.isnan(value):
        return ""
    return f"{value:.2g}" if 0 < abs(value) < 0.00005 else f"{value:.4f}"


def _number_or_nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def results_figure(results: Results, title: str = "") -> Any:
    """One bar chart per family: a group of bars per metric, a bar per subset, each labelled
    with its value (so a tiny value stays readable) and with error bars where the results have
    intervals (`<key>_ci_low` / `<key>_ci_high`); `title` names the file and the subsets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(family for by_family in results.values() for family in by_family))
    subsets = list(results)
    keys = {  # the bars: every key but the interval bounds
        family: list(dict.fromkeys(name for subset in subsets for name in _cells(results[subset].get(family, {}))))
        for family in families
    }
    bars = max(len(names) for names in keys.values())
    inches = min(max(8.0, 0.35 * bars * len(subsets) + 3), 24.0)
    figure, axes = plt.subplots(len(families), 1, figsize=(inches, 3.4 * len(families)), squeeze=False)
    figure.set_layout_engine("constrained")
    if title:
        figure.suptitle(title)
    for axis, family in zip(axes[:, 0], families):
        names = keys[family]
        width = 0.8 / len(subsets)
        top = 1.0
        for position, subset in enumerate(subsets):
            found = results[subset].get(family, {})
            values = [_number_or_nan(found.get(name)) for name in names]
            highs = [_number_or_nan(found.get(f"{name}_ci_high")) for name in names]
            lows = [_number_or_nan(found.get(f"{name}_ci_low")) for name in names]
            top = max([top, *(value for value in values + highs if not math.isnan(value))])
            errors = None  # error bars from the intervals, where there are some
            if any(not math.isnan(high) for high in highs):
                errors = [[v - low if v == v and low == low else 0.0 for v, low in zip(values, lows)]]
                errors.append([high - v if v == v and high == high else 0.0 for v, high in zip(values, highs)])
            positions = [i + position * width for i in range(len(names))]
            bars = axis.bar(positions, values, width, label=subset, yerr=errors, capsize=3 if errors else 0)
            if len(subsets) <= MAX_LABELLED:  # beyond, the labels pile up above the bars
                rotation = 90 if len(subsets) > 2 else 0
                labels = [_value_label(value) for value in values]
                axis.bar_label(bars, labels, padding=2, fontsize="x-small", rotation=rotation)
        ticks = [name.replace("_", "\n", 1) if len(name) > 10 else name for name in names]  # no overlap
        lower = [(output := output_for(family, name)) is not None and not output.higher_is_better for name in names]
        ticks = [tick + "\n(lower is better)" if flag else tick for tick, flag in zip(ticks, lower)]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], ticks)
        axis.set_ylim(0, top * (1.25 if len(subsets) > 2 else 1.12))
        axis.set_ylabel("value")
        axis.set_title(family)
        if 1 < len(subsets) <= MAX_LABELLED:
            axis.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def plot_results(results: Results, path: Path, title: str = "") -> None:
    """Save `results_figure` (PNG, SVG, PDF, ...: the format of `path`'s extension)."""
    figure = results_figure(results, title)
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=120)
    plt.close(figure)


def _positive_int(value: str) -> int:
    if not re.fullmatch(r"\+?\d+", value.strip()) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return int(value)


def _integer(value: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", value.strip()):
        raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}")
    return int(value)


def _names(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {value!r}")
    return names


def _top_k(value: str) -> int | str | None:
    try:
        if not value.strip():
            raise ValueError(value)
        return parse_top_k(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, 'O' or 'M', got {value!r}") from None


def _number(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}")
    return number


def _declared_options() -> dict[Option, dict[str, Any]]:
    """Every option of the family declarations that has a flag, with its default per family."""
    found: dict[str, tuple[Option, dict[str, Any]]] = {}
    for family in DECLARATIONS.values():
        for option in family.options:
            if option.name not in NO_FLAG and option.kind != "object":
                found.setdefault(option.name, (option, {}))[1][family.name] = family.defaults[option.name]
    if _semantic_installed():  # keyword_diversity then shows self_similarity with the default model
        found["model"][1]["keyword_diversity"] = DEFAULT_MODEL
    return dict(found.values())


def _semantic_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


def _add_flag(group: argparse._ArgumentGroup, option: Option, defaults: dict[str, Any]) -> None:
    """A flag for `option`; absent unless given, so that each family keeps its own default."""
    by_value: dict[str, list[str]] = {}
    for family, value in defaults.items():
        by_value.setdefault(_shown(value), []).append(family)
    if len(by_value) == 1:
        default = next(iter(by_value))
    else:
        default = "; ".join(f"{value} for {', '.join(families)}" for value, families in by_value.items())
    flags = ["--" + option.name.replace("_", "-")]
    meaning = option.meaning if "(default:" in option.meaning else f"{option.meaning} (default: {default})"
    settings: dict[str, Any] = {"default": argparse.SUPPRESS, "help": meaning, "dest": option.name}
    if option.kind == "flag":
        settings["action"] = argparse.BooleanOptionalAction
    else:
        settings["type"] = _option_type(option)
        settings["metavar"] = {"int": "N", "number": "X", "top_k": "K|O|M", "text": "NAME"}.get(option.kind)
        if option.kind == "choice":
            settings["choices"] = [choice for choice in option.choices if choice is not None]
            del settings["type"]
    if option.name == "presence":  # several views side by side: one result row per view
        del settings["choices"]
        settings["type"], settings["metavar"] = _presence_list, "P[,P...]"
        settings["help"] += "; a list such as all,present,absent prints the views side by side (needs --texts)"
    if option.name == "workers":  # sentiment's VADER processes; every other family: states per chunk, merged
        settings["help"] = "processes (at most one per CPU): a state per chunk of rows in each, merged (one process's "
        settings["help"] += "numbers up to the last digits); for "
        settings["help"] += "sentiment_appropriateness, VADER on long texts; semantic families stay in one process"
    if option.name == "confidence_level":  # the short name first: messages say --ci
        flags.insert(0, "--ci")
        settings["help"] += "; the tables print value [low, high], the plot error bars"
    group.add_argument(*flags, **settings)


def _presence_list(value: str) -> list[str]:
    """--presence: one of all, present, absent, or several separated by commas."""
    names = list(dict.fromkeys(_names(value)))
    wrong = [name for name in names if name not in PRESENCES]
    if wrong:
        raise argparse.ArgumentTypeError(f"must be {', '.join(PRESENCES)} or a list of them, got {wrong[0]!r}")
    return names


def _option_type(option: Option) -> Callable[[str], Any]:
    """Parses a flag's text as the option's kind, then runs the option's own check."""
    parse = {"int": _integer, "number": _number, "top_k": _top_k}.get(option.kind, str)

    def convert(text: str) -> Any:
        if option.name == "random_state" and text.lower() == "none":
            return None
        value = parse(text)
        if option.check is not None:
            try:
                option.check(value)
            except ValueError as error:
                raise argparse.ArgumentTypeError(str(error).replace(f"{option.name} ", "", 1)) from None
        return value

    convert.__name__ = option.name
    return convert


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opinion-metrics",
        description=f"Evaluate keyword or aspect-rating predictions. Every metric is defined in {DEFINITIONS_URL}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument(
        "file",
        type=Path,
        help=".jsonl (.ndjson), .json, .csv, .tsv (or .gz), .parquet or a folder of Parquet files (streamed by row "
        "group), .arrow / .feather, or a datasets folder",
    )
    parser.add_argument(
        "--metrics",
        nargs="+",
        choices=[*FAMILIES, "all"],
        metavar="FAMILY",
        help=f"families to compute: {', '.join(FAMILIES)}, or 'all': every keyword family the columns allow "
        "(default: the lexical ones)",
    )
    columns = parser.add_argument_group("columns")
    columns.add_argument(
        "--predictions",
        metavar="COLUMN",
        default="predictions",
        help="predicted keyword lists (default: predictions); a pattern such as 'keywords_*' evaluates "
        "every matching column, one result row per model (the '*' part)",
    )
    columns.add_argument(
        "--references", metavar="COLUMN", default="references", help="gold keyword lists (default: references)"
    )
    columns.add_argument(
        "--scores",
        metavar="COLUMN",
        help="prediction scores (default: scores, if there); 'scores_*' follows --predictions",
    )
    columns.add_argument(
        "--texts", metavar="COLUMN", help="review texts, for sentiment and --presence (default: review, if there)"
    )
    columns.add_argument(
        "--prediction-sentiments",
        metavar="COLUMN",
        help="per-keyword sentiments in [0, 1] for sentiment_appropriateness (never taken from --scores)",
    )
    columns.add_argument(
        "--by", metavar="COLUMN", help="split by this column: one result row per value (e.g. the model)"
    )
    columns.add_argument("--group", metavar="COLUMN", help="pool by this column before evaluating (e.g. the movie)")
    columns.add_argument(
        "--id",
        metavar="COLUMN",
        help="with --compare and --by: pair the systems' rows by this column (default: review_id or id, where there; "
        "else by position)",
    )
    columns.add_argument(
        "--gold", type=Path, metavar="FILE", help="a separate file of gold lists, joined on --gold-key"
    )
    columns.add_argument(
        "--gold-key", metavar="COLUMN", default="movie", help="the join column in both files (default: movie)"
    )
    columns.add_argument(
        "--gold-column", metavar="COLUMN", default="keywords", help="gold lists in --gold (default: keywords)"
    )
    columns.add_argument(
        "--aspects",
        type=_names,
        metavar="A,B,...",
        help=f"aspect columns, separated by commas (default: {', '.join(DEFAULT_ASPECTS)}; or "
        f"{', '.join(VIETNAMESE_COLUMNS)} where those are the columns)",
    )
    columns.add_argument(
        "--prediction-prefix", default="pred_", help="predicted aspect columns: prefix + aspect (default: pred_)"
    )
    options = parser.add_argument_group("metric options (each applies to the families that have it)")
    for option, defaults in _declared_options().items():
        _add_flag(options, option, defaults)
    comparison = parser.add_argument_group("paired comparison")
    comparison.add_argument(
        "--compare",
        metavar="BASE",
        help="compare every other model with BASE (a model of a '*' --predictions pattern, else a --by value): "
        "per key the difference, its --ci interval (default 0.95) and p-value, '*' where significant at the "
        "level 1 - --ci; rows pair by --id (review_id or id, where there), else example i with example i of "
        "BASE (same references and texts); with --output "
        "the JSON holds {results, comparison}",
    )
    comparison.add_argument(
        "--compare-method",
        choices=["permutation", "bootstrap"],
        help="the test: permutation (approximate randomization) or paired bootstrap (default: permutation)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--explain",
        action="store_true",
        help="under each table, one line per column: its meaning, range and whether higher is better",
    )
    output.add_argument("--output", type=Path, metavar="FILE", help="also write the results as JSON")
    output.add_argument(
        "--per-example",
        type=Path,
        metavar="FILE",
        help="also write each example's values with what produced them (matched pairs, cosine similarities, "
        "sentiments) for error analysis: JSON Lines (.jsonl) or CSV (.csv)",
    )
    output.add_argument("--quiet", action="store_true", help="no progress display on stderr (errors are still printed)")
    output.add_argument(
        "--plot", type=Path, metavar="FILE", help="also draw the results: .png, .svg, .pdf, ... (needs matplotlib)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def plot_formats() -> dict[str, str]:
    """The file extensions --plot can write ({"png": "Portable Network Graphics", ...})."""
    import matplotlib  # noqa: F401  (ImportError here when matplotlib is missing)
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def _same_file(a: Path, b: Path) -> bool:
    """`a` and `b` name the same file or folder (after links), or `a` lies inside folder `b`."""
    try:
        if a.exists() and b.exists() and a.samefile(b):
            return True
    except OSError:
        pass
    resolved, folder = a.resolve(), b.resolve()
    return resolved == folder or (b.is_dir() and folder in resolved.parents)


def check_not_input(path: Path, option: str, inputs: Sequence[tuple[Path, str]]) -> None:
    """Fail before any work if `path` is one of the `inputs` ((path, what)), or lies in an input folder."""
    for given, what in inputs:
        if _same_file(path, given):
            raise UsageError(f"{option} {path} is the input {what} {given}; writing there would destroy it")


def check_output(path: Path, option: str) -> None:
    """Fail before any work if `path` cannot be written (a folder, its folder missing or
    read-only). Nothing is created."""
    if str(path) == "-":  # not standard output: the tables go there
        raise UsageError(f"{option} -: give a file name (the tables already go to standard output; /dev/stdout works)")
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"{option} {path}: the folder {path.parent} does not exist")
    target = path.resolve()
    try:
        if path.exists() and not path.is_file():  # /dev/stdout, a pipe: written in place
            if not os.access(path, os.W_OK):
                raise PermissionError(13, "Permission denied")
        else:
            with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"):
                pass
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot write there ({error.strerror})") from None
    if path.is_file() and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: cannot write there (the file is read-only)")


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write(temporary)` to a file in the folder of `path` (of the file it links to), then
    rename it over that file: a write that fails (disk full, an error while drawing) leaves the
    old file whole. Something that is not a file (/dev/stdout, a pipe) is written in place."""
    if path.exists() and not path.is_file():
        write(path)
        return
    target = path.resolve()
    temporary = target.parent / f".{target.name}.{secrets.token_hex(6)}{target.suffix}"
    with open(temporary, "x"):  # a new file's mode as the umask says, like a plain write
        pass
    try:
        write(temporary)
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


PER_EXAMPLE_FORMATS = (".jsonl", ".csv")
# Names of another format than --output's JSON (a table, compressed): refused, not filled with JSON.
OTHER_FORMATS = {".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".arrow", ".feather", ".ipc", ".gz", ".xlsx", ".xls"}


def per_example_records(evaluation: Evaluation) -> Iterator[dict[str, Any]]:
    """Per subset, family and example (as its place in the files): the per-example values and
    the detail of `opinion_metrics.explain` under "detail". The aspect score is corpus-level:
    it has none."""
    from .explain import explain

    for (name, family), (given, examples) in evaluation.inputs.items():
        if family == "aspect_sentiment_score":
            continue
        options = dict(given["options"])
        texts = options.pop("texts", None)
        sentiments = options.pop("prediction_sentiments", None)
        records = explain(
            family,
            given["predictions"],
            given.get("references"),
            scores=given.get("scores"),
            texts=texts,
            prediction_sentiments=sentiments,
            per_example=evaluation.per_example.get((name, family)),
            **options,
        )
        for index, record in enumerate(records):
            values = record.pop("values")
            yield {"subset": name, "family": family, "example": examples.locate("predictions", index), **values,
                   "detail": record}  # fmt: skip


def _flat(value: Any) -> Any:
    """A detail as one CSV cell: pairs as "prediction -> gold (cosine)", keywords with their
    sentiment, lists joined by "; "."""
    if isinstance(value, list):
        return "; ".join(str(_flat(item)) for item in value)
    if isinstance(value, dict):
        if "prediction" in value:
            extra = [f"{value[key]:.4f}" for key in ("similarity", "score") if key in value]
            return f"{value['prediction']} -> {value['reference']}" + (f" ({', '.join(extra)})" if extra else "")
        if "keyword" in value:
            return f"{value['keyword']} ({value['sentiment']:.4f})"
    if isinstance(value, (list, tuple)):
        return " = ".join(map(str, value))
    return value


def write_per_example(records: list[dict[str, Any]], path: Path) -> None:
    """Records of `per_example_records` as JSON Lines, or as CSV (a column per value and per
    detail), by the extension of `path`."""
    with open(path, "w", encoding="utf-8", newline="") as stream:
        if path.suffix.lower() == ".jsonl":
            for record in records:
                stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            return
        rows = []
        for record in records:
            row = {key: value for key, value in record.items() if key != "detail"}
            for key, value in record["detail"].items():
                if key == "repeated":
                    value = ["=".join(group) for group in value]
                row[key] = _flat(value)
            rows.append(row)
        columns = list(dict.fromkeys(key for row in rows for key in row))
        writer = csv.DictWriter(stream, columns)
        writer.writeheader()
        writer.writerows(rows)


def _quiet_third_party() -> None:
    """No progress bars or log lines from the model libraries (weights loading, downloads):
    the CLI's own progress display is the only one on stderr."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in ("transformers", "sentence_transformers", "huggingface_hub", "datasets", "evaluate"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if "huggingface_hub" in sys.modules:  # imported before the settings above: switch them off now
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()


@contextmanager
def _progress_display(quiet: bool) -> Iterator[None]:
    """With `quiet`, nothing on stderr while it runs (progress bars write there when they
    start); errors are reported after it."""
    if not quiet:
        yield
        return
    with open(os.devnull, "w", encoding="utf-8") as sink, redirect_stderr(sink):
        yield


def _printable_anywhere() -> None:
    """A character the console cannot show (an emoji in a model's name on a Windows console) is
    printed as its escape (\\U0001f600) instead of crashing the run."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _check_plot_format(path: Path, formats: dict[str, str]) -> None:
    """Fail before any work if matplotlib cannot write `path`'s format here (.pgf needs LaTeX)."""
    import matplotlib

    extension = path.suffix.lower().lstrip(".")
    if extension not in formats:
        supported = ", ".join(f".{name}" for name in sorted(formats))
        raise UsageError(f"--plot {path}: give a file name ending in one of {supported}")
    texsystem = matplotlib.rcParams["pgf.texsystem"]
    if extension == "pgf" and shutil.which(texsystem) is None:
        raise UsageError(f"--plot {path}: .pgf needs LaTeX ({texsystem}), which is not installed; try .pdf or .svg")


def main(argv: Sequence[str] | None = None) -> int:
    _printable_anywhere()
    parser = build_parser()
    args = parser.parse_args(argv)
    _quiet_third_party()
    try:
        if args.output is not None and args.plot is not None and _same_file(args.output, args.plot):
            raise UsageError(f"--output and --plot name the same file {args.output}; give two files")
        if args.per_example is not None and args.per_example.suffix.lower() not in PER_EXAMPLE_FORMATS:
            raise UsageError(f"--per-example {args.per_example}: give a .jsonl or a .csv file")
        files = [(args.output, "--output"), (args.plot, "--plot"), (args.per_example, "--per-example")]
        named = [path.resolve() for path, _ in files if path is not None]
        if len(set(named)) < len(named):
            raise UsageError("--output, --plot and --per-example name the same file; give one file each")
        if args.plot is not None:
            try:
                formats = plot_formats()
            except ImportError:
                raise UsageError("--plot needs matplotlib: pip install matplotlib") from None
        inputs = [(args.file, "file")] + ([(args.gold, "--gold file")] if args.gold is not None else [])
        for path, option in files:
            if path is not None:
                check_not_input(path, option, inputs)
                check_output(path, option)
        if args.output is not None and args.output.suffix.lower() in OTHER_FORMATS:
            raise UsageError(f"--output {args.output}: the results are written as JSON; name a .json file")
        if args.plot is not None:
            _check_plot_format(args.plot, formats)
        scores = args.scores or ("scores_*" if "*" in args.predictions else "scores")  # as _models reads them
        numbers = [scores, *([args.prediction_sentiments] if args.prediction_sentiments else [])]
        table = read_table(args.file, [args.predictions, args.references], numbers, lazy=True)
        with _progress_display(args.quiet):
            evaluation = evaluate_table(table, args, _Speaker(parser))
            if args.per_example is not None:
                per_example = list(per_example_records(evaluation))
    except (ValueError, ImportError) as error:
        return _report(error)
    results = evaluation.results
    label = "/".join(part for part in ("model" if "*" in args.predictions else "", args.by or "") if part)
    labels = dict.fromkeys(DECLARATIONS, label)
    if len(_presences(args)) > 1:
        labels.update({family: f"{label}/presence".lstrip("/") for family in DECLARATIONS if _takes_presence(family)})
    print(format_tables(results, labels, *run_details(evaluation), explain=args.explain))
    written: dict[str, Any] = results
    if args.compare is not None:
        level = getattr(args, "confidence_level", None) or COMPARE_LEVEL
        print("\n" + format_comparisons(evaluation, args.compare, labels, args.compare_method, level, args.explain))
        comparison = {"base": args.compare, "method": args.compare_method, "confidence_level": level}
        written = {"results": results, "comparison": {**comparison, "differences": evaluation.comparisons}}
    outputs = []  # (path, write, what it wrote)
    if args.output:
        text = json.dumps(written, indent=2) + "\n"
        outputs.append((args.output, lambda path: path.write_text(text, encoding="utf-8"), ""))
    if args.per_example:
        rows = f" ({len(per_example)} rows: one per example, subset and family)"
        outputs.append((args.per_example, lambda path: write_per_example(per_example, path), rows))
    if args.plot:
        names = list(results)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        subsets = f" ({label}: {shown})" if label else ""
        outputs.append((args.plot, lambda path: plot_results(results, path, f"{args.file.name}{subsets}"), ""))
    for target, write, what in outputs:
        try:
            write_atomically(target, write)
        except OSError as error:  # the folder vanished or filled up since the check
            return _report(ValueError(f"cannot write {target}: {error.strerror or error}"))
        except Exception as error:  # matplotlib's own failures while drawing come in many types
            if target is not args.plot:
                raise
            return _report(ValueError(f"cannot draw {target}: {error}"))
        print(("\n" if target is args.output else "") + f"wrote {target}{what}")
    return 0


def _report(error: Exception) -> int:
    """Print one line; exit status 2 for a mistake in the command line, 1 for the data."""
    print(f"opinion-metrics: error: {error}".replace("\n", " "), file=sys.stderr)
    usage = isinstance(error, (UsageError, ImportError)) or getattr(error, "usage", False)
    return 2 if usage else 1


if __name__ == "__main__":
    sys.exit(main())
