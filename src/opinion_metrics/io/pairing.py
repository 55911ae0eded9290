"""Rows of several systems paired as the same examples: by an id column or by position, and
rating rows of the aspect family's columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .table import Table


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
