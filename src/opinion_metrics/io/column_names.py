"""Which column of a file holds what, under the names people give them: predicted keywords,
gold keywords, scores, review texts, the system (model) of each row and the example id. The
CLI and the Spaces read files through the same mapping and say which columns they used.

A file holds one system, several in a system column (one row per system and example), or
several side by side in columns sharing a prefix (`keywords_tfidf`, `keywords_yake`: the
pattern `keywords_*`, the '*' part naming the system, with scores in `scores_*`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .table import shortened

ROLES = ("predictions", "references", "scores", "texts", "system", "id")
# Columns of sentiment tuples (gold, then predicted): a file found by them is scored by sentiment_tuple_prf.
GOLD_TUPLES = ("tuples", "quads", "triplets", "gold_tuples", "gold_quads", "gold_triplets")
PREDICTED_TUPLES = ("predicted_tuples", "predicted_quads", "predicted_triplets")
TUPLE_NAMES = frozenset(GOLD_TUPLES + PREDICTED_TUPLES)
# The names looked for, in order of preference (compared without case); the first is the default.
NAMES: dict[str, tuple[str, ...]] = {
    "predictions": ("predictions", "keywords", "predicted", "prediction", "predicted_keywords", "keyphrases")
    + (*PREDICTED_TUPLES, "generated"),
    "references": ("references", "gold", "reference", "gold_keywords", "ground_truth", "labels", "targets")
    + GOLD_TUPLES,
    "scores": ("scores", "score", "confidences", "confidence"),
    "texts": ("texts", "text", "review", "document"),
    "system": ("model", "system"),
    "id": ("review_id", "id"),
}
WHAT = {
    "predictions": "predicted keywords",
    "references": "gold keywords",
    "scores": "scores",
    "texts": "review texts",
    "system": "system",
    "id": "example id",
}
NONE = "none"  # a role given as "none": not read, even where a column has one of its names
# The tuple family's words for the roles of predictions and references.
TUPLE_WHAT = {"predictions": "predicted tuples", "references": "gold tuples"}


def names(role: str, tuples: bool = False) -> tuple[str, ...]:
    """The names `role` is looked for by, in order; for the tuple family (`tuples`), the names of
    columns of tuples first (a file with `targets` of text and `triplets` scores the triplets)."""
    own = {"predictions": PREDICTED_TUPLES, "references": GOLD_TUPLES}.get(role, ()) if tuples else ()
    return tuple(dict.fromkeys((*own, *NAMES[role])))


def _named(columns: Sequence[str], names: Iterable[str]) -> str | None:
    """The first of `names` among `columns`, compared without case."""
    folded = {column.casefold(): column for column in reversed(list(columns))}
    return next((folded[name.casefold()] for name in names if name.casefold() in folded), None)


def _pattern(columns: Sequence[str], names: Iterable[str]) -> str | None:
    """'<name>_*' for the first name with columns `<name>_<system>` (several systems side by side)."""
    for name in names:
        if any(
            column.casefold().startswith(name.casefold() + "_") and len(column) > len(name) + 1 for column in columns
        ):
            prefix = next(column for column in columns if column.casefold().startswith(name.casefold() + "_"))
            return prefix[: len(name) + 1] + "*"
    return None


def find_columns(
    columns: Sequence[str], given: Mapping[str, str | None] | None = None, tuples: bool = False
) -> dict[str, str | None]:
    """{role: column} for every role of ROLES: the column `given` (kept as given: a missing one is
    the caller's error to report; "none": not read), else the first column with one of the role's
    `names` (with `tuples`, for the tuple family: the names of columns of tuples first), else None.
    Predictions found as a pattern (`keywords_*`) take their scores as one too
    (`scores_*`), and no system column is read then (the pattern names the systems)."""
    given = {role: value for role, value in (given or {}).items() if value}
    found: dict[str, str | None] = {}
    for role in ROLES:
        if role in given:
            found[role] = None if given[role] == NONE else given[role]
            continue
        taken = {value for value in found.values() if value}
        candidates = [column for column in columns if column not in taken]
        side_by_side = "*" in (found.get("predictions") or "")
        if role == "scores" and side_by_side:
            found[role] = _pattern(candidates, NAMES["scores"])
        elif role == "system" and side_by_side:
            found[role] = None
        else:
            found[role] = _named(candidates, names(role, tuples))
        if role == "predictions" and found[role] is None:
            found[role] = _pattern(candidates, names("predictions", tuples))
    return found


def described(found: Mapping[str, str | None], given: Mapping[str, str | None] | None = None) -> str:
    """The mapping in short words, the columns given marked: "predictions ← `keywords`, references
    ← `gold`, system ← `model` (given)"."""
    given = given or {}
    parts = []
    for role in ROLES:
        column = found.get(role)
        if column:
            parts.append(f"{role} ← `{column}`" + (" (given)" if given.get(role) else ""))
    return ", ".join(parts)


def _possible(given: Iterable[str | None], roles: Sequence[str]) -> list[str]:
    names = [name for name in given if name]
    for role in roles:
        names += [*NAMES[role], *(f"{name}_*" for name in NAMES[role])]
    return list(dict.fromkeys(names))


def list_columns(given: Iterable[str | None] = ()) -> list[str]:
    """The columns (names or '*' patterns) whose cells a CSV file holds as lists of keywords: those
    `given` (named by the user) and every name predictions and references are looked for by, with
    their `name_*` patterns. The CLI and the Spaces read files with the same ones."""
    return _possible(given, ("predictions", "references"))


def prediction_columns(given: Iterable[str | None] = ()) -> list[str]:
    """The columns (names or '*' patterns) predictions are read from: those `given` and the usual ones."""
    return _possible(given, ("predictions",))


def tuple_columns(
    predictions: Iterable[str | None] = (), references: Iterable[str | None] = (), tuples: bool = False,
    generated: bool = False,
) -> list[str]:  # fmt: skip
    """The columns whose CSV cells hold sentiment tuples (JSON lists): those named as tuples, and
    with `tuples` (the tuple family asked for) every column of predictions and references; with
    `generated` (text read by `format`), no column of predictions."""
    names = [] if generated else [*PREDICTED_TUPLES, *(prediction_columns(predictions) if tuples else [])]
    names += [*GOLD_TUPLES, *(_possible(references, ("references",)) if tuples else [])]
    return list(dict.fromkeys(names))


def number_columns(given: Iterable[str | None] = ()) -> list[str]:
    """The columns whose CSV cells hold lists of numbers: those `given` and the scores' names."""
    return _possible(given, ("scores",))


def closest(name: str, columns: Iterable[str]) -> str | None:
    """The column a mistyped `name` most likely meant (same letters in another case, or close)."""
    columns = list(columns)
    same = [column for column in columns if column.casefold() == name.casefold()]
    close = same or difflib.get_close_matches(name, columns, n=1, cutoff=0.6)
    return close[0] if close else None


def first_text(column: Sequence[Any]) -> int | None:
    """The first row of a column of keyword lists that holds a text instead (a JSON string, a CSV cell
    read as text, an Arrow or Parquet column of strings: in a folder, one file's), or None."""
    if callable(getattr(column, "text_row", None)):  # `rows.LazyColumn`: by the type each file gives it
        return column.text_row()
    if not isinstance(column, list):
        return None
    return next((row for row, value in enumerate(column) if isinstance(value, str)), None)


def text_cell_message(column: str, value: str, where: str) -> str:
    """Why a text in a column of keyword lists is refused, and the fix."""
    return (
        f"column {column!r}, {where}: {shortened(value)!r} is a text, not a list of keywords; write the keywords "
        'as a list (JSON: ["a", "b"]), or in a CSV file as a; b or as a list, as pandas\' to_csv writes it'
    )
