"""The systems of a file and their pairing: a system column or columns side by side (a '*'
pattern), --by values, each result's subset (`_Subset`), and the rows of two systems paired
by id or position for --baseline, refused where they are not the same examples.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..io.column_names import closest
from ..io.pairing import Rows, check_paired_texts, id_column, pair_rows, pairing
from ..io.table import Table
from ..stats.significance import Pairs
from .inputs import (
    COMPARE_LEVEL,
    Speak,
    UsageError,
    _column,
    _Examples,
    _labelled_rows,
    _prediction_columns,
    _texts_column,
    side_by_side,
    system_split,
    systems_named,
)


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


def _system_columns(subset: _Subset, args: argparse.Namespace, presence: bool) -> dict[str, str]:
    """The subset as columns of the per-example file: its model (of a '*' pattern), its --by value
    (under --by's column name: model, where that is the system column) and its --presence view."""
    found = {systems_named(args) if system_split(args) else "model": subset.model} if subset.model else {}
    if args.by:
        found[args.by] = subset.value
    return {**found, "presence": subset.presence} if presence else found


def _by_values(table: Table, args: argparse.Namespace) -> dict[str, list[int]]:
    """{value of --by: its rows}."""
    return _labelled_rows(table, args.by, "--by")


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
    flag = getattr(args, "compare_flag", None) or "--baseline"  # as typed: --baseline or --compare
    if side_by_side(args):
        dimension, names, what = "model", list(models), f"system of --predictions {args.predictions!r}"
    elif system_split(args):
        dimension, names, what = "model", list(models), f"system of column {system_split(args)!r}"
    elif args.by and args.by == getattr(args, "system_column", None):
        dimension, names, what = "value", list(by_value), f"system of column {args.by!r}"
    elif args.by:
        dimension, names, what = "value", list(by_value), f"value of --by {args.by}"
    else:
        raise UsageError(
            f"{flag} needs systems to compare: a system column (model, system; or --system COLUMN), "
            "--by COLUMN or --predictions 'keywords_*'"
        )
    if args.compare not in names:
        shown = [name if len(name) <= 40 else name[:37] + "..." for name in names[:10]]
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        near = closest(args.compare, names)
        hint = f"; did you mean {near!r}?" if near is not None else ""
        raise UsageError(f"{flag} {args.compare!r} is not a {what} (there: {', '.join(shown)}{more}){hint}")
    if len(names) < 2:
        raise UsageError(f"{flag} {args.compare!r}: there is no other {what} to compare with it")
    if args.prediction_sentiments and "sentiment_appropriateness" in (args.metrics or []):
        raise UsageError(f"{flag} cannot use --prediction-sentiments (one column for two systems)")
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


def subset_rows(
    table: Table, args: argparse.Namespace, models: list[str], by_value: dict[str, list[int]], base: str | None
) -> dict[tuple[str, str], list[int]]:
    """{(system, --by value): its rows}: with a system column and --by another column
    (`system_split`), each system's rows of each value, none where it has none, and with a `base`
    each value's systems paired with the base's rows there (`pair_rows`); else every system
    (columns side by side, or one) on each value's rows."""
    column = system_split(args)
    if column is None:
        return {(model, value): rows for model in models for value, rows in by_value.items()}
    system_of = table.columns[column]
    found: dict[tuple[str, str], list[int]] = {}
    for value, rows in by_value.items():
        here: dict[str, list[int]] = {}
        for row in rows:
            here.setdefault(str(system_of[row]), []).append(row)
        if base is not None and set(here) != {base}:
            if base not in here:
                raise ValueError(
                    f"cannot compare the systems of {args.by} {value!r} with {base!r}: {base!r} has no row there "
                    f"(systems there: {', '.join(here)}); the systems are compared within each value of --by"
                )
            here = pair_rows(
                {name: Rows(table, rows) for name, rows in here.items()}, base, _id_column(table, args), column
            )
        found.update({(model, value): here[model] for model in models if model in here})
    return found


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
    what = systems_named(args)
    column = None if side_by_side(args) else _id_column(examples_a.table, args)
    count_a, count_b = len(a["predictions"]), len(b["predictions"])
    if count_a != count_b:
        unit = "row" if examples_a.pooled is None else f"{args.group} group"
        raise ValueError(
            f"cannot compare {what} {systems[1]!r} with {systems[0]!r}: {systems[0]!r} has {count_a} "
            f"{unit}{'s' * (count_a != 1)}, {systems[1]!r} has {count_b}; {pairing(column, what)}"
        )
    gold_a, gold_b = a.get("references"), b.get("references")
    # compared value by value: a Parquet or Arrow column (`io.rows.LazyColumn`) equals only itself
    differ = gold_a is not None and gold_b is not None and gold_a is not gold_b
    index = next((i for i, (x, y) in enumerate(zip(gold_a, gold_b)) if x != y), None) if differ else None
    if index is not None:
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
    from ..analysis.compare import compare_systems, compare_systems_with_pairs, pairs_of

    options = dict(a["options"])
    settings = {name: options.pop(name) for name in ("n_resamples", "random_state") if name in options}
    settings["confidence_level"] = options.pop("confidence_level", None) or COMPARE_LEVEL
    if a.get("keys") is not None and options.get("bootstrap") == "poisson":  # pooled groups, keyed by group
        from ..state.metric_state import MetricState

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
